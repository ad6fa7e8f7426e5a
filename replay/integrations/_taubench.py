"""Importing tau-bench historical trajectories: one cassette per trial, one stored run.

Each trial of the file becomes a cassette that reads like a live recording:
every assistant turn is an OpenAI chat-completions ``HttpEvent`` (request: the
messages so far; response: the assistant message as a ``chat.completion``),
every tool call a ``ToolEvent`` with the result of its tool message (no world
delta: there is no world), the last assistant text the final answer. The
trials are stored as one run, graded by the reward tau-bench recorded.
Nothing the file does not hold is made up: tokens, timings and sampling
settings are left at zero or unset. (Reading the file is ``_taufile``'s.)
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from recorder import (
    Cassette,
    ConfigError,
    Event,
    Header,
    HttpEvent,
    HttpRequest,
    HttpResponse,
    Pins,
    ToolEvent,
    WarningEvent,
    __version__,
    write_cassette,
)

from ..cases import Suite, replacing
from ..graders import Verdict
from ..modes import cassette_name
from ..results import GradeRecord, Store, TrialRecord, TrialUsage
from ..runs import RunSpec
from ._domains import DOMAINS
from ._taufile import TauCall, TauTrial, load_trajectories, names_from_file

GRADER = "tau-bench"
"""Name of the grade each imported trial carries: tau-bench's recorded reward."""
SUITE = Suite.CAPABILITY
LLM_URL = "https://api.openai.com/v1/chat/completions"
"""Where the imported LLM calls are said to go: tau-bench called OpenAI's API."""
WRITE_TOOLS = frozenset(
    {
        "book_reservation",
        "cancel_reservation",
        "send_certificate",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
        "cancel_pending_order",
        "exchange_delivered_order_items",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "modify_user_email",
        "return_delivered_order_items",
    }
)
"""The tau-bench airline and retail tools that change its database (effect ``write``)."""
_JSON_HEADERS = [("content-type", "application/json")]


@dataclass(frozen=True, slots=True)
class TauBenchImport:
    """What ``import_tau_bench_trajectories`` wrote."""

    run: str
    store: Path
    cassettes: list[Path]
    cases: int
    passed: int
    """Trials tau-bench counted a success; the others are failures."""


def import_tau_bench_trajectories(
    path: str | Path,
    out_dir: str | Path,
    store: Store | str | Path,
    run: str | None = None,
    *,
    model: str | None = None,
    domain: str | None = None,
    trials: Collection[int] | None = None,
    clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
) -> TauBenchImport:
    """Import a tau-bench trajectories file: a cassette per trial, one run in the store.

    The whole file is checked first, then the cassettes are written, then the run is
    stored: bad input leaves the store untouched (the store is not even opened), and a
    store never holds a run whose cassettes are missing. Each cassette is written
    beside its path and renamed into place, and a write that fails (or is
    interrupted) takes back the ones this import wrote: ``out_dir`` holds every
    cassette, whole, or none of them (a process killed outright may leave some,
    each whole, and ``.*.part`` files).

    Args:
        path: The trajectories file (tau-bench's ``historical_trajectories/*.json``).
        out_dir: Directory for the cassettes, named ``tau-bench-<domain>-<task>-<trial>``.
        store: The results store, or its path (opened only once the file checks out).
        run: Name of the new run; default ``tau-bench-<file name>``.
        model: The agent's model; default the ``<model>`` of the file name, else unknown.
        domain: The tau-bench domain, part of every case id; default from the file name.
        trials: Import only the trials with these indexes (tau-bench's ``trial``), e.g.
            ``{0, 1}`` and ``{2, 3}`` as two runs of one version (``replay noise``).
        clock: Gives the time the cassettes say they were made (their ``started_at``).

    Raises:
        CaseFileError: The file is not a tau-bench trajectories file.
        ConfigError: The domain is unknown or not a plain name, the run exists,
            ``out_dir`` already holds one of the cassettes, or ``trials`` selects none.
    """
    path, out = Path(path), Path(out_dir)
    every = load_trajectories(path)
    chosen = every if trials is None else [t for t in every if t.index in set(trials)]
    if not chosen:
        indexes = sorted({t.index for t in every})
        raise ConfigError(
            f"{path}: no trial has an index in {sorted(trials or [])} (it has {indexes})"
        )
    named_model, named_domain = names_from_file(path)
    model, domain = model or named_model, domain or named_domain
    if domain is None:
        raise ConfigError(
            f"{path}: the file name does not end in -{' or -'.join(DOMAINS)}; "
            "pass --domain (tau-bench's domain, part of every case id)"
        )
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", domain):
        raise ConfigError(f"domain {domain!r} must be a plain name (letters, digits, . _ -)")
    run = run or f"tau-bench-{path.stem}"
    results = store if isinstance(store, Store) else Store(store)
    if results.run(run) is not None:
        raise ConfigError(
            f"run {run!r} exists in {results.path}; an import never adds to a run: "
            "pass --run with a new name"
        )
    targets = [out / cassette_name(_case_id(domain, t), t.index) for t in chosen]
    taken = [p for p in targets if p.exists()]
    if taken:
        raise ConfigError(
            f"{out} already holds {len(taken)} of the cassettes this import writes "
            f"(e.g. {taken[0].name}); choose another --out or remove them"
        )
    started = clock().isoformat()
    written: list[Path] = []
    try:
        for trial, target in zip(chosen, targets, strict=True):
            _write(trial, target, domain=domain, model=model, source=path.name, started=started)
            written.append(target)
    except BaseException:  # (Ctrl-C too) none were there before: leave none of them
        for done in written:
            done.unlink(missing_ok=True)
        raise
    # The spec is a RunSpec, as every run's is: a review of the recorded cassettes
    # (graded by tau-bench, not re-graded), with no case file to run again.
    spec = RunSpec(name=run, cases=[], mode="review", cassettes=str(out), out=str(out)).to_stored()
    pins = {
        "mode": "import",
        "source": "tau-bench",
        "file": str(path.resolve()),
        "domain": domain,
        "model": model,
        "grader_version": "tau-bench reward, as recorded",
    }
    results.start_run(run, spec, pins)
    for trial, target in zip(chosen, targets, strict=True):
        results.add_trial(run, _record(trial, target, domain))
    results.finish_run(run)
    return TauBenchImport(
        run=run,
        store=results.path,
        cassettes=targets,
        cases=len({t.task_id for t in chosen}),
        passed=sum(t.passed for t in chosen),
    )


