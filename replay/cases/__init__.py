"""Cases: the case file's model, incidents promoted to cases, the reference solution run.

Also the rules every stage above keeps for what it names and writes: names are
names (``check_name``), paths made from them stay in their folder (``inside``),
files are written whole (``write_whole``, ``replacing``).

Private: use what ``replay`` exports.

Each name is imported when first asked for: the store's records need ``Suite`` and
``Expects``, not the case model (pydantic, YAML).
"""

import typing as _typing

from ..plugins import lazy_face as _lazy_face

if _typing.TYPE_CHECKING:
    from ._case import Case, CaseFileError, Scoring, ToolCallSpec, load_case
    from ._files import replacing, sweep_parts, write_whole
    from ._kinds import Expects, Suite
    from ._names import NAME_MAX_BYTES, NAME_RULE, check_name, inside, name_problem
    from ._promote import Promoted, promote
    from ._solution import reference_for
    from ._yaml import MAX_CASE_BYTES, read_bounded

_EXPORTS = {
    "Case": "._case",
    "CaseFileError": "._case",
    "Scoring": "._case",
    "ToolCallSpec": "._case",
    "load_case": "._case",
    "replacing": "._files",
    "sweep_parts": "._files",
    "write_whole": "._files",
    "Expects": "._kinds",
    "Suite": "._kinds",
    "NAME_MAX_BYTES": "._names",
    "NAME_RULE": "._names",
    "check_name": "._names",
    "inside": "._names",
    "name_problem": "._names",
    "Promoted": "._promote",
    "promote": "._promote",
    "reference_for": "._solution",
    "MAX_CASE_BYTES": "._yaml",
    "read_bounded": "._yaml",
}
"""Each name and the module it is in."""

__all__ = [
    "MAX_CASE_BYTES",
    "NAME_MAX_BYTES",
    "NAME_RULE",
    "Case",
    "CaseFileError",
    "Expects",
    "Promoted",
    "Scoring",
    "Suite",
    "ToolCallSpec",
    "check_name",
    "inside",
    "load_case",
    "name_problem",
    "promote",
    "read_bounded",
    "reference_for",
    "replacing",
    "sweep_parts",
    "write_whole",
]


__getattr__, __dir__ = _lazy_face(__name__, _EXPORTS)
