"""Cases: the case file's model, incidents promoted to cases, the reference solution run.

Private: use what ``replay`` exports.
"""

from ._case import Case, CaseFileError, Expects, Scoring, Suite, ToolCallSpec, load_case
from ._promote import Promoted, promote
from ._solution import reference_for

__all__ = [
    "Case",
    "CaseFileError",
    "Expects",
    "Promoted",
    "Scoring",
    "Suite",
    "ToolCallSpec",
    "load_case",
    "promote",
    "reference_for",
]