import_trajectories = import_tau_bench_trajectories
"""The former name, which tests/replay/test_import_taubench.py still uses."""


def _case_id(domain: str, trial: TauTrial) -> str:
    return f"tau-bench-{domain}-{trial.task_id}"


def _events(trial: TauTrial, model: str | None) -> list[Event]:
    head = {"model": model} if model else {}
    events: list[Event] = []
    for step in trial.steps:
        if isinstance(step, int):
            request = {**head, "messages": trial.messages[:step]}
            choice = {"index": 0, "message": trial.messages[step]}
            reply = {"object": "chat.completion", **head, "choices": [choice]}
            events.append(
                HttpEvent(
                    t=0.0,
                    duration=0.0,
                    via="import",
                    request=HttpRequest(
                        method="POST",
                        url=LLM_URL,
                        headers=_JSON_HEADERS,
                        body=json.dumps(request, separators=(",", ":")).encode(),
                    ),
                    response=HttpResponse(
                        status=200,
                        headers=_JSON_HEADERS,
                        chunks=[json.dumps(reply, separators=(",", ":")).encode()],
                    ),
                )
            )
        elif isinstance(step, TauCall):
            events.append(
                ToolEvent(
                    t=0.0,
                    duration=0.0,
                    name=step.name,
                    args=step.args,
                    effect="write" if step.name in WRITE_TOOLS else "read",
                    result=step.result,
                )
            )
        else:
            events.append(WarningEvent(t=0.0, message=step))
    return events


def _write(
    trial: TauTrial, target: Path, *, domain: str, model: str | None, source: str, started: str
) -> None:
    user = {"source": "tau-bench", "file": source, "task_id": str(trial.task_id)}
    user["reward"] = str(trial.reward)
    header = Header(
        case_id=_case_id(domain, trial),
        trial=trial.index,
        pins=Pins(model=model, user=user),
        started_at=started,
        recorder_version=__version__,
    )
    events = _events(trial, model)
    # The footer a reader derives for a cassette without one is what a live recording
    # would have closed with (usage, pins seen in the LLM requests); only the status
    # and the final answer differ.
    derived = Cassette(target, header, events, None, None).summary()
    footer = derived.model_copy(update={"status": "ok", "final_answer": trial.final_answer})
    with replacing(target) as tmp:  # a reader never finds it half written
        write_cassette(tmp, header, events, footer, overwrite=True)


def _record(trial: TauTrial, cassette: Path, domain: str) -> TrialRecord:
    verdict = Verdict.PASS if trial.passed else Verdict.FAIL
    grade = GradeRecord(GRADER, verdict, trial.reward, evidence=(_evidence(trial),))
    return TrialRecord(
        case_id=_case_id(domain, trial),
        idx=trial.index,
        suite=SUITE,
        verdict=verdict,
        score=trial.reward,
        cassette=str(cassette.resolve()),
        # Tokens, latency and cost unknown (the file holds no usage, timings or costs):
        # NULL, not a made-up 0.
        usage=TrialUsage(steps=sum(isinstance(s, int) for s in trial.steps)),
        tags=("tau-bench",),
        grades=(grade,),
    )


def _evidence(trial: TauTrial) -> str:
    """One line: the reward, and what tau-bench's reward_info says about it."""
    info = trial.reward_info
    if info is None:
        return f"reward {trial.reward}; reward_info null: the trial hit the step limit"
    details = info.get("info")
    if not isinstance(details, dict):
        return f"reward {trial.reward}; reward_info {json.dumps(info, default=str)}"
    parts = [f"reward {trial.reward}"]
    for key, value in details.items():
        if key == "r_actions":
            verb = "matches" if value == 1 else "differs from"
            parts.append(f"r_actions {value}: the final database {verb} the gold actions' result")
        elif key == "outputs" and isinstance(value, dict):
            missing = [str(k) for k, given in value.items() if not given]
            if missing:
                parts.append(f"outputs missing from the replies: {', '.join(missing)}")
        elif key != "gt_data_hash":  # the gold database's hash tells a reader nothing
            parts.append(f"{key} {json.dumps(value, default=str)}")
    return "; ".join(parts)
