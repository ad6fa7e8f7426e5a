"""Importing tau-bench historical trajectories: one cassette per trial, one stored run.

Each trial of the file becomes a cassette that reads like a live recording:
every assistant turn is an OpenAI chat-completions ``HttpEvent`` (request: the
messages so far; response: the assistant message as a ``chat.completion``),
every tool call a ``ToolEvent`` with the result of its tool message (no world
delta: there is no world), the last assistant text the final answer. The
trials are stored as one run, graded by the reward tau-bench recorded.
Nothing the file does not hold is made up: tokens, timings and sampling
settings are left at zero or unset.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

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

from ..cases import CaseFileError
from ..modes import cassette_name
from ..results import Store
from ..runs import RunSpec
from ._domains import DOMAINS

GRADER = "tau-bench"
"""Name of the grade each imported trial carries: tau-bench's recorded reward."""
SUITE = "capability"
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
_SHAPE = (
    "expected a tau-bench historical trajectories file: a JSON list of trials, each with "
    "task_id, trial, reward, info and traj"
)
_JSON_HEADERS = [("content-type", "application/json")]


class _Model(BaseModel):
    # Foreign data: keep what we do not read (extra="allow") instead of refusing it.
    model_config = ConfigDict(extra="allow", frozen=True)


class _Function(_Model):
    name: str
    arguments: str


class _ToolCall(_Model):
    id: str
    function: _Function


