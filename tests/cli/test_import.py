"""`replay import tau-bench-trajectories`: gpt-4o's 200 airline trials, reported as published.

The data file lives outside the repository (../shared/external/tau-bench); the tests
that need it skip when it is absent.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO, replay

DATA = (REPO.parent / "shared" / "external" / "tau-bench" / "gpt-4o-airline.json").resolve()
RUN = "tau-bench-gpt-4o-airline"
PUBLISHED = {"1": 0.420, "2": 0.273, "3": 0.220, "4": 0.200}
"""pass^k of this file on the tau-bench leaderboard (airline, gpt-4o, tool-calling agent)."""


def assert_lines(output: str, patterns: list[str]) -> None:
    lines = output.splitlines()
    position = 0
    for pattern in patterns:
        while position < len(lines) and not fnmatch.fnmatch(lines[position], pattern):
            position += 1
        assert position < len(lines), f"no line matching {pattern!r} (in order) in:\n{output}"
        position += 1


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    if not DATA.is_file():
        pytest.skip(f"tau-bench data not found at {DATA} (it lives outside the repository)")
    data: list[dict[str, Any]] = json.loads(DATA.read_text())
    return data


@pytest.fixture(scope="module")
def imported(records: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store the whole file was imported into (its cassettes beside it)."""
    where = tmp_path_factory.mktemp("tau-bench")
    store = where / "results.db"
    code, out, err = replay(
        "import",
        "tau-bench-trajectories",
        str(DATA),
        "--out",
        str(where / "cassettes"),
        "--store",
        str(store),
    )
    assert (code, err) == (0, ""), err
    assert out == (
        f"imported 200 trials of 50 cases into run {RUN} (84 pass, 116 fail): cassettes in "
        f"{where / 'cassettes'}, store {store}; see `replay report {RUN}`\n"
    )
    return store


def cassette(store: Path, task: int, trial: int) -> Path:
    return store.parent / "cassettes" / f"tau-bench-airline-{task}-{trial}.cassette"


def trial_of(records: list[dict[str, Any]], task: int, trial: int) -> dict[str, Any]:
    return next(r for r in records if (r["task_id"], r["trial"]) == (task, trial))


def last_text(record: dict[str, Any]) -> str:
    return next(
        m["content"] for m in reversed(record["traj"]) if m["role"] == "assistant" and m["content"]
    )


def test_report_json_gives_the_published_pass_hat(imported: Path) -> None:
    code, out, _ = replay("report", RUN, "--store", str(imported), "--json")
    assert code == 0
    data = json.loads(out)
    suite = data["suite"]
    assert {k: round(v, 3) for k, v in suite["pass_hat"].items()} == PUBLISHED
    assert suite["verdicts"] == {
        "pass": 84,
        "fail": 116,
        "unknown": 0,
        "unsupported": 0,
        "error": 0,
    }
    assert len(data["cases"]) == 50
    assert {(c["suite"], c["n"]) for c in data["cases"]} == {("capability", 4)}
    assert data["pins"]["source"] == "tau-bench" and data["pins"]["model"] == "gpt-4o"


