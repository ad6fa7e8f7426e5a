"""The same run on this process, worker processes, Ray and Dask: same verdicts, same report."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from examples.shop import refund_policy
from recorder import read_cassette
from replay import AgentSettings, ExecutorSettings, RunSpec, Store
from replay.modes import NO_LLM_URL
from replay.runs import _dask, _driver, _ray, _work
from replay.stub_llm import StubLLM
from tests.helpers import HANG_GUARD_S, REPO, replay

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
TOOLS = ["--tools", "examples.shop:make_tools"]

KILLER = '''
"""An agent that ends its own process on cases whose instruction says so.

First it deletes the fixture file: the workers that replace the dead one must get
the world from the bytes the driver shipped, not from a file.
"""
import os
import signal

from examples.shop import agent as shop_agent

FIXTURE = {fixture!r}


def agent(instruction, env):
    if "end your process" in instruction:
        if FIXTURE and os.path.exists(FIXTURE):
            os.remove(FIXTURE)
        os.kill(os.getpid(), signal.SIGKILL)
    return shop_agent(instruction, env)
'''


def verdicts(store: str, run: str) -> dict[tuple[str, int], str]:
    return {(t.case_id, t.idx): t.verdict for t in Store(store).trials(run)}


def report(store: str, run: str) -> dict[str, Any]:
    _, out, _ = replay("report", run, "--store", store, "--json")
    data = json.loads(out)
    for case in data["cases"]:  # timings and paths differ from run to run; the rest must not
        case.pop("failing_cassette")
        case["tool_use"].pop("latency")
    data["suite"]["tool_use"].pop("latency")
    for trial in data["trials"]:
        trial.pop("cassette")
        trial.pop("latency")
    for group in data["causes"]:
        for trial in group["trials"]:
            trial.pop("cassette")
    data.pop("pins")
    data.pop("run")
    return data


@pytest.fixture
def flaky() -> Iterator[StubLLM]:
    """A deterministic flaky model: the same seed and requests, the same flakes per trial."""
    with StubLLM(refund_policy(), seed=7, flake_rate=0.06) as llm:
        yield llm


def run(
    store: str, name: str, llm: StubLLM, *args: str, agent: str = "examples.shop:agent"
) -> None:
    code, _, err = replay(
        "run", str(CASE), "--run", name, "--store", store, "--llm-url", llm.openai_base_url,
        "--agent", agent, *TOOLS, *args,
        "--measure",  # (flaky trials fail: the runs are compared, executor against executor)
    )  # fmt: skip
    assert code == 0, err


@pytest.mark.slow
def test_worker_processes_give_the_same_verdicts_and_report(tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    # Sequential trials against one server: the flakes fall the same way in both runs.
    with StubLLM(refund_policy(), seed=7, flake_rate=0.06) as llm:
        run(store, "here", llm, "-k", "6")
    with StubLLM(refund_policy(), seed=7, flake_rate=0.06) as llm:
        run(store, "processes", llm, "-k", "6", "--workers", "2", "-j", "1")
    assert verdicts(store, "processes") == verdicts(store, "here")
    assert set(verdicts(store, "here").values()) == {"pass", "fail"}  # the flakes bite
    assert report(store, "processes") == report(store, "here")
    for trial in Store(store).trials("processes"):  # the cassettes came back from the workers
        assert Path(trial.cassette).is_file()
        assert Path(trial.cassette).parent == tmp_path / "cassettes" / "processes"


ENV_AGENT = """
import os


def agent(instruction, env):
    return os.environ.get("REPLAY_TEST_MARK", "unset") + " in " + os.getcwd()
