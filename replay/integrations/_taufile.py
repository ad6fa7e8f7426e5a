"""Reading tau-bench historical trajectories: each trial's steps, checked, writing nothing.

``load_trajectories`` reads a whole ``historical_trajectories/*.json`` file into
``TauTrial``s (each tool message paired with its call); ``_taubench`` makes
them cassettes and a stored run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..cases import CaseFileError
from ._domains import DOMAINS

_SHAPE = (
    "expected a tau-bench historical trajectories file: a JSON list of trials, each with "
    "task_id, trial, reward, info and traj"
)


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
