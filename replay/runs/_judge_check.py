"""``replay judge-check``: does the judge's verdict move when nothing that matters does?

The run's human-labelled trials are rebuilt from their cassettes (review:
nothing runs), judged as they are, then judged again perturbed, one probe
of ``PROBES`` at a time: the candidates of a pairwise comparison swapped
(``position``), the answer padded with confident, empty text (``length``),
the answer restated (``style``). A flip is a verdict (or a preference) that
changed; a comparison where the judge answered ``unknown`` is counted apart.
``self-preference`` compares how far the judge's pass rate exceeds the
humans' on agents of its own model family and on the others. A judge whose
rate on any probe exceeds ``max_flip`` fails the check: it is stored
(``Store.add_judge_check``) and the judge stays advisory (``calibrated_judges``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from recorder import ConfigError, ReplayError

from ..cases import Case, load_case
from ..graders import Dimension, Judge, Trial, Verdict, pad_answer, paraphrase, trial_text
from ..modes import review
from ..results import Interval, Store, cohen_kappa, wilson_interval
from ._spec import RunSpec

MAX_FLIP = 0.1
"""The flip rate above which a judge fails a probe (``--max-flip``)."""

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
    """Each dimension's human pass/fail labels."""
    verdicts: Mapping[str, Verdict]
    """Each dimension's judge verdict on the unperturbed trial."""

    @property
    def stem(self) -> str:
        """The trial as a file name's start."""
        return _slug(f"{self.run}-{self.trial.case.id}-{self.idx}")


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


@dataclass(frozen=True, slots=True)
class JudgeCheck:
    """A judge probed for bias on a run's labelled trials (``replay judge-check``)."""

    model: str
    runs: tuple[str, ...]
    dimensions: Mapping[str, str]
    """Each probed dimension's rubric hash, by name."""
    trials: int
    """Labelled trials probed."""
    labels: int
    """(judge, human) pass/fail pairs on the unperturbed trials."""
    kappa: float | None
    tpr: float | None
    """Of the human passes, the share the judge passed."""
    tnr: float | None
    """Of the human fails, the share the judge failed."""
    unknown_rate: float | None
    """Share of the judge's verdicts on the unperturbed trials that were ``unknown``."""
    probes: tuple[ProbeResult, ...]
    max_flip: float
    cassettes: str
    """The folder of the judge's recorded calls."""
    skipped: tuple[str, ...] = field(default=())
    """Labelled trials that could not be rebuilt, each with why."""

    @property
    def failed(self) -> tuple[ProbeResult, ...]:
        """The probes whose rate exceeds ``max_flip``."""
        return tuple(p for p in self.probes if p.exceeds(self.max_flip))

    @property
    def passed(self) -> bool:
        """Whether every probe stayed under the threshold."""
        return not self.failed

    @property
    def reason(self) -> str:
        """Why the judge stays advisory (``""`` when it passed)."""
        return "; ".join(
            f"advisory: judge-check found {p.name} {p.metric} {p.rate:.2f} > {self.max_flip:g}"
            for p in self.failed
        )

    def to_json(self) -> dict[str, Any]:
        """As JSON-ready data (what ``--json`` prints)."""
        return {**asdict(self), "passed": self.passed, "reason": self.reason}


def judge_check(
    store: Store,
    runs: Sequence[str],
    judge: Judge,
    *,
    max_flip: float = MAX_FLIP,
    restate: Callable[[str], str] | None = None,
    seed: int = 0,
    out: Path | None = None,
) -> JudgeCheck:
    """Probe ``judge`` for bias on the human-labelled trials of ``runs``; store the result.

    Args:
        store: The results store holding the runs and their labels.
        runs: The runs whose labelled trials are probed (pairs may span them).
        judge: The judge to check (its model and endpoint).
        max_flip: The rate above which a probe fails the judge.
        restate: Rewrites an answer in other words (``style``); None: a paraphrase
            template. ``replay.graders.Restater(url, model)`` asks a model.
        seed: Seeds the pairs, the padding and the templates.
        out: Where the judge's calls are recorded (default: ``judge-checks/<model>``
            beside the store).

    Raises:
        ConfigError: No such run, no labelled trial with a rubric, a bad ``max_flip``,
            a case file that will not load, or a restating model that failed.
    """
    if not runs:
        raise ConfigError("name at least one run to check the judge on")
    if not 0.0 <= max_flip <= 1.0:
        raise ConfigError(f"max_flip (--max-flip) is a rate between 0 and 1, not {max_flip:g}")
    out = out if out is not None else store.path.parent / "judge-checks" / _slug(judge.model)
    labelled, skipped = _labelled(store, runs, judge, out)
    if not labelled:
        raise ConfigError(
            f"no trial of {', '.join(runs)} is labelled pass or fail on a rubric dimension: "
            "label some with `replay label RUN CASE#INDEX pass|fail` first"
        )
    check = Probing(judge, labelled, out, random.Random(seed), restate)
    probes = tuple(
        probe(replace(check, rng=random.Random(f"{seed}:{name}")), name)
        for name, probe in PROBES.items()
    )
    pairs = [
        (item.verdicts[d.name], human)
        for item in labelled
        for d in item.dimensions
        for human in item.humans[d.name]
        if item.verdicts[d.name] in _GRADED
    ]
    verdicts = [v for item in labelled for v in item.verdicts.values()]
    result = JudgeCheck(
        judge.model, tuple(runs), {d.name: d.hash for item in labelled for d in item.dimensions},
        len(labelled), len(pairs), cohen_kappa(pairs), _share(pairs, Verdict.PASS),
        _share(pairs, Verdict.FAIL), sum(v is Verdict.UNKNOWN for v in verdicts) / len(verdicts),
        probes, max_flip, str(out), tuple(skipped),
    )  # fmt: skip
    hashes = sorted(set(result.dimensions.values()))
    store.add_judge_check(
        judge.model, hashes, passed=result.passed, reason=result.reason, runs=runs,
        result=result.to_json(),
    )  # fmt: skip
    return result


