"""Run pins: how two runs differ, and whether they may still be compared."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VARIABLE_PINS = ("agent", "model", "settings", "llm")
"""Pins a comparison may vary: the variable under test (one, unless --vary names more)."""

NOTED_PINS = ("isolation",)
"""Pins that are recorded and said when they differ, but do not keep two runs from being
compared unless ``strict_pins`` (installing an extra turns ``--isolation auto`` walls on:
the runs still measure the same agent)."""


_V2 = "v2:"
"""How a version 2 fixture hash starts (``recorder.world_hash``); a version 1 one is 16 hex
digits."""


def _rehashed(x: Any, y: Any) -> bool:
    """Fixture pins (by case) that differ only where one side's hash is of another version.

    Decided: such runs are not compared (the fixture may have changed too, and no hash
    says); the refusal says how to compare them.
    """
    if not isinstance(x, dict) or not isinstance(y, dict) or x.keys() != y.keys():
        return False
    return all(
        x[k] == y[k]
        or (
            isinstance(x[k], str)
            and isinstance(y[k], str)
            and x[k].startswith(_V2) != y[k].startswith(_V2)
        )
        for k in x
    )


def pin_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, str]:
    """Pins whose values differ, each with a short description of how."""
    out = {}
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name), b.get(name)
        if x == y:
            continue
        if isinstance(x, dict) and isinstance(y, dict):
            keys = [k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
            out[name] = ", ".join(f"{k}: {x.get(k)!r} -> {y.get(k)!r}" for k in keys)
        else:
            out[name] = f"{x!r} -> {y!r}"
    return out


def comparable(
    a: Mapping[str, Any], b: Mapping[str, Any], vary: tuple[str, ...], strict: bool
) -> dict[str, str] | str:
    """The noted pins ``a`` and ``b`` differ in, or why the runs cannot be compared.

    They may differ in the variable under test (``vary``; by default any one of
    ``VARIABLE_PINS``), and, unless ``strict``, in ``NOTED_PINS`` (returned, to say).
    """
    differing = pin_differences(a, b)
    allowed = set(vary) if vary else set(VARIABLE_PINS)
    if "fixtures" in differing and _rehashed(a.get("fixtures"), b.get("fixtures")):
        differing["fixtures"] = (
            "one run pins them by the former fixture hash (v1), which this version's (v2) "
            "cannot be checked against: run the baseline again with this version"
        )
    noted = {} if strict else {k: v for k, v in differing.items() if k in NOTED_PINS}
    beyond = {k: v for k, v in differing.items() if k not in allowed and k not in noted}
    varied = [k for k in differing if k in allowed]
    if beyond or (not vary and len(varied) > 1):
        what = beyond or {k: differing[k] for k in varied}
        detail = "; ".join(f"{k} ({v})" for k, v in what.items())
        return (
            f"differ in more than the variable under test: {detail}; pass --vary for each "
            "pin meant to differ"
        )
    return noted
