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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from recorder import ConfigError, ReplayError

from ..cases import Case, load_case
from ..graders import Judge, Verdict
from ..modes import review
from ..results import (
    Store,
    cohen_kappa,
    labelled_trials,
    people_verdict,
)
from ._probes import PROBES, Labelled, ProbeResult, Probing, family, slug
from ._spec import RunSpec

MAX_FLIP = 0.1
"""The flip rate above which a judge fails a probe (``--max-flip``)."""

_GRADED = (Verdict.PASS, Verdict.FAIL)


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
    earlier: tuple[ProbeResult, ...] = field(default=())
    """Probes an earlier check of this judge measured over the threshold and this one could
    not measure: they still count (a check that cannot see a bias does not lift it)."""

    @property
    def failed(self) -> tuple[ProbeResult, ...]:
        """The probes whose rate exceeds ``max_flip`` (this check's, then earlier ones')."""
        return (*(p for p in self.probes if p.exceeds(self.max_flip)), *self.earlier)

    @property
    def passed(self) -> bool:
        """Whether every probe stayed under the threshold."""
        return not self.failed

    @property
    def measured(self) -> bool:
        """Whether any probe measured a rate (else the check could tell nothing)."""
        return any(p.rate is not None for p in self.probes)

    @property
    def reason(self) -> str:
        """Why the judge stays advisory (``""`` when it passed)."""
        return "; ".join(
            f"advisory: judge-check found {p.name} {p.metric} {p.rate:.2f} > {self.max_flip:g}"
            + (" (an earlier check; not measured since)" if p in self.earlier else "")
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
    out = out if out is not None else store.path.parent / "judge-checks" / slug(judge.model)
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
    hashes = {d.name: d.hash for item in labelled for d in item.dimensions}
    result = JudgeCheck(
        judge.model, tuple(runs), hashes,
        len(labelled), len(pairs), cohen_kappa(pairs), _share(pairs, Verdict.PASS),
        _share(pairs, Verdict.FAIL), sum(v is Verdict.UNKNOWN for v in verdicts) / len(verdicts),
        probes, max_flip, str(out), tuple(skipped),
        _still_failing(store, judge.model, set(hashes.values()), probes, max_flip),
    )  # fmt: skip
    store.add_judge_check(
        judge.model, sorted(set(hashes.values())), passed=result.passed,
        reason=result.reason, runs=runs, result=result.to_json(),
    )  # fmt: skip
    return result


def _still_failing(
    store: Store,
    model: str,
    hashes: set[str],
    probes: Sequence[ProbeResult],
    max_flip: float,
) -> tuple[ProbeResult, ...]:
    """The probes an earlier check of this judge failed that this one did not measure."""
    unmeasured = {p.name for p in probes if p.rate is None}
    earlier: dict[str, ProbeResult] = {}
    for (judge, rubric_hash), stored in store.judge_checks().items():
        if judge != model or rubric_hash not in hashes:
            continue
        for data in [*stored.result.get("probes", ()), *stored.result.get("earlier", ())]:
            probe = ProbeResult(**{**data, "interval": None})
            if probe.name in unmeasured and probe.exceeds(max_flip):
                earlier.setdefault(probe.name, probe)
    return tuple(earlier.values())


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
        labels = {
            (c, i): people for (_, c, i), people in labelled_trials(store.labels(run)).items()
        }
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
                d.name: tuple(v for v in [people_verdict(given, d.name)] if v is not None)
                for d in case.dimensions()
            }
            dimensions = tuple(d for d in case.dimensions() if humans[d.name])
            if not dimensions:
                continue
            try:
                trial = review(case, Path(stored.cassette), index=stored.idx).trial
            except ReplayError as exc:  # another fixture or case now: say so, probe the rest
                skipped.append(f"{name}: {exc}")
                continue
            stem = slug(f"{run}-{case.id}-{stored.idx}")
            grades = judge.grade(trial, list(dimensions), out / f"{stem}.judge.cassette")
            verdicts = {d.name: g.verdict for d, g in zip(dimensions, grades, strict=True)}
            found.append(Labelled(run, stored.idx, trial, agent, dimensions, humans, verdicts))
    return found, skipped
