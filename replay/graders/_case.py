"""What a grader may read of a case: a ``Protocol`` the loaded case (``replay.Case``) satisfies.

Graders are written against this, not against the case file's model, so a
grader's type says what it reads and a test can grade with a case of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._expr import Assertion
    from ._reference import MatchReference


class ReferenceCall(Protocol):
    """One call of a case's reference solution."""

    @property
    def tool(self) -> str: ...
    @property
    def args(self) -> Mapping[str, Any]: ...


class RubricItem(Protocol):
    """One dimension of a case's rubric, for the LLM judge."""

    @property
    def name(self) -> str: ...
    @property
    def criteria(self) -> str: ...


class GradedCase(Protocol):
    """The case a trial ran, as graders see it (``Trial.case``)."""

    @property
    def id(self) -> str: ...
    @property
    def instruction(self) -> str: ...
    @property
    def tags(self) -> Sequence[str]: ...
    @property
    def allowed_tables(self) -> Sequence[str] | None:
        """Tables the agent may change; None: ``no_side_effects`` cannot be checked."""

    @property
    def forbidden_tools(self) -> Sequence[str]: ...
    @property
    def must_call(self) -> Sequence[str]: ...
    @property
    def max_steps(self) -> int | None: ...
    @property
    def max_cost(self) -> float | None: ...
    @property
    def reference_solution(self) -> Sequence[ReferenceCall]: ...
    @property
    def match_reference(self) -> MatchReference | None: ...
    @property
    def rubric(self) -> Sequence[RubricItem]: ...
    def parsed_assertions(self) -> Sequence[Assertion]:
        """The case's ``assert:`` lines, parsed."""
