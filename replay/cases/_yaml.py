"""Reading a case file's YAML with bounds: its size before parsing, then nesting and aliases.

A case file comes from anyone (an import, a pull request): a huge one or an alias bomb
is refused with a line saying which bound it broke, before it costs time or memory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

MAX_CASE_BYTES = 10 * 1024 * 1024
"""Bytes a case file may hold (10 MiB); a larger one is refused before it is parsed."""
MAX_YAML_DEPTH = 100
"""Levels a case file may nest."""
MAX_YAML_ALIASES = 100
"""Aliases (``*name``) a case file may use."""
MAX_YAML_NODES = 100_000
"""Nodes a case file may expand to, every alias counted as what it stands for."""


class CaseTooLarge(OSError):
    """A case file holds more than ``MAX_CASE_BYTES`` (``load_case`` says so in one line)."""


class _Bounds(Composer):
    """A composer that refuses alias bombs and deep nesting before building them."""

    if TYPE_CHECKING:  # (a parser's, mixed in with it)

        def check_event(self, *choices: Any) -> Any: ...
        def peek_event(self) -> Any: ...

    def _start(self) -> None:
        self._depth = 0
        self._aliases = 0
        self._nodes = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise self._refuse(f"more than {MAX_YAML_ALIASES} aliases")
            node = super().compose_node(parent, index)
            self._count(self._sizes.get(id(node), 1))
            return node
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            raise self._refuse(f"nested more than {MAX_YAML_DEPTH} deep")
        before = self._nodes
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._count(1)
        self._sizes[id(node)] = self._nodes - before
        return node

    def _count(self, n: int) -> None:
        self._nodes += n
        if self._nodes > MAX_YAML_NODES:
            raise self._refuse(f"more than {MAX_YAML_NODES:,} values (aliases expanded)")

    def _refuse(self, what: str) -> yaml.YAMLError:
        mark = self.peek_event().start_mark
        return yaml.MarkedYAMLError(problem=f"refused: {what}", problem_mark=mark)


class _BoundedLoader(_Bounds, yaml.SafeLoader):
    """``yaml.SafeLoader`` with the bounds: all in Python (where libyaml is missing)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._start()


if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _FastLoader(_Bounds, CParser, SafeConstructor, Resolver):
        """The same, its text scanned and parsed by libyaml (C: four times as fast).

        The nodes are still composed here, so the bounds hold before anything is built.
        """

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            Composer.__init__(self)
            self._start()

    _Loader: type[_BoundedLoader] | type[_FastLoader] = _FastLoader
else:  # pragma: no cover (libyaml is in PyYAML's wheels)
    _Loader = _BoundedLoader


def read_bounded(path: Path) -> str:
    """The text of ``path``, read only if it holds at most ``MAX_CASE_BYTES``.

    At most one byte more than the bound is read, whatever the file's size
    (a pipe or a growing file included).

    Raises:
        CaseTooLarge: The file is larger.
        OSError, UnicodeDecodeError: It cannot be read, or is not UTF-8.
    """
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size  # a regular file's: refused before any read
        raw = b"" if size > MAX_CASE_BYTES else f.read(MAX_CASE_BYTES + 1)
    if size > MAX_CASE_BYTES or len(raw) > MAX_CASE_BYTES:
        raise CaseTooLarge(
            f"larger than {MAX_CASE_BYTES // (1024 * 1024)} MiB ({MAX_CASE_BYTES:,} bytes): "
            "refused unread (a case file is an instruction, a fixture and assertions)"
        )
    return raw.decode("utf-8")


def load_yaml(text: str, loader_type: type[_BoundedLoader | _FastLoader] | None = None) -> Any:
    """``text`` parsed as YAML, with the bounds on nesting, aliases and values."""
    loader = (loader_type or _Loader)(text)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        if "maximum nesting depth" not in str(e.problem):
            raise
        # libyaml's own bound (1,000 levels, met while scanning ahead): ours, said as ours.
        problem = f"refused: nested more than {MAX_YAML_DEPTH} deep"
        raise yaml.MarkedYAMLError(problem=problem, problem_mark=e.problem_mark) from None
    finally:
        loader.dispose()
