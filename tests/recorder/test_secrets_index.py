"""Secrets scrub as one alternation of every secret did, at a cost that does not grow with them."""

from __future__ import annotations

import re
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder import _secrets
from recorder._secrets import PLACEHOLDER, Secrets


def _reference(secrets: Secrets, text: str) -> str:
    """The scrub before the index: one alternation of every value, the longest first."""
    ordered = sorted(secrets.values(), key=len, reverse=True)
    if not ordered:
        return text
    return re.compile("|".join(re.escape(v) for v in ordered)).sub(PLACEHOLDER, text)


# A small alphabet so that secrets overlap, nest and share pieces with the text.
_chars = st.sampled_from('ab:/ "%\\é')
_secret = st.text(_chars, min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(_secret, max_size=6), st.lists(_secret, max_size=6), st.integers(1, 5))
def test_scrub_matches_one_alternation(values: list[str], parts: list[str], cuts: int) -> None:
    secrets = Secrets(values)
    text = "".join(parts + values[:2] + parts)  # the secrets themselves, between other text
    assert secrets.scrub(text) == _reference(secrets, text)
    data = text.encode()
    assert secrets.scrub_bytes(data) == _reference(secrets, text).encode()
    step = max(1, len(data) // cuts)
    chunks = [data[i : i + step] for i in range(0, len(data), step)]
    scrubbed = secrets.scrub_chunks(chunks)
    assert len(scrubbed) == len(chunks)
    assert b"".join(scrubbed) == _reference(secrets, text).encode()


def test_every_length_is_found_at_every_offset() -> None:
    """A secret of each length from MIN_SECRET on is found wherever it starts."""
    for length in range(8, 80):
        value = "".join(chr(0x41 + (i * 7) % 26) for i in range(length))
        secrets = Secrets([value])
        for offset in range(40):
            text = "-" * offset + value + "+"
            assert secrets.scrub(text) == "-" * offset + PLACEHOLDER + "+", (length, offset)
            assert secrets.scrub_bytes(text.encode()) == text.replace(value, PLACEHOLDER).encode()


def test_a_long_text_is_cut_in_turns_and_a_secret_across_a_turn_is_found() -> None:
    """Texts of ASCII or bytes are cut into blocks in C, at most ``_CUT_MOST`` a turn."""
    for value in ("SHORTKEY", "x" * 20 + "LONGSECRET" * 4):  # (blocks of 4, and of 32)
        width = _secrets._width(len(value))
        turn = _secrets._CUT_MOST * width
        secrets = Secrets([value])
        for at in (turn - len(value), turn - 3, turn, 3 * turn + 1, 5 * turn - len(value) - 1):
            text = "." * at + value + "." * (5 * turn - at - len(value) + 7)
            assert secrets.scrub(text).count(PLACEHOLDER) == 1, (value, at)
            assert secrets.scrub_bytes(text.encode()).count(PLACEHOLDER.encode()) == 1
            latin = "é" + text[1:]  # (not ASCII: the text cut by its pattern instead)
            assert secrets.scrub(latin).count(PLACEHOLDER) == (1 if at > 0 else 0)


def test_a_scrub_builds_its_pattern_from_the_secrets_its_text_holds_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A recording learns a cookie per response: thousands of secrets, each scrub still cheap.

    One alternation of 3,000 cookie-like values took ~90 ms to search 5 KB (and was
    compiled again after each new one); the index compiles nothing for a text that
    holds none, and for one that holds some, a pattern of those alone. (How fast it
    is: ``python -m bench.record_overhead``.)
    """
    built: list[frozenset[str]] = []
    real = _secrets._text_alternation

    def counted(values: frozenset[str]) -> re.Pattern[str]:
        built.append(values)
        return real(values)

    monkeypatch.setattr(_secrets, "_text_alternation", counted)
    text = ("The quick brown fox jumps over the lazy dog; order 12345 shipped. " * 80)[:5000]
    cookies = [f"cookie-{i:06d}-Q7f2kLmN9pXvR4tYz8WcB1dH6jE3sA0uG5iO" for i in range(3000)]
    many = Secrets(cookies)
    for i in range(1000):  # a new secret each time, none in the text: nothing is built
        many.add(f"fresh-cookie-{i:06d}-abcdefghijklmnop")
        assert many.scrub(text) == text
    assert built == []
    holding = f"{text[:100]} {cookies[1717]} {text[100:]}"
    assert many.scrub(holding) == f"{text[:100]} {PLACEHOLDER} {text[100:]}"
    assert built == [frozenset({cookies[1717]})]


def test_threads_adding_and_scrubbing() -> None:
    """Trials run in threads: scrubs while others add never fail and miss nothing added before."""
    secrets = Secrets()
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(300):
                value = f"thread{n}-secret-{i:05d}"
                secrets.add(value)
                assert secrets.scrub(f"x {value} y") == f"x {PLACEHOLDER} y"
                assert secrets.scrub_bytes(f"<{value}>".encode()) == f"<{PLACEHOLDER}>".encode()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(secrets.values()) >= 6 * 300
