"""Walled Python agents forked from a zygote: imported once, each trial as if the first.

A zygote (``replay.agents._zygote``) imports the agent once in its sandbox and
forks a child per trial: what one trial leaves (a file in ``/tmp``, a module's
state) the next does not see; each trial's violations are its own; a trial past
its deadline or memory is an error and the next trial still runs.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from recorder import ViolationEvent
from replay import load_case, sandbox
from replay.agents import _zygote, unavailable
from replay.agents._command import ChildAgent
from replay.agents._zygote import supported
from replay.modes import NO_LLM_URL
from tests.helpers import HANG_GUARD_S

pytestmark = pytest.mark.skipif(
    unavailable() is not None or not supported(),
    reason=f"walls or their filter are unavailable here: {unavailable()}",
)


def _case(tmp_path: Path, name: str) -> Path:
    (tmp_path / "w.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"id: {name}\ninstruction: {name}\nfixture: w.sql\n")
    return path


def _trial(tmp_path: Path, agent: ChildAgent, name: str) -> object:
    return sandbox(
        load_case(_case(tmp_path, name)), agent, lambda conn: [], tmp_path / f"{name}.cassette",
        llm_base_url=NO_LLM_URL,
    )  # fmt: skip


def test_each_trial_forked_from_one_import_finds_nothing_of_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZYGOTE_SECRET", "sk_live_not_for_the_agent")
    monkeypatch.setenv("ZYGOTE_ALLOWED", "given")
    agent = ChildAgent("tests.e2e.zygote_agents:leave_traces", allow_env=("ZYGOTE_ALLOWED",))
    trials = [_trial(tmp_path, agent, f"t{i}") for i in range(3)]
    seen = [json.loads(t.trial.answer) for t in trials]  # type: ignore[attr-defined]
    assert [s["tmp"] for s in seen] == [False, False, False]
    assert [s["left"] for s in seen] == [[], [], []]  # /tmp, /var/tmp, /dev/shm, home
    assert {s["allowed"] for s in seen} == {"given"}  # --allow-env reaches the trial
    assert {s["path"] for s in seen} == {True}  # and its PATH
    assert [s["state"] for s in seen] == [[], [], []]
    assert len({s["imported_at"] for s in seen}) == 1  # one import, three trials
    assert {s["secret"] for s in seen} == {None}
    for trial in trials:
        events = trial.trial.cassette.events  # type: ignore[attr-defined]
        violations = [e.target for e in events if isinstance(e, ViolationEvent)]
        assert violations == ["10.9.9.9:80"]  # its own, once: not a neighbour's
        assert trial.outcome.verdict.value == "fail"  # type: ignore[attr-defined]


def test_an_agents_first_http_client_finds_its_transport_imported_by_the_zygote(
    tmp_path: Path,
) -> None:
    # httpx imports httpcore, h11 and certifi when its first client is made: the zygote
    # made (and closed) one, so no trial's process imports them again; it sent nothing.
    agent = ChildAgent("tests.e2e.zygote_agents:httpx_ready")
    trials = [_trial(tmp_path, agent, f"h{i}") for i in range(2)]
    assert [json.loads(t.trial.answer) for t in trials] == [  # type: ignore[attr-defined]
        {"missing": [], "made": True}
    ] * 2
    for trial in trials:
        assert trial.trial.cassette.events == []  # type: ignore[attr-defined]


def test_an_sdk_agents_first_calls_find_their_modules_and_headers_made_by_the_zygote(
    tmp_path: Path,
) -> None:
    # The OpenAI SDK imports `client.chat`'s modules on first use, and its first request
    # asks the platform (`uname -p`, a subprocess): the zygote did both, once.
    pytest.importorskip("openai", reason="the openai SDK is not installed")
    agent = ChildAgent("tests.e2e.zygote_sdk_agent:openai_ready")
    trials = [_trial(tmp_path, agent, f"o{i}") for i in range(2)]
    assert [json.loads(t.trial.answer) for t in trials] == [  # type: ignore[attr-defined]
        {"missing": [], "spawned": 0}
    ] * 2


def test_a_trial_past_its_deadline_is_an_error_and_the_next_one_runs(tmp_path: Path) -> None:
    late = _trial(tmp_path, ChildAgent("tests.e2e.zygote_agents:sleeps", timeout=2), "late")
    assert late.outcome.verdict.value == "error"  # type: ignore[attr-defined]
    assert any("deadline of 2 s" in e for e in late.outcome.evidence)  # type: ignore[attr-defined]
    assert late.outcome.cause.value == "limit"  # type: ignore[attr-defined]
    after = _trial(tmp_path, ChildAgent("tests.e2e.zygote_agents:leave_traces"), "after")
    assert json.loads(after.trial.answer)["tmp"] is False  # type: ignore[attr-defined]


def test_a_trial_over_its_memory_is_an_error(tmp_path: Path) -> None:
    agent = ChildAgent("tests.e2e.zygote_agents:hoards", memory_mb=200)
    trial = _trial(tmp_path, agent, "hoard")
    assert trial.outcome.verdict.value == "error"  # type: ignore[attr-defined]
    assert any("--trial-memory" in e for e in trial.outcome.evidence)  # type: ignore[attr-defined]


def test_an_agent_that_cannot_be_imported_is_one_line(tmp_path: Path) -> None:
    trial = _trial(tmp_path, ChildAgent("tests.e2e.zygote_agents:nowhere"), "missing")
    assert trial.outcome.verdict.value == "error"  # type: ignore[attr-defined]
    (said,) = [e for e in trial.outcome.evidence if "cannot be loaded" in e]  # type: ignore[attr-defined]
    assert "nowhere" in said and "\n" not in said


def test_a_zygote_that_ends_before_it_starts_is_an_error_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its interpreter cannot start (no standard library): said from its log, not waited for."""
    monkeypatch.setattr(_zygote, "READY_S", 10.0**6)  # (not waited for: it ended)
    failed: list[BaseException] = []
    trying = threading.Thread(
        target=lambda: _catch(failed, lambda: _zygote.take("-", {"PYTHONHOME": "/nowhere"})),
        daemon=True,
    )
    trying.start()
    trying.join(HANG_GUARD_S)
    assert not trying.is_alive(), "the zygote's end was not seen"
    (error,) = failed
    assert isinstance(error, _zygote.ZygoteFailed), error
    assert "did not start walled in: ModuleNotFoundError: No module named 'encodings'" in str(
        error
    ) and "\n" not in str(error)