"""


def test_worker_processes_take_the_environment_the_driver_has_as_each_run_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Workers fork from one fork server a process keeps: a variable set after the first
    # run (an agent's key in a notebook), or a folder changed to, still reaches the next
    # run's workers.
    (tmp_path / "envagent.py").write_text(ENV_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    store = str(tmp_path / "r.db")
    answers = []
    for mark in ("first", "second"):
        monkeypatch.setenv("REPLAY_TEST_MARK", mark)
        (tmp_path / mark).mkdir()
        monkeypatch.chdir(tmp_path / mark)
        code, _, err = replay(
            "run", str(CASE), "--run", mark, "--store", store, "--llm-url", NO_LLM_URL,
            "--agent", "envagent:agent", *TOOLS, "--workers", "2", "--isolation", "none",
            "--no-llm-check",
        )  # fmt: skip
        assert code in (0, 1), err  # (the agent does nothing: the case's checks fail)
        (trial,) = Store(store).trials(mark)
        answers.append(read_cassette(trial.cassette).summary().final_answer)
    assert answers == [f"first in {tmp_path / 'first'}", f"second in {tmp_path / 'second'}"]


RAY = pytest.param("ray", marks=pytest.mark.xdist_group("ray"))
"""The executor ``ray`` as a parameter: its tests share one process (``ray_cluster``)."""


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["local", RAY, "dask"])
def test_a_trial_that_kills_its_worker_is_retried_then_an_error_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: str, request: pytest.FixtureRequest
) -> None:
    if executor != "local":
        cluster_scratch = request.getfixturevalue(CLUSTER[executor])
        if cluster_scratch is not None:  # Ray's workers keep theirs in the cluster's folder
            monkeypatch.setenv(_work.SCRATCH_ENV, str(cluster_scratch))
    case = yaml.safe_load(CASE.read_text())
    fixture = tmp_path / "fixture.sql"  # a copy the killer deletes (Python 3.10: workers read it)
    fixture.write_bytes((CASE.parent / case["fixture"]).read_bytes())
    shipped = hasattr(sqlite3.Connection, "serialize")
    (tmp_path / "agents").mkdir()
    killer = KILLER.format(fixture=str(fixture) if shipped else "")
    (tmp_path / "agents" / "killer.py").write_text(textwrap.dedent(killer))
    monkeypatch.syspath_prepend(str(tmp_path / "agents"))
    case["fixture"] = str(fixture)
    (tmp_path / "refund.yaml").write_text(yaml.safe_dump(case))
    deadly = {**case, "id": "deadly", "instruction": "Refund order 4812, then end your process."}
    (tmp_path / "deadly.yaml").write_text(yaml.safe_dump(deadly))
    store = str(tmp_path / "r.db")
    scratch_before = _scratch()
    with StubLLM(refund_policy()) as llm:
        code, _, err = replay(
            "run", str(tmp_path / "refund.yaml"), str(tmp_path / "deadly.yaml"), "--run", "r",
            "--store", store,
            "--llm-url", llm.openai_base_url, "--agent", "killer:agent", *TOOLS,
            "-k", "3", "--workers", "2", "-j", "4", "--executor", executor,
            "--isolation", "none",  # (an agent in the worker's process, that ends it)
            *(["--ship", str(tmp_path / "agents")] if executor == "ray" else []),
        )  # fmt: skip
    assert code == 3, err  # the trial that killed its worker: the harness's error
    found = verdicts(store, "r")
    assert {k: v for k, v in found.items() if k[0] == "refund-4812"} == {
        ("refund-4812", i): "pass" for i in range(3)
    }  # the innocent neighbours keep their verdicts
    assert {k: v for k, v in found.items() if k[0] == "deadly"} == {
        ("deadly", i): "error" for i in range(3)
    }
    deadly = [t for t in Store(store).trials("r") if t.case_id == "deadly"]
    assert [t.cause for t in deadly] == ["harness"] * 3  # not the agent's verdict: it died
    assert all("died 2 times" in t.cause_detail[0] for t in deadly)
    # The dead workers' scratch folders (their trials in flight) went with the run, or,
    # where a killed worker was still exiting when it ended (a loaded machine), go with
    # the next sweep (a worker starting, or a run ending), as sweep_scratch says.
    for _ in range(50):
        if _scratch() == scratch_before:
            break
        time.sleep(0.2)
        _work.sweep_scratch()
    assert _scratch() == scratch_before


def _scratch() -> set[Path]:
    return set(_work.scratch_root().glob("replay-work-*"))


def test_a_dead_workers_scratch_folders_are_swept_a_live_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_work.SCRATCH_ENV, str(tmp_path))
    dead = subprocess.Popen(["true"])  # a process that has exited: its pid is free
    dead.wait()
    folders = [
        tmp_path / f"replay-work-{dead.pid}-abc",  # its worker died mid-trial
        tmp_path / f"replay-work-{os.getpid()}-def",  # a live worker's trial in flight
        tmp_path / "replay-work-olderstyle",  # not ours to judge
    ]
    for folder in folders:
        folder.mkdir()
        (folder / "t-0.cassette").write_bytes(b"x")
    _work.sweep_scratch()
    assert [f.exists() for f in folders] == [False, True, True]


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One small local Ray cluster for this module's Ray tests; its workers' scratch folder.

    Its tests are one ``xdist_group`` (``RAY``): they run in turn on one test process,
    and the cluster stops after them (its idle daemons took 7% of a core). Its processes
    take their environment as it starts, maybe before a test's ``REPLAY_SCRATCH`` is set
    (``tests/conftest.py``): their scratch folders go in a folder of the cluster's own.
    """
    ray = pytest.importorskip(
        "ray", reason="ray is not installed (pip install 'agent-replay[ray]')"
    )
    scratch = tmp_path_factory.mktemp("ray-scratch")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        patch.setenv(_work.SCRATCH_ENV, str(scratch))
        options = {"include_dashboard": False, "log_to_driver": False}
        ray.init(num_cpus=2, object_store_memory=2**28, **options)
    yield scratch
    ray.shutdown()


