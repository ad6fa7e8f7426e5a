"""``recorder.load_json``: ``json.loads`` within the limits, whichever way it checks them.

It walks the parsed value only where the text could break a limit; these hold it to the
plain rule (parse, then walk everything) at the limits' edges and on seeded random JSON.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from recorder import load_json
from recorder._bounds import MAX_DEPTH, problem


def plainly(text: str | bytes) -> tuple[str, Any]:
    """The rule without shortcuts: ("ok", value) or ("refused", "")."""

    def refuse(name: str) -> Any:
        raise ValueError(name)

    def finite(number: str) -> float:
        value = float(number)
        if value in (float("inf"), float("-inf")):
            raise ValueError(number)
        return value

    try:
        value = json.loads(text, parse_constant=refuse, parse_float=finite)
    except (ValueError, RecursionError):
        return "refused", ""
    return ("refused", "") if problem(value) is not None else ("ok", value)


def outcome(text: str | bytes) -> tuple[str, Any]:
    try:
        return "ok", load_json(text)
    except ValueError:
        return "refused", ""


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


EDGES = [
    nested(MAX_DEPTH),
    nested(MAX_DEPTH + 1),
    '{"a": ' * MAX_DEPTH + "1" + "}" * MAX_DEPTH,
    '{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1),
    "[" + ", ".join(["[]"] * 300) + "]",  # many brackets, shallow
    '["' + "[" * 500 + '"]',  # brackets in a string
    str(2**63 - 1),
    str(2**63),
    str(-(2**63)),
    str(-(2**63) - 1),
    f'{{"usage": {{"tokens": {2**64 + 5}}}}}',
    '"12345678901234567890123"',  # 19 digits and more, in a string
    "1.00000000000000000000001",
    "NaN",
    "[Infinity]",
    "1e999",
    "-1e999",
    '{"x": 1e308}',
    "\ufeff{}",
    "",
    "{",
]


@pytest.mark.parametrize("text", EDGES, ids=range(len(EDGES)))
def test_at_the_limits_it_decides_as_the_plain_rule(text: str) -> None:
    assert outcome(text) == plainly(text)
    assert outcome(text.encode()) == plainly(text.encode())


def test_it_refuses_what_the_limits_refuse() -> None:
    refused = {
        nested(MAX_DEPTH + 1): "nested more than",
        str(2**63): "fit in 64 bits",
        "NaN": "not a JSON number",
        "1e999": "does not fit in a float",
    }
    for text, said in refused.items():
        with pytest.raises(ValueError, match=said):
            load_json(text)
    assert load_json(nested(MAX_DEPTH)) is not None
    assert load_json(str(-(2**63))) == -(2**63)


def test_bytes_in_any_json_encoding_parse_as_json_loads_parses_them() -> None:
    for encoding in ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32"):
        data = '{"reply": "d\u00e9j\u00e0 \U0001f600"}'.encode(encoding)
        assert load_json(data) == json.loads(data)


def _random_json(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth <= 0 or roll < 0.3:
        return rng.choice(
            [
                str(rng.choice([0, 7, 2**62, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**25])),
                json.dumps(rng.choice(["a", "[[[", "9" * 20, "{", ""])),
                rng.choice(["true", "null", "1.5", "1e999", "NaN"]),
            ]
        )
    items = [_random_json(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    if roll < 0.65:
        return "[" + ", ".join(items) + "]"
    return "{" + ", ".join(f'"k{n}": {item}' for n, item in enumerate(items)) + "}"


def _spine(rng: random.Random, depth: int) -> str:
    """JSON nested exactly ``depth`` deep (or less: where a scalar ends it early), shallow
    values beside each level."""
    if depth <= 0:
        return _random_json(rng, 0)
    items = [_spine(rng, depth - 1), *(_random_json(rng, 2) for _ in range(rng.randint(0, 1)))]
    rng.shuffle(items)
    if rng.random() < 0.5:
        return "[" + ", ".join(items) + "]"
    return "{" + ", ".join(f'"k{n}": {item}' for n, item in enumerate(items)) + "}"


def test_on_seeded_random_json_it_decides_as_the_plain_rule() -> None:
    rng = random.Random(32)
    decided = {"ok": 0, "refused": 0}
    for n in range(2000):
        if n % 4:
            text = _random_json(rng, rng.choice([2, 4, 6]))
        else:
            text = _spine(rng, rng.choice([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1]))
        expected = plainly(text)
        assert outcome(text) == expected, text[:200]
        decided[expected[0]] += 1
    assert min(decided.values()) > 300  # both ways, many times