def _share(pairs: Sequence[tuple[Verdict, Verdict]], human: Verdict) -> float | None:
    said = [judge for judge, h in pairs if h is human]
    return sum(j is human for j in said) / len(said) if said else None


def _labelled(
    store: Store, runs: Sequence[str], judge: Judge, out: Path
) -> tuple[list[Labelled], list[str]]:
    """Each run's labelled trials, rebuilt and judged as they are; and those skipped, why."""
    found: list[Labelled] = []
    skipped: list[str] = []
    for run in runs:
        record = store.run(run)
        if record is None:
            raise ConfigError(f"no run {run!r} in {store.path}; see `replay runs`")
        labels: dict[tuple[str, int], dict[str, list[Verdict]]] = {}
        for label in store.labels(run):
            if label.verdict in _GRADED:  # an unsure label compares with nothing
                said = labels.setdefault((label.case_id, label.idx), {})
                said.setdefault(label.dimension, []).append(label.verdict)
        if not labels:
            continue
        paths = RunSpec.from_stored(dict(record.spec)).cases
        cases: dict[str, Case] = {}
        agent = family(record.pins.get("model"))
        for stored in store.trials(run):
            given = labels.get((stored.case_id, stored.idx))
            if given is None:
                continue
            name = f"{run}:{stored.case_id}#{stored.idx}"
            if not cases:
                cases = {case.id: case for case in map(load_case, paths)}
            case = cases.get(stored.case_id)
            if case is None:
                skipped.append(f"{name}: its case is not among the run's case files")
                continue
            if stored.cassette is None or not Path(stored.cassette).is_file():
                skipped.append(f"{name}: its cassette {stored.cassette} is not there")
                continue
            humans = {
                d.name: tuple(given.get(d.name) or given.get("", [])) for d in case.dimensions()
            }
            dimensions = tuple(d for d in case.dimensions() if humans[d.name])
            if not dimensions:
                continue
            try:
                trial = review(case, Path(stored.cassette), index=stored.idx).trial
            except ReplayError as exc:  # another fixture or case now: say so, probe the rest
                skipped.append(f"{name}: {exc}")
                continue
            stem = _slug(f"{run}-{case.id}-{stored.idx}")
            grades = judge.grade(trial, list(dimensions), out / f"{stem}.judge.cassette")
            verdicts = {d.name: g.verdict for d, g in zip(dimensions, grades, strict=True)}
            found.append(Labelled(run, stored.idx, trial, agent, dimensions, humans, verdicts))
    return found, skipped


def _slug(text: str) -> str:
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
            stem = check.out / f"{a.stem}.vs.{b.stem}.{_slug(d.name)}.{name}"
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
    """The judge's pass rate minus the humans' on these trials (pass/fail verdicts only)."""
    judged = [v for item in items for v in item.verdicts.values() if v in _GRADED]
    humans = [h for item in items for said in item.humans.values() for h in said]
    if not judged or not humans:
        return None
    rate = sum(v is Verdict.PASS for v in judged) / len(judged)
    return rate - sum(h is Verdict.PASS for h in humans) / len(humans)


PROBES: dict[str, Probe] = {
    "position": position,
    "length": pointwise(padded),
    "style": pointwise(restated),
    "self-preference": self_preference,
}
"""The perturbations ``judge_check`` runs, by name, in order; register more here."""