class _Message(_Model):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[Any] | None = None
    tool_calls: list[_ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class _Info(_Model):
    reward_info: dict[str, Any] | None = None


class _Record(_Model):
    task_id: Annotated[int, Field(ge=0)]
    trial: Annotated[int, Field(ge=0)]
    reward: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
    info: _Info
    traj: list[_Message]


_FILE: TypeAdapter[list[_Record]] = TypeAdapter(list[_Record])


@dataclass(frozen=True, slots=True)
class TauCall:
    """A tool call the model made, with the content of the tool message that answered it."""

    id: str
    name: str
    args: dict[str, Any]
    result: Any = None


@dataclass(frozen=True, slots=True)
class TauTrial:
    """One validated trial of a tau-bench trajectories file."""

    task_id: int
    index: int
    """The trial's index among its task's trials."""
    reward: float
    reward_info: dict[str, Any] | None
    """tau-bench's reward breakdown; None when the trial hit the step limit."""
    messages: list[dict[str, Any]]
    """The trajectory as OpenAI-format messages, exactly as in the file."""
    steps: list[int | TauCall | str]
    """In order: an assistant message's index, an answered tool call, or a warning."""

    @property
    def passed(self) -> bool:
        """Whether tau-bench counts the trial a success (reward 1, as its ``is_successful``)."""
        return abs(self.reward - 1.0) <= 1e-6

    @property
    def final_answer(self) -> str | None:
        """The last assistant text of the trajectory."""
        texts = (m.get("content") for m in reversed(self.messages) if m["role"] == "assistant")
        return next((t for t in texts if isinstance(t, str) and t.strip()), None)


@dataclass(frozen=True, slots=True)
class TauBenchImport:
    """What ``import_tau_bench_trajectories`` wrote."""

    run: str
    store: Path
    cassettes: list[Path]
    cases: int
    passed: int
    """Trials tau-bench counted a success; the others are failures."""


def load_trajectories(path: str | Path) -> list[TauTrial]:
    """Read and check a whole tau-bench trajectories file, writing nothing.

    Raises:
        CaseFileError: The file is missing, not JSON, or not shaped like tau-bench's
            ``historical_trajectories/*.json`` (the message names the record and field).
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise CaseFileError("no such file; check the path", path=path) from None
    except OSError as exc:
        raise CaseFileError(f"cannot be read ({exc.strerror}); {_SHAPE}", path=path) from None
    except ValueError as exc:
        raise CaseFileError(f"is not JSON ({exc}); {_SHAPE}", path=path) from None
    try:
        records = _FILE.validate_python(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        raise CaseFileError(f"{err['msg']}; {_SHAPE}", path=path, field=where or None) from None
    if not records:
        raise CaseFileError(f"holds no trials; {_SHAPE}", path=path)
    seen: dict[tuple[int, int], int] = {}
    trials = []
    for position, (record, source) in enumerate(zip(records, raw, strict=True)):
        key = (record.task_id, record.trial)
        if key in seen:
            raise CaseFileError(
                f"task {key[0]} trial {key[1]} is also record {seen[key]}; each trial once",
                path=path,
                field=f"[{position}]",
            )
        seen[key] = position
        steps = _steps(record, path, position)
        trials.append(
            TauTrial(
                record.task_id,
                record.trial,
                record.reward,
                record.info.reward_info,
                source["traj"],
                steps,
            )
        )
    return trials


def _steps(record: _Record, path: Path, position: int) -> list[int | TauCall | str]:
    """Pair each tool message with its call; say which calls were never answered."""
    steps: list[int | TauCall | str] = []
    pending: dict[str, TauCall] = {}
    for i, message in enumerate(record.traj):
        where = f"[{position}].traj[{i}]"
        if message.role == "assistant":
            steps.append(i)
            for call in message.tool_calls or []:
                try:
                    args = json.loads(call.function.arguments or "{}")
                except ValueError:
                    args = None
                if not isinstance(args, dict):
                    raise CaseFileError(
                        f"the arguments of tool call {call.id} are not a JSON object; {_SHAPE}",
                        path=path,
                        field=f"{where}.tool_calls",
                    )
                pending[call.id] = TauCall(call.id, call.function.name, args)
        elif message.role == "tool":
            made = pending.pop(message.tool_call_id or "", None)
            if made is None or (message.name is not None and message.name != made.name):
                raise CaseFileError(
                    f"tool result {message.tool_call_id!r} answers no earlier call of "
                    f"{message.name!r}; {_SHAPE}",
                    path=path,
                    field=where,
                )
            steps.append(TauCall(made.id, made.name, made.args, message.content))
    steps += [
        f"tool call {c.name} ({c.id}) has no result in the trajectory" for c in pending.values()
    ]
    return steps


def names_from_file(path: str | Path) -> tuple[str | None, str | None]:
    """Return the (model, domain) a ``<model>-<domain>.json`` file name states, or Nones."""
    stem = Path(path).stem
    for domain in DOMAINS:
        if stem.endswith(f"-{domain}") and len(stem) > len(domain) + 1:
            return stem[: -len(domain) - 1], domain
    return None, None


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
    store never holds a run whose cassettes are missing.

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
    for trial, target in zip(chosen, targets, strict=True):
        _write(trial, target, domain=domain, model=model, source=path.name, started=started)
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
        row, grade = _rows(trial, target, domain)
        results.add_trial(run, row, [grade])
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
    write_cassette(target, header, events, footer)


def _rows(trial: TauTrial, cassette: Path, domain: str) -> tuple[dict[str, Any], dict[str, Any]]:
    verdict = "pass" if trial.passed else "fail"
    row = {
        "case_id": _case_id(domain, trial),
        "idx": trial.index,
        "suite": SUITE,
        "verdict": verdict,
        "score": trial.reward,
        "cassette": str(cassette.resolve()),
        "steps": sum(isinstance(s, int) for s in trial.steps),
        # Unknown (the file holds no usage, timings or costs): NULL, not a made-up 0.
        "input_tokens": None,
        "output_tokens": None,
        "latency": None,
        "cost": None,
        "tags": json.dumps(["tau-bench"]),
    }
    grade = {
        "grader": GRADER,
        "verdict": verdict,
        "score": trial.reward,
        "veto": 0,
        "evidence": json.dumps([_evidence(trial)]),
    }
    return row, grade


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