@pytest.mark.xdist_group("ray")
def test_ray_replaces_the_actor_that_died_and_keeps_the_live_one(ray_cluster: Path) -> None:
    import ray

    spec = RunSpec(
        name="r", cases=[str(CASE)], mode="sandbox", trials=1,
        agent=AgentSettings("examples.shop:agent", "examples.shop:make_tools"),
        executor=ExecutorSettings("ray", workers=2, concurrency=2),
    )  # fmt: skip
    backend = _ray.on_ray(spec, dict)
    try:
        before = [ray.get(a.ping.remote(), timeout=HANG_GUARD_S) for a in backend._actors]
        os.kill(before[0], signal.SIGKILL)  # (as an agent ending its process does)
        backend.restart()
        after = [ray.get(a.ping.remote(), timeout=HANG_GUARD_S) for a in backend._actors]
    finally:
        backend.close()
    assert before[1] in after  # alive and warm: kept
    assert before[0] not in after and len(set(after)) == 2  # the dead one: a new actor


@pytest.fixture
def dask_installed() -> None:
    """Dask's tests start their own local cluster (one per run); they need Dask only."""
    pytest.importorskip(
        "distributed", reason="dask is not installed (pip install 'agent-replay[dask]')"
    )


CLUSTER = {"ray": "ray_cluster", "dask": "dask_installed"}
"""What each cluster executor's tests need in place."""


@pytest.mark.slow
@pytest.mark.parametrize("executor", [RAY, "dask"])
def test_a_cluster_gives_the_same_verdicts_and_report_as_local(
    tmp_path: Path, executor: str, request: pytest.FixtureRequest
) -> None:
    request.getfixturevalue(CLUSTER[executor])
    store = str(tmp_path / "r.db")
    with StubLLM(refund_policy(), seed=7, flake_rate=0.06) as llm:
        run(store, "here", llm, "-k", "6")
    with StubLLM(refund_policy(), seed=7, flake_rate=0.06) as llm:
        run(store, executor, llm, "-k", "6", "--executor", executor, "--workers", "1", "-j", "1")
    assert verdicts(store, executor) == verdicts(store, "here")
    assert report(store, executor) == report(store, "here")


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_ray_runs_an_agent_the_driver_cannot_import(tmp_path: Path, ray_cluster: Path) -> None:
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "remote_agent.py").write_text(
        "from examples.shop import agent as shop_agent\n\n\n"
        "def agent(instruction, env):\n    return shop_agent(instruction, env)\n"
    )
    import importlib.util

    assert importlib.util.find_spec("remote_agent") is None  # not on the driver's path
    store = str(tmp_path / "r.db")
    with StubLLM(refund_policy()) as llm:
        run(
            store, "shipped", llm, "-k", "2", "--executor", "ray", "--workers", "2", "-j", "2",
            "--ship", str(shipped), agent="remote_agent:agent",
        )  # fmt: skip
    assert set(verdicts(store, "shipped").values()) == {"pass"}