def _catch(into: list[BaseException], call: Callable[[], object]) -> None:
    try:
        call()
    except BaseException as exc:  # (what the thread raised, for the test to look at)
        into.append(exc)


_LEAVE = """
import os, subprocess, sys
if sys.stdin.read().strip() == "spawn":
    daemon = subprocess.Popen(["sleep", "60"], start_new_session=True)
    open("/tmp/left", "w").close()
    print(daemon.pid)
else:
    print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), os.path.exists("/tmp/left"))
"""


def test_a_program_s_daemon_and_files_do_not_outlive_its_trial(tmp_path: Path) -> None:
    """Programs are forked from a zygote too: what one trial leaves is gone for the next."""
    from replay import AgentCommand

    agent = AgentCommand((sys.executable, "-c", _LEAVE), isolation="process")
    (tmp_path / "w.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    answers = []
    for name in ("spawn", "look"):
        (tmp_path / f"{name}.yaml").write_text(f"id: {name}\ninstruction: {name}\nfixture: w.sql\n")
        trial = sandbox(
            load_case(tmp_path / f"{name}.yaml"), agent, lambda conn: [],
            tmp_path / f"{name}.cassette", llm_base_url=NO_LLM_URL,
        )  # fmt: skip
        answers.append(trial.trial.answer or "")
    daemon = int(answers[0])
    pids, left = answers[1].rsplit(" ", 1)
    assert daemon not in json.loads(pids), answers  # stopped with its trial (it left the group)
    assert left == "False"


_PLANT = """
import ctypes, glob, os, socket
(folder,) = glob.glob("TMP/replay-zygote-*/rw/replay-walls-*")  # its trial's, bound in
for name in ("out", "err", "answer.json", "hosts"):
    path = os.path.join(folder, name)
    try:
        os.unlink(path)
    except OSError:
        pass
os.symlink("/proc/self/environ", os.path.join(folder, "out"))  # the harness's, if it followed
os.mkfifo(os.path.join(folder, "err"))  # a read that would never end
libc = ctypes.CDLL(None, use_errno=True)
with socket.socket() as conn:  # an address no one can read: refused, and the watch goes on
    libc.connect(conn.fileno(), ctypes.c_void_p(0xFFFFFFFFFFFFFF00), 16)
port = int(os.environ["OPENAI_BASE_URL"].split(":")[2].split("/")[0])
with socket.create_connection(("127.0.0.1", port), timeout=5):
    pass  # the trial's own endpoint still answers
"""


def test_what_a_program_plants_in_its_folder_is_never_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Links and FIFOs where the harness reads a trial's output are not followed."""
    from replay import AgentCommand

    monkeypatch.setenv("HARNESS_ONLY", "sk_live_harness_0009")
    plant = _PLANT.replace("TMP", tempfile.gettempdir())
    agent = AgentCommand((sys.executable, "-c", plant), isolation="process", timeout=20)
    started = time.monotonic()
    trial = _trial(tmp_path, agent, "plant")
    assert time.monotonic() - started < HANG_GUARD_S  # no read hung on the FIFO
    assert "sk_live_harness_0009" not in (trial.trial.answer or "")  # type: ignore[attr-defined]
    events = trial.trial.cassette.events  # type: ignore[attr-defined]
    assert "connect other:an address that could not be read" in {
        f"{e.action} {e.target}" for e in events if isinstance(e, ViolationEvent)
    }
    assert trial.outcome.cause is None or trial.outcome.cause.value != "agent", (  # type: ignore[attr-defined]
        trial.outcome.evidence  # type: ignore[attr-defined]
    )
