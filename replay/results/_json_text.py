"""JSON text as ``json.dumps(value, indent=2)`` writes it, written out in pieces as it goes.

``replay report --json`` of a 100,000-trial run is tens of megabytes: the standard
library's indenting encoder is its slow, pure-Python one, and holds the whole text at the
end. This writes the same bytes (ASCII, ``": "`` and ``","`` as separators, two spaces a
level) to ``write`` in pieces of some hundred kilobytes, and takes an iterator where a list
goes, so a long list need not be built first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

_string = json.encoder.encode_basestring_ascii  # (C, where it is built)
_PIECES = 4096
"""Pieces gathered before they are written."""
_SPECIAL = {float("inf"): "Infinity", float("-inf"): "-Infinity"}


class Rendered:
    """A list whose items are JSON text already: ``items(pad)`` gives each at the indent ``pad``.

    (``report --json`` writes a run's trials from their rows, not as data.)
    """

    def __init__(self, items: Callable[[str], Iterable[str]]) -> None:
        self.items = items


class Text:
    """A value whose JSON text is given: ``render(pad)`` gives it at the indent ``pad``."""

    def __init__(self, render: Callable[[str], str]) -> None:
        self.render = render


def json_text(value: Any, pad: str) -> str:
    """``value``'s JSON text as ``write_json`` writes it at the indent ``pad``."""
    pieces: list[str] = []
    _Writer(pieces.append).value(value, pad)
    return "".join(pieces)


def write_json(value: Any, write: Callable[[str], object]) -> None:
    """Write ``value`` as ``json.dumps(value, indent=2)`` would (iterators as lists).

    Raises:
        TypeError: A value JSON cannot hold.
    """
    _Writer(write).value(value, "\n")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    return _SPECIAL.get(value) or float.__repr__(value)


_SCALARS: dict[type, Callable[[Any], str]] = {
    str: _string,
    int: int.__repr__,
    float: _float,
    bool: lambda value: "true" if value else "false",
    type(None): lambda value: "null",
}
"""How a value of each plain type is written (a subclass, such as an enum, goes the long way)."""


class _Writer:
    """Pieces of text gathered, and written every ``_PIECES``; keys written once each."""

    def __init__(self, write: Callable[[str], object]) -> None:
        self.write = write
        self.out: list[str] = []
        self.keys: dict[str, str] = {}

    def value(self, value: Any, pad: str) -> None:
        """Write a whole value at the indent ``pad`` (a newline and its spaces)."""
        self._value(value, pad)
        self.write("".join(self.out))
        self.out.clear()

    def _value(self, value: Any, pad: str) -> None:
        scalar = _SCALARS.get(type(value))
        if scalar is not None:
            self.out.append(scalar(value))
        elif isinstance(value, str):
            self.out.append(_string(value))
        elif value is True or value is False:
            self.out.append("true" if value else "false")
        elif isinstance(value, int):
            self.out.append(int.__repr__(value))
        elif isinstance(value, float):
            self.out.append(_float(value))
        elif isinstance(value, Mapping):
            self._items(value, pad)
        elif isinstance(value, (list, tuple, Iterator)):
            self._list(value, pad)
        elif isinstance(value, Rendered):
            self._rendered(value, pad)
        elif isinstance(value, Text):
            self.out.append(value.render(pad))
        else:
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    def _key(self, key: Any) -> str:
        if type(key) is not str:  # (1 and True are one dict key, not one JSON key)
            return _key(key) + ": "
        known = self.keys.get(key)
        if known is None:
            known = self.keys[key] = _string(key) + ": "
        return known

    def _items(self, value: Mapping[Any, Any], pad: str) -> None:
        if not value:
            self.out.append("{}")
            return
        out, inner = self.out, pad + "  "
        head, comma = "{" + inner, "," + inner
        for key, item in value.items():
            scalar = _SCALARS.get(type(item))
            if scalar is not None:
                out.append(head + self._key(key) + scalar(item))
            else:
                out.append(head + self._key(key))
                self._value(item, inner)
            head = comma
        out.append(pad + "}")

    def _list(self, value: Iterable[Any], pad: str) -> None:
        out, inner = self.out, pad + "  "
        head, comma = "[" + inner, "," + inner
        for item in value:
            scalar = _SCALARS.get(type(item))
            if scalar is not None:
                out.append(head + scalar(item))
            else:
                out.append(head)
                self._value(item, inner)
                if len(out) >= _PIECES:
                    self.write("".join(out))
                    out.clear()
            head = comma
        out.append("[]" if head[0] == "[" else pad + "]")

    def _rendered(self, value: Rendered, pad: str) -> None:
        out, inner = self.out, pad + "  "
        head, comma = "[" + inner, "," + inner
        for text in value.items(inner):
            out.append(head + text)
            head = comma
            if len(out) >= _PIECES:
                self.write("".join(out))
                out.clear()
        out.append("[]" if head[0] == "[" else pad + "]")


def scalar_text(value: Any) -> str:
    """A JSON scalar (a string, number, bool or None) as ``json.dumps`` writes it."""
    scalar = _SCALARS.get(type(value))
    if scalar is None:
        raise TypeError(f"Object of type {type(value).__name__} is not a JSON scalar here")
    return scalar(value)


def string_text(value: str) -> str:
    """A string as ``json.dumps`` writes it."""
    return _string(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return _string(key)
    if key is True or key is False or key is None:
        return _string(json.dumps(key))
    if isinstance(key, int):
        return _string(int.__repr__(key))
    if isinstance(key, float):
        return _string(_float(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