@pytest.mark.slow
def test_review_in_worker_processes_points_at_the_recorded_cassettes(tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    code, _, err = replay(
        "run", str(CASE), "--run", "r", "--store", store, "--mode", "review",
        "--cassettes", str(REPO / "cassettes"), "--workers", "2",
    )  # fmt: skip
    assert code == 0, err
    (trial,) = Store(store).trials("r")
    assert trial.verdict == "pass"
    assert trial.cassette == str(REPO / "cassettes" / "refund-4812.cassette")


ASYNC_AGENT = """
import httpx


async def agent(instruction, env):
    async with httpx.AsyncClient(base_url=env.llm_base_url) as client:
        for n in range(10):
            body = {"model": "m", "messages": [{"role": "user", "content": str(n)}]}
            (await client.post("chat/completions", json=body)).raise_for_status()
    env.call_tool("note", {"text": instruction})
    return "done"
"""


@pytest.mark.parametrize("workers", ["1", "2"])
def test_async_agents_run_as_tasks_of_one_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    (tmp_path / "async_notes.py").write_text(ASYNC_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "fixture.sql").write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);")
    (tmp_path / "case.yaml").write_text(
        "id: notes\ninstruction: Take a note.\nfixture: fixture.sql\n"
        "assert:\n  - notes.count() == 1\n"
    )
    store = str(tmp_path / "r.db")
    with StubLLM() as llm:
        code, _, err = replay(
            "run", str(tmp_path / "case.yaml"), "--run", "r", "--store", store, "-k", "6",
            "-j", "3", "--workers", workers, "--llm-url", llm.openai_base_url,
            "--agent", "async_notes:agent", "--tools", "bench._trial_agent:tools",
        )  # fmt: skip
        calls = len(llm.requests)
    assert code == 0, err
    assert set(verdicts(store, "r").values()) == {"pass"} and calls == 60
    for trial in Store(store).trials("r"):  # each trial's cassette holds its own 10 calls
        assert trial.usage.steps == 10


@pytest.mark.slow
def test_dask_workers_that_replace_a_dead_one_get_the_shipped_fixtures(
    dask_installed: None,
) -> None:
    from replay import ExecutorSettings, RunSpec
    from replay.runs._dask import OnDask
    from replay.runs._work import blob
    from replay.worlds._world import load_fixture

    path = REPO / "examples" / "shop" / "fixture.sql"
    spec = RunSpec(name="d", cases=[], mode="sandbox", executor=ExecutorSettings("dask", 1, 2))
    backend = OnDask(spec, {str(path): blob(load_fixture(path))})
    client = backend._client
    try:
        (before,) = client.run(_shipped).values()
        assert before[1] == [str(path)]
        with contextlib.suppress(Exception):  # the worker dies answering
            client.run(_die)
        deadline = time.monotonic() + 60
        after = before
        while after[0] == before[0] and time.monotonic() < deadline:
            time.sleep(0.5)
            with contextlib.suppress(Exception):
                after = next(iter(client.run(_shipped).values()), before)
        assert after[0] != before[0], "the nanny did not start a new worker"
        assert after[1] == [str(path)]  # the new worker has the fixture without reading a file
    finally:
        backend.close()


def _shipped() -> tuple[int, list[str]]:
    from replay.worlds._world import _shipped

    return os.getpid(), sorted(_shipped)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.slow
def test_a_dask_cluster_left_without_workers_fails_the_run_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dask_installed: None
) -> None:
    # Dask waits for workers forever; a cluster whose workers all died and were not
    # replaced (a nanny does not restart a worker killed while it starts) hung the run.
    from distributed import LocalCluster

    monkeypatch.setattr(_driver, "WATCH_S", 0.5)
    monkeypatch.setattr(_dask, "NO_WORKERS_S", 2.0)
    store = str(tmp_path / "r.db")
    with (
        LocalCluster(
            n_workers=0,
            processes=True,
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": ":0"},  # not 8787: tests run side by side
        ) as cluster,
        StubLLM(refund_policy()) as llm,
    ):
        code, _, err = replay(
            "run", str(CASE), "--run", "r", "--store", store, "--llm-url", llm.openai_base_url,
            "--agent", "examples.shop:agent", *TOOLS, "--executor", "dask",
            "--dask-address", cluster.scheduler_address,
        )  # fmt: skip
    assert code == 2, err
    assert err.startswith("error: the Dask cluster has had no workers for 2 s")
    assert err.count("\n") == 1
    assert Store(store).run("r") is not None  # the run is there to --resume


def test_a_zombie_workers_scratch_folder_is_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that died but is not reaped yet (its parent has not waited) is dead."""
    monkeypatch.setenv(_work.SCRATCH_ENV, str(tmp_path))
    zombie = subprocess.Popen(["true"])
    for _ in range(100):  # exited, never waited for: a zombie
        if Path(f"/proc/{zombie.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
            break
        time.sleep(0.02)
    folder = tmp_path / f"replay-work-{zombie.pid}-abc"
    folder.mkdir()
    _work.sweep_scratch()
    zombie.wait()
    assert not folder.exists()
