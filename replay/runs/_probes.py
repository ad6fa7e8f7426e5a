"""The bias probes of ``replay judge-check``, a registry: name to probe.

A probe judges perturbed copies of the labelled trials and counts the flips:
``position`` (two trials compared in both orders), ``length`` (the answer
padded), ``style`` (the answer restated), ``self-preference`` (the judge's
pass rate over the humans' on its own model family's agents and on others').
A new probe is a new entry of ``PROBES``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..graders import Dimension, Judge, Trial, Verdict, pad_answer, paraphrase, trial_text
from ..results import Interval, wilson_interval

_GRADED = (Verdict.PASS, Verdict.FAIL)


def family(model: str | None) -> str | None:
    """A model's family: its name's leading letters (``gpt-4o`` and ``gpt-4.1``: ``gpt``)."""
    found = re.match(r"[A-Za-z]+", (model or "").rpartition("/")[2])
    return found.group(0).lower() if found else None


@dataclass(frozen=True)
class Labelled:
    """A human-labelled trial, rebuilt, with the judge's verdicts on it as it is."""

    run: str
    idx: int
    trial: Trial
    family: str | None
    """The family of the agent's model (the run's pins), if they name one."""
    dimensions: tuple[Dimension, ...]
    """The rubric dimensions a human labelled (a whole-trial label labels them all)."""
    humans: Mapping[str, tuple[Verdict, ...]]
    """Each dimension's human verdict, people's majority (``people_verdict``); empty: none."""
    verdicts: Mapping[str, Verdict]
    """Each dimension's judge verdict on the unperturbed trial."""

    @property
    def stem(self) -> str:
        """The trial as a file name's start."""
        return slug(f"{self.run}-{self.trial.case.id}-{self.idx}")