def test_report_prints_the_published_pass_hat(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # as in a CI log: lines are not wrapped
    code, out, _ = replay("report", RUN, "--store", str(imported))
    assert code == 0
    assert_lines(
        out,
        [
            f"run {RUN}",
            "*tau-bench-airline-0 *capability*4*fail 4*",
            # The published figures, each with its interval over the 50 cases (fnmatch: [[] is [).
            "suite pass^k (95% interval): k=1 0.420 [[]0.322, 0.525]  k=2 0.273 [[]0.178, 0.394]  "
            "k=3 0.220 [[]0.129, 0.349]  k=4 0.200 [[]0.111, 0.334]",
            "pass^1 standard error 0.052 clustered by case (0.035 if every trial were independent)",
            "trials: pass 84, fail 116",
            "tau-bench-airline-9 failed because:",
            "  2 x tau-bench: reward 0.0; reward_info null: the trial hit the step limit",
        ],
    )


def test_report_html_writes_a_page(imported: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    code, out, _ = replay("report", RUN, "--store", str(imported), "--html", str(page))
    assert (code, out) == (0, f"wrote {page}\n")
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert f"<h1>run {RUN}</h1>" in html and "tau-bench-airline-49" in html
    assert "get_reservation_details" in html  # the transcripts are in it


def test_show_tells_the_trial(imported: Path, records: list[dict[str, Any]]) -> None:
    path = cassette(imported, 0, 0)
    code, out, err = replay("show", str(path))
    assert (code, err) == (0, "")
    first_user = trial_of(records, 0, 0)["traj"][1]["content"]
    answer = last_text(trial_of(records, 0, 0)).splitlines()[0]
    assert_lines(
        out,
        [
            f"{path}  case tau-bench-airline-0  trial 0",
            "1. LLM openai gpt-4o *",
            "   system: # Airline Agent Policy",
            f"   user: {first_user}",
            '   assistant calls get_user_details({"user_id": "mia_li_3668"})',
            "*. tool get_user_details(user_id='mia_li_3668') read *",
            "outcome ok",
            f"  final answer: {answer}",
            "  usage: * LLM calls (0 in / 0 out tokens; * calls reported no usage: a lower bound),"
            " * tool calls, * HTTP calls",
            "*model*gpt-4o*",
            '*user*{"source": "tau-bench"*',
        ],
    )


def test_show_json_holds_every_turn_and_call(imported: Path, records: list[dict[str, Any]]) -> None:
    source = trial_of(records, 0, 1)
    code, out, _ = replay("show", "--json", str(cassette(imported, 0, 1)))
    assert code == 0
    data = json.loads(out)
    assert data["complete"] is True
    assert (data["header"]["case_id"], data["header"]["trial"]) == ("tau-bench-airline-0", 1)
    events = data["events"]
    turns = [m for m in source["traj"] if m["role"] == "assistant"]
    calls = [c for m in turns for c in m.get("tool_calls") or []]
    assert [e["llm"]["reply_text"] for e in events if e["kind"] == "http"] == [
        m["content"] for m in turns
    ]
    assert [(e["name"], e["args"]) for e in events if e["kind"] == "tool"] == [
        (c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls
    ]
    results = [m["content"] for m in source["traj"] if m["role"] == "tool"]
    assert [e["result"] for e in events if e["kind"] == "tool"] == results
    assert data["footer"]["final_answer"] == last_text(source)
    assert data["footer"]["pins"]["user"]["reward"] == str(source["reward"])


def test_diff_names_the_first_differing_step(imported: Path, records: list[dict[str, Any]]) -> None:
    def calls(trial: int) -> list[tuple[str, Any]]:
        return [
            (c["function"]["name"], json.loads(c["function"]["arguments"]))
            for m in trial_of(records, 0, trial)["traj"]
            for c in m.get("tool_calls") or []
        ]

    a, b = calls(0), calls(1)
    step = next(i for i, (x, y) in enumerate(zip(a, b, strict=False), 1) if x != y)
    paths = [str(cassette(imported, 0, 0)), str(cassette(imported, 0, 1))]
    code, out, _ = replay("diff", "--json", *paths)
    divergence = json.loads(out)["divergence"]
    assert code == 0 and divergence["call"] == step
    # Named by the steps `replay show` gives the call (the LLM turns count too).
    shown = divergence["step_a"]
    _, transcript, _ = replay("show", paths[0])
    assert f"\n{shown}. tool {a[step - 1][0]}(" in transcript
    code, out, _ = replay("diff", *paths)
    assert code == 0
    assert out.startswith(f"first divergence step {shown}")
    assert f": A called {a[step - 1][0]}(" in out


def test_importing_again_into_the_run_is_refused(imported: Path, tmp_path: Path) -> None:
    code, out, err = replay(
        "import",
        "tau-bench-trajectories",
        str(DATA),
        "--out",
        str(tmp_path / "again"),
        "--store",
        str(imported),
    )
    assert (code, out) == (2, "")
    assert err == (
        f"error: run '{RUN}' exists in {imported}; an import never adds to a run: "
        "pass --run with a new name\n"
    )
    assert not (tmp_path / "again").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("this is not json", "is not JSON (Expecting value: line 1 column 1 (char 0)); expected"),
        (
            json.dumps([{"task_id": 0, "trial": 0, "reward": 1.0, "info": {}}]),
            "(field [0].traj): Field required; expected a tau-bench historical trajectories "
            "file: a JSON list of trials, each with task_id, trial, reward, info and traj",
        ),
    ],
    ids=["not-json", "no-traj"],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, content: str, message: str) -> None:
    source = tmp_path / "gpt-4o-airline.json"
    source.write_text(content)
    store = tmp_path / "results.db"
    code, out, err = replay(
        "import",
        "tau-bench-trajectories",
        str(source),
        "--out",
        str(tmp_path / "cassettes"),
        "--store",
        str(store),
    )
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {source}") and err.count("\n") == 1
    assert message in err
    assert not store.exists() and not (tmp_path / "cassettes").exists()


def test_help_lists_the_importer() -> None:
    code, out, _ = replay("import", "--help")
    assert code == 0 and "tau-bench-trajectories" in out
    code, out, _ = replay("import", "tau-bench-trajectories", "--help")
    assert code == 0 and "--out" in out and "--run" in out and "--store" in out
