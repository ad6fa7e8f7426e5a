"""Cases: the case file's model, incidents promoted to cases, the reference solution run.

Also the rules every stage above keeps for what it names and writes: names are
names (``check_name``), paths made from them stay in their folder (``inside``),
files are written whole (``write_whole``, ``replacing``).

Private: use what ``replay`` exports.
"""

from ._case import Case, CaseFileError, Expects, Scoring, Suite, ToolCallSpec, load_case
from ._files import replacing, sweep_parts, write_whole
from ._names import NAME_MAX_BYTES, NAME_RULE, check_name, inside, name_problem
from ._promote import Promoted, promote
from ._solution import reference_for
from ._yaml import MAX_CASE_BYTES, read_bounded

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
