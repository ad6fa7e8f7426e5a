"""Importing tau-bench trajectories: the cassettes, the stored run, and bad input refused whole."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from recorder import (
    ConfigError,
    HttpEvent,
    ToolEvent,
    WarningEvent,
    llm_call,
    read_cassette,
)
from replay import CaseFileError, Store
from replay.integrations._taubench import import_trajectories, load_trajectories, names_from_file
from tests.helpers import REPO

DATA = (REPO.parent / "shared" / "external" / "tau-bench" / "gpt-4o-airline.json").resolve()
CLOCK = dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.timezone.utc)

SYSTEM = {"role": "system", "content": "# Airline Agent Policy\n\nBe careful."}
ARGS = {"user_id": "mia_li_3668", "cabin": "economy"}


def traj(*, answered: bool = True, answer: str = "Booked: reservation HATHAT.") -> list[Any]:
    """A small airline conversation: a read, a write, then the answer."""
    messages: list[Any] = [
        SYSTEM,
        {"role": "user", "content": "Book me a flight."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "get_user_details",
                        "arguments": '{"user_id":"mia_li_3668"}',
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "name": "get_user_details",
            "content": '{"name": "Mia"}',
        },
        {
            "role": "assistant",
            "content": "Booking it now.",
            "tool_calls": [
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "book_reservation", "arguments": json.dumps(ARGS)},
                }
            ],
        },
    ]
    if not answered:
        return messages
    return [
        *messages,
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "name": "book_reservation",
            "content": '{"reservation_id": "HATHAT"}',
        },
        {"role": "assistant", "content": answer},
        {"role": "user", "content": "Thanks! ###STOP###"},
    ]


def record(task_id: int = 3, trial: int = 0, reward: float = 1.0, **changes: Any) -> Any:
    info = {"r_actions": reward, "gt_data_hash": "ab12"}
    data: dict[str, Any] = {
        "task_id": task_id,
        "trial": trial,
        "reward": reward,
        "info": {"task": {"actions": []}, "reward_info": {"reward": reward, "info": info}},
        "traj": traj(),
    }
    data.update(changes)
    return data


def write(tmp_path: Path, records: Any, name: str = "gpt-4o-airline.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(records))
    return path


def do_import(tmp_path: Path, source: Path, run: str | None = None, **kw: Any) -> Any:
    return import_trajectories(
        source, tmp_path / "cassettes", tmp_path / "results.db", run, clock=lambda: CLOCK, **kw
    )


def test_a_trial_becomes_a_cassette_that_reads_like_a_live_recording(tmp_path: Path) -> None:
    source = write(tmp_path, [record(trial=1)])
    result = do_import(tmp_path, source)
    assert result.cassettes == [tmp_path / "cassettes" / "tau-bench-airline-3-1.cassette"]
    cassette = read_cassette(result.cassettes[0])
    assert cassette.complete
    head = cassette.header
    assert (head.case_id, head.trial, head.started_at) == (
        "tau-bench-airline-3",
        1,
        CLOCK.isoformat(),
    )
    assert head.pins.model == "gpt-4o"
    assert head.pins.user == {
        "source": "tau-bench",
        "file": "gpt-4o-airline.json",
        "task_id": "3",
        "reward": "1.0",
    }
    assert [e.kind for e in cassette.events] == ["http", "tool", "http", "tool", "http"]

    # Each assistant turn: a chat-completions call sent the messages so far, replied the turn.
    messages = traj()
    llm = [e for e in cassette.events if isinstance(e, HttpEvent)]
    for event, turn in zip(llm, (2, 4, 6), strict=True):
        call = llm_call(event)
        assert call is not None
        assert (call.api, call.model, call.messages) == ("openai", "gpt-4o", messages[:turn])
        assert event.request.url.endswith("/v1/chat/completions")
        assert call.system == SYSTEM["content"]
        assert call.reply_text == messages[turn]["content"]
        assert (call.input_tokens, call.output_tokens, call.sampling) == (0, 0, {})
    second = llm_call(llm[1])
    assert second is not None
    assert [(c.name, c.arguments, c.id) for c in second.reply_tool_calls] == [
        ("book_reservation", ARGS, "call_2")
    ]

    tools = [e for e in cassette.events if isinstance(e, ToolEvent)]
    assert [(t.name, t.args, t.effect, t.result, t.delta) for t in tools] == [
        ("get_user_details", {"user_id": "mia_li_3668"}, "read", '{"name": "Mia"}', None),
        ("book_reservation", ARGS, "write", '{"reservation_id": "HATHAT"}', None),
    ]

    footer = cassette.footer
    assert footer is not None
    assert (footer.status, footer.final_answer, footer.state_diff) == (
        "ok",
        "Booked: reservation HATHAT.",
        None,
    )
    usage = footer.usage
    assert (usage.llm_calls, usage.tool_calls, usage.input_tokens, usage.output_tokens) == (
        3,
        2,
        0,
        0,
    )
    assert footer.pins.model == "gpt-4o" and footer.pins.system_prompt_hash
    assert footer.pins.user == head.pins.user and footer.pins.tool_schema_hash is None


def test_the_trials_are_one_run_graded_by_the_recorded_reward(tmp_path: Path) -> None:
    records = [
        record(trial=0, reward=1.0),
        record(trial=1, reward=0.0),
        # Hit the step limit: no reward_info, and a fail whatever else.
        record(trial=2, reward=0.0, info={"task": {}, "reward_info": None}),
        record(
            task_id=4,
            reward=0.0,
            info={
                "reward_info": {"info": {"r_outputs": 0.0, "outputs": {"327": True, "1786": False}}}
            },
        ),
    ]
    result = do_import(tmp_path, write(tmp_path, records), run="imported")
    assert (result.run, result.cases, result.passed) == ("imported", 2, 1)
    store = Store(tmp_path / "results.db", create=False)
    run = store.run("imported")
    assert run is not None and run.finished
    assert run.pins["source"] == "tau-bench" and run.pins["model"] == "gpt-4o"
    trials = store.trials("imported")
    assert [(t.case_id, t.idx, t.verdict, t.score) for t in trials] == [
        ("tau-bench-airline-3", 0, "pass", 1.0),
        ("tau-bench-airline-3", 1, "fail", 0.0),
        ("tau-bench-airline-3", 2, "fail", 0.0),
        ("tau-bench-airline-4", 0, "fail", 0.0),
    ]
    first = trials[0]
    assert first.suite == "capability" and first.usage.steps == 3
    # Not in the file, so not made up.
    usage = first.usage
    assert [usage.input_tokens, usage.output_tokens, usage.latency, usage.cost] == [None] * 4
    assert first.tool_use is None and first.tags == ("tau-bench",)
    assert read_cassette(first.cassette).header.case_id == "tau-bench-airline-3"
    grades = [g for t in trials for g in t.grades]
    assert [(g.grader, g.verdict, g.score) for g in grades] == [
        ("tau-bench", "pass", 1.0),
        ("tau-bench", "fail", 0.0),
        ("tau-bench", "fail", 0.0),
        ("tau-bench", "fail", 0.0),
    ]
    assert [g.evidence for g in grades] == [
        ("reward 1.0; r_actions 1.0: the final database matches the gold actions' result",),
        ("reward 0.0; r_actions 0.0: the final database differs from the gold actions' result",),
        ("reward 0.0; reward_info null: the trial hit the step limit",),
        ("reward 0.0; r_outputs 0.0; outputs missing from the replies: 1786",),
    ]


def test_a_tool_call_left_unanswered_is_a_warning(tmp_path: Path) -> None:
    result = do_import(tmp_path, write(tmp_path, [record(traj=traj(answered=False))]))
    cassette = read_cassette(result.cassettes[0])
    assert [e.kind for e in cassette.events] == ["http", "tool", "http", "warning"]
    warning = cassette.events[-1]
    assert isinstance(warning, WarningEvent)
    assert warning.message == "tool call book_reservation (call_2) has no result in the trajectory"
    assert cassette.summary().final_answer == "Booking it now."  # the last assistant text


def test_model_and_domain_come_from_the_file_name_or_the_caller(tmp_path: Path) -> None:
    assert names_from_file("x/gpt-4o-airline.json") == ("gpt-4o", "airline")
    assert names_from_file("claude-3-5-sonnet-20240620-retail.json") == (
        "claude-3-5-sonnet-20240620",
        "retail",
    )
    assert names_from_file("trajectories.json") == (None, None)
    source = write(tmp_path, [record()], name="trajectories.json")
    with pytest.raises(ConfigError, match="pass --domain"):
        do_import(tmp_path, source)
    assert not (tmp_path / "results.db").exists()
    with pytest.raises(ConfigError, match="must be a plain name"):
        do_import(tmp_path, source, domain="../x")
    result = do_import(tmp_path, source, domain="retail")
    assert result.run == "tau-bench-trajectories"
    cassette = read_cassette(tmp_path / "cassettes" / "tau-bench-retail-3-0.cassette")
    assert cassette.header.pins.model is None  # unknown, not guessed
    first = cassette.events[0]
    assert isinstance(first, HttpEvent) and b'"model"' not in first.request.body


def _without_traj() -> Any:
    data = record()
    del data["traj"]
    return [data]


def _orphan_result() -> Any:
    messages = traj()
    messages[3] = {**messages[3], "tool_call_id": "call_9"}
    return [record(traj=messages)]


def _bad_arguments() -> Any:
    messages = traj()
    call = messages[2]["tool_calls"][0]
    messages[2] = {
        **messages[2],
        "tool_calls": [{**call, "function": {"name": "x", "arguments": "[1]"}}],
    }
    return [record(traj=messages)]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON (Expecting property name enclosed in double quotes"),
        ({"task_id": 1}, "Input should be a valid list; expected a tau-bench"),
        ([], "holds no trials; expected a tau-bench"),
        (_without_traj(), "(field [0].traj): Field required"),
        ([record(reward=2.0)], "(field [0].reward): Input should be less than or equal to 1"),
        ([record(traj=[{"role": "robot"}])], "(field [0].traj[0].role): Input should be"),
        ([record(), record()], "(field [1]): task 3 trial 0 is also record 0; each trial once"),
        (_orphan_result(), "(field [0].traj[3]): tool result 'call_9' answers no earlier call"),
        (_bad_arguments(), "(field [0].traj[2].tool_calls): the arguments of tool call call_1"),
    ],
    ids=[
        "not-json",
        "not-a-list",
        "empty",
        "no-traj",
        "reward",
        "role",
        "duplicate",
        "orphan-result",
        "arguments",
    ],
)
def test_bad_input_is_refused_before_anything_is_written(
    tmp_path: Path, content: Any, message: str
) -> None:
    source = tmp_path / "gpt-4o-airline.json"
    source.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(CaseFileError) as caught:
        do_import(tmp_path, source)
    assert str(caught.value).startswith(str(source))
    assert message in str(caught.value)
    assert not (tmp_path / "results.db").exists() and not (tmp_path / "cassettes").exists()


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(CaseFileError, match="no such file; check the path"):
        load_trajectories(tmp_path / "gone-airline.json")


def test_an_existing_run_or_cassette_is_never_overwritten(tmp_path: Path) -> None:
    source = write(tmp_path, [record(trial=0), record(trial=1, reward=0.0)])
    do_import(tmp_path, source)
    store = Store(tmp_path / "results.db", create=False)
    before = store.trials("tau-bench-gpt-4o-airline")
    with pytest.raises(ConfigError, match=r"exists in .*pass --run with a new name"):
        import_trajectories(source, tmp_path / "elsewhere", store)
    with pytest.raises(ConfigError, match=r"already holds 2 of the cassettes .* choose another"):
        do_import(tmp_path, source, run="again")
    assert store.runs() == ["tau-bench-gpt-4o-airline"]
    assert store.trials("tau-bench-gpt-4o-airline") == before
    assert not (tmp_path / "elsewhere").exists()


def test_the_published_file_loads_whole() -> None:
    if not DATA.is_file():
        pytest.skip(f"tau-bench data not found at {DATA} (it lives outside the repository)")
    trials = load_trajectories(DATA)
    assert len(trials) == 200
    assert len({t.task_id for t in trials}) == 50
    assert sorted({t.index for t in trials}) == [0, 1, 2, 3]
    assert sum(t.passed for t in trials) == 84
    assert sum(t.reward_info is None for t in trials) == 5
    assert not any(t.passed for t in trials if t.reward_info is None)
    # Every tool call of the file has its result: no warnings to make.
    assert not any(isinstance(s, str) for t in trials for s in t.steps)