@dataclass(frozen=True)
class Probing:
    """What a probe works with."""

    judge: Judge
    trials: Sequence[Labelled]
    out: Path
    """Where the judge's calls are recorded."""
    rng: random.Random
    restate: Callable[[str], str] | None


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What one probe found.

    ``rate`` is the flip rate (flips of ``n`` comparisons, with its Wilson
    interval), or for ``self-preference`` the pass-rate gap; None when the
    probe could not measure (``note`` says why).
    """

    name: str
    status: str
    """``measured``, ``not measured``, ``flagged, not measured`` or ``not flagged``."""
    metric: str = "flip rate"
    n: int = 0
    flips: int = 0
    unknown: int = 0
    """Comparisons left out because the judge answered ``unknown``."""
    rate: float | None = None
    interval: Interval | None = None
    note: str = ""

    def exceeds(self, max_flip: float) -> bool:
        """Whether the probe measured a rate above ``max_flip``."""
        return self.rate is not None and self.rate > max_flip

    def to_json(self) -> dict[str, Any]:
        """As JSON-ready data."""
        return asdict(self)


Probe = Callable[[Probing, str], ProbeResult]
"""One perturbation: judges the perturbed copies and counts the flips (``str``: its name)."""


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def _flips(name: str, n: int, flips: int, unknown: int, none: str) -> ProbeResult:
    if not n:
        return ProbeResult(name, "not measured", n=0, unknown=unknown, note=none)
    return ProbeResult(
        name, "measured", n=n, flips=flips, unknown=unknown, rate=flips / n,
        interval=wilson_interval(flips, n),
    )  # fmt: skip


def pointwise(perturb: Callable[[str, Probing], str | None]) -> Probe:
    """A probe judging each labelled trial with its answer perturbed; a flip: a changed verdict.

    ``perturb`` gives the new answer, or None when it does not apply to this one.
    """

    def probe(check: Probing, name: str) -> ProbeResult:
        n = flips = unknown = 0
        for item in check.trials:
            answer = perturb(item.trial.answer or "", check)
            if answer is None:
                continue
            changed = replace(item.trial, answer=answer)
            cassette = check.out / f"{item.stem}.{name}.judge.cassette"
            for d, grade in zip(
                item.dimensions,
                check.judge.grade(changed, list(item.dimensions), cassette),
                strict=True,
            ):
                before = item.verdicts[d.name]
                if before not in _GRADED or grade.verdict not in _GRADED:
                    unknown += 1
                    continue
                n += 1
                flips += grade.verdict is not before
        return _flips(name, n, flips, unknown, "the judge answered unknown on every trial")

    return probe


def padded(answer: str, check: Probing) -> str:
    """The answer with confident, empty text after it (``replay.graders`` pads it)."""
    return pad_answer(answer, check.rng)


def restated(answer: str, check: Probing) -> str | None:
    """The answer in other words: by the restating model, or by a paraphrase template."""
    if not answer.strip():
        return None
    return check.restate(answer.strip()) if check.restate else paraphrase(answer, check.rng)


def position(check: Probing, name: str) -> ProbeResult:
    """Two trials of one case compared, then compared swapped; a flip: the preference moved."""
    groups: dict[tuple[str, str], list[Labelled]] = {}
    dimensions: dict[str, Dimension] = {}
    for item in check.trials:
        for d in item.dimensions:
            groups.setdefault((item.trial.case.id, d.hash), []).append(item)
            dimensions[d.hash] = d
    n = flips = unknown = 0
    for (_, rubric_hash), items in sorted(groups.items()):
        d = dimensions[rubric_hash]
        for a, b in _pairs(items, d, check.rng):
            stem = check.out / f"{a.stem}.vs.{b.stem}.{slug(d.name)}.{name}"
            first, _ = check.judge.compare(a.trial, b.trial, d, Path(f"{stem}.ab.judge.cassette"))
            second, _ = check.judge.compare(b.trial, a.trial, d, Path(f"{stem}.ba.judge.cassette"))
            if first is None or second is None:
                unknown += 1
                continue
            n += 1
            flips += (a if first == "A" else b) is not (b if second == "A" else a)
    return _flips(
        name, n, flips, unknown,
        "no two labelled trials of one case read differently: label trials of another run "
        "of the case (pairs may span runs)" if not unknown
        else "the judge answered unknown on every pair",
    )  # fmt: skip


def _pairs(
    items: Sequence[Labelled], dimension: Dimension, rng: random.Random
) -> list[tuple[Labelled, Labelled]]:
    """Pairs of trials that read differently: a human pass with a human fail first."""

    def said(item: Labelled) -> Verdict | None:
        humans = set(item.humans[dimension.name])
        return humans.pop() if len(humans) == 1 else None

    texts = {id(item): trial_text(item.trial) for item in items}
    passes = [i for i in items if said(i) is Verdict.PASS]
    fails = [i for i in items if said(i) is Verdict.FAIL]
    others = [i for i in items if said(i) is None]
    for group in (passes, fails, others):
        rng.shuffle(group)
    used: set[int] = set()
    pairs: list[tuple[Labelled, Labelled]] = []

    def pair(a: Labelled, pool: Sequence[Labelled]) -> None:
        for b in pool:
            if id(b) not in used and b is not a and texts[id(b)] != texts[id(a)]:
                used.update((id(a), id(b)))
                pairs.append((a, b))
                return

    for a in passes:
        pair(a, fails)
    rest = [i for i in (*passes, *fails, *others) if id(i) not in used]
    for a in rest:
        if id(a) not in used:
            pair(a, rest)
    return pairs


def self_preference(check: Probing, name: str) -> ProbeResult:
    """How much more the judge passes than humans on its own family's agents than on others'."""
    metric, own = "pass-rate gap", family(check.judge.model)
    agents = sorted({item.family for item in check.trials if item.family is not None})
    if own is None or own not in agents:
        return ProbeResult(
            name, "not flagged", metric,
            note=f"the judge ({own or 'no family'}) is of no probed agent's family "
            f"({', '.join(agents) or 'the runs pin no agent model'})",
        )  # fmt: skip
    if len(agents) < 2:
        return ProbeResult(
            name, "flagged, not measured", metric,
            note=f"the judge and every labelled trial's agent are {own} models: label trials "
            "of another family's agent to measure it",
        )  # fmt: skip
    mine = [item for item in check.trials if item.family == own]
    theirs = [item for item in check.trials if item.family not in (own, None)]
    excess = [_excess(mine), _excess(theirs)]
    if excess[0] is None or excess[1] is None:
        return ProbeResult(
            name, "flagged, not measured", metric,
            note="the judge answered unknown on every trial of one family",
        )  # fmt: skip
    n = sum(len(item.dimensions) for item in (*mine, *theirs))
    return ProbeResult(
        name, "measured", metric, n=n, rate=excess[0] - excess[1],
        note=f"judge minus human pass rate {excess[0]:+.2f} on {own} agents, "
        f"{excess[1]:+.2f} on the others",
    )  # fmt: skip


def _excess(items: Sequence[Labelled]) -> float | None:
    """The judge's pass rate minus the humans' on these trials.

    Over the same judgements: each labelled dimension the judge said pass or fail on.
    """
    pairs = [
        (verdict, human)
        for item in items
        for name, verdict in item.verdicts.items()
        if verdict in _GRADED
        for human in item.humans.get(name, ())
    ]
    if not pairs:
        return None
    judge = sum(v is Verdict.PASS for v, _ in pairs) / len(pairs)
    return judge - sum(h is Verdict.PASS for _, h in pairs) / len(pairs)


PROBES: dict[str, Probe] = {
    "position": position,
    "length": pointwise(padded),
    "style": pointwise(restated),
    "self-preference": self_preference,
}
"""The perturbations ``judge_check`` runs, by name, in order; register more here."""
