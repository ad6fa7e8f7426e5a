"""Hostile case files and assertions: a one-line CaseFileError, never a traceback or a stall."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay import AssertionSyntaxError, CaseFileError, load_case
from replay.cases._yaml import _BoundedLoader, _FastLoader, load_yaml
from replay.graders import Assertion
from tests.helpers import REPO, replay

SHOP = REPO / "examples" / "shop"
CASE_TEXT = (SHOP / "cases" / "refund-4812.yaml").read_text()


def case_file(directory: Path, text: str) -> Path:
    shutil.copy(SHOP / "fixture.sql", directory / "fixture.sql")
    path = directory / "case.yaml"
    path.write_text(text.replace("../fixture.sql", "fixture.sql"))
    return path


def with_assertion(directory: Path, source: str) -> Path:
    text = CASE_TEXT.replace("  - no_side_effects\n", f"  - no_side_effects\n  - {source!r}\n")
    return case_file(directory, text)


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("a." * 100_000 + "a", "longer than 100,000 characters"),
        ("-" * 100_000 + "1", "longer than 100,000 characters"),
        ("not " * 100_000 + "x", "longer than 100,000 characters"),
        ("not " * 5_000 + "x", "nested more than 100 deep"),
        ("-" * 20_000 + "1", "nested more than 100 deep"),
        ("a." * 20_000 + "a", "nested more than 100 deep"),
        ("1" + "+1" * 30_000, "nested more than 100 deep"),
    ],
)
def test_huge_or_deep_assertions_are_a_case_file_error_naming_the_column(
    tmp_path: Path, source: str, says: str
) -> None:
    path = with_assertion(tmp_path, source)
    with pytest.raises(CaseFileError, match=says) as caught:
        load_case(path)
    assert caught.value.field == "assert.6"
    code, _, err = replay(
        "grade", str(REPO / "cassettes" / "refund-4812.cassette"), "--case", str(path)
    )
    assert code == 2 and len(err.strip().splitlines()) == 1, err


def test_a_thousand_terms_validate_once_and_check_alike() -> None:
    source = " and ".join(f"refunds.count(order_id={i}) == 0" for i in range(1000))
    parsed = Assertion(source)
    # Each term's source text is found once, when parsed (it was a scan per node per trial).
    assert parsed._segments[id(parsed._tree.values[999])] == "refunds.count(order_id=999) == 0"


_TOKENS = st.sampled_from(
    [
        "a",
        ".",
        "(",
        ")",
        "[",
        "]",
        "-",
        "not ",
        " and ",
        " or ",
        "==",
        "1",
        '"x"',
        "contains",
        " in ",
        ",",
        "=",
        "approx",
        "orders",
        "count",
        "\n",
        "\\",
        "'",
        "1e999",
        "*",
        "lambda",
        ":",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TOKENS, max_size=60).map("".join))
def test_any_assertion_text_parses_or_is_a_syntax_error(source: str) -> None:
    with contextlib.suppress(AssertionSyntaxError):
        Assertion(source)


BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [
        f"{x}: &{x} [{','.join([f'*{y}'] * 9)}]"
        for x, y in zip("bcdefghi", "abcdefgh", strict=True)
    ]
)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (CASE_TEXT + "tags: &t [x]\n" + BOMB.replace("a: &a", "zz: &a") + "\n", "aliases expanded"),
        (CASE_TEXT + "extra: " + "[" * 20_000 + "]" * 20_000 + "\n", "nested more than 100 deep"),
        (
            CASE_TEXT + "".join(" " * i + f"k{i}:\n" for i in range(2_000)),
            "nested more than 100 deep",
        ),
        (
            CASE_TEXT + "x: &x 1\n" + "".join(f"y{i}: *x\n" for i in range(200)),
            "more than 100 aliases",
        ),
    ],
)
def test_alias_bombs_and_deep_yaml_are_refused_in_one_line(
    tmp_path: Path, text: str, says: str
) -> None:
    path = case_file(tmp_path, text)
    with pytest.raises(CaseFileError, match=says):
        load_case(path)
    code, _, err = replay("check-cases", str(path), "--tools", "examples.shop:make_tools")
    assert code == 2 and len(err.strip().splitlines()) == 1 and says in err, err


EDITS = st.lists(
    st.tuples(
        st.integers(0, len(CASE_TEXT)),
        st.integers(0, 30),
        st.sampled_from(
            [
                "&a ",
                "*a",
                "[",
                "]",
                "{",
                "}",
                ":",
                "- ",
                "\n  ",
                "!!python/object:os.system ",
                "'",
                '"',
                "\t",
                "? ",
                "|",
                ">",
                "%YAML 1.1\n",
                "---\n",
                "\x00",
                "1e999",
                "&b [*a, *a]",
            ]
        ),
    ),
    max_size=6,
)
"""Edits of the example case: (where, how much to cut, what to put there)."""


def _mangled(edits: list[tuple[int, int, str]]) -> str:
    text = CASE_TEXT
    for at, cut, insert in edits:
        text = text[:at] + insert + text[at + cut :]
    return text


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(EDITS)
def test_any_mangled_case_file_loads_or_is_a_case_file_error(
    tmp_path: Path, edits: list[tuple[int, int, str]]
) -> None:
    path = case_file(tmp_path, _mangled(edits))
    with contextlib.suppress(CaseFileError):
        load_case(path)


def _parsed(loader: type[Any], text: str) -> Any:
    try:
        return load_yaml(text, loader)
    except yaml.YAMLError as e:
        return "refused" if "refused" in str(getattr(e, "problem", "")) else "not YAML"


def _alike(text: str) -> None:
    fast, slow = _parsed(_FastLoader, text), _parsed(_BoundedLoader, text)
    if fast not in ("refused", "not YAML") and slow not in ("refused", "not YAML"):
        assert fast == slow  # (the same data)
    # Never data on one side and refused on the other. (Where one says "not YAML" the other
    # may read it: libyaml, YAML's reference parser, takes a tab inside a plain scalar.)
    sides = [str(side) if side in ("refused", "not YAML") else "data" for side in (fast, slow)]
    assert "refused" not in sides or "data" not in sides


@settings(max_examples=150, deadline=None)
@given(EDITS)
def test_libyaml_and_pure_python_yaml_read_any_case_file_alike(
    edits: list[tuple[int, int, str]],
) -> None:
    """Case files are scanned by libyaml (C) where PyYAML has it; the bounds are the
    composer's, so either way a text gives the same data, or is refused."""
    text = _mangled(edits)
    _alike(text)
    _alike(text + "\n" + BOMB.replace("a: &a", "zz: &a") + "\n")


@pytest.mark.parametrize(
    "text", ["[" * 2_000 + "]" * 2_000, "".join(f"y{i}: [\n" for i in range(150))]
)
def test_libyaml_and_pure_python_yaml_refuse_deep_nesting_alike(text: str) -> None:
    assert _parsed(_FastLoader, text) == _parsed(_BoundedLoader, text) == "refused"
