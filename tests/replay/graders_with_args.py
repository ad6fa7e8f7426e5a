"""A grader with arguments and a version, for tests/replay/test_grader_pins.py."""

from __future__ import annotations

from replay.graders import Grade, Trial, Verdict, grader


@grader("answer_mentions", version="3")
def answer_mentions(trial: Trial, word: str = "refund") -> Grade:
    """Passes when the final answer mentions ``word``."""
    ok = word in (trial.answer or "").lower()
    return Grade("answer_mentions", Verdict.PASS if ok else Verdict.FAIL, (f"{word!r}",))
