"""Graders a user registers, for tests/cli/test_custom_graders.py (imported by MODULE:NAME)."""

from __future__ import annotations

from replay.graders import Grade, Trial, Verdict, grader


@grader("says_sorry")
def says_sorry(trial: Trial) -> Grade:
    """Fails unless the answer apologises: the demo agent's does not."""
    ok = "sorry" in (trial.answer or "").lower()
    return Grade("says_sorry", Verdict.PASS if ok else Verdict.FAIL, () if ok else ("no apology",))


@grader("refund_rows")
def refund_rows(trial: Trial) -> Grade:
    """Passes when the world ends with exactly one refund."""
    count = len(trial.world.rows("refunds", {}))
    return Grade("refund_rows", Verdict.PASS if count == 1 else Verdict.FAIL, (f"{count} rows",))


@grader("explodes")
def explodes(trial: Trial) -> Grade:
    """Raises: an error grade, never a crashed run."""
    raise RuntimeError("the grader broke")
