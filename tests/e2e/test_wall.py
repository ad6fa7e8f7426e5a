"""The wall all the way round: a walled agent sees only what it is given and exhausts nothing.

A project of the user's (its agent package, its cases, its store under
``.replay/``, a note beside them) is run with ``replay run --isolation process``
from its own folder. Inside, the agent runs as a uid other than 0; the store,
the case folder's other files, the project's note, ``/etc/shadow`` and root's
home are not in its filesystem: every read fails, and is recorded as a
violation. Under ``--trial-memory 256``, filling ``/tmp`` or ``/dev/shm`` ends
the trial as a ``memory`` limit; a fork loop ends at ``--trial-pids``; nothing
of either is left on the host.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from recorder import ViolationEvent, read_cassette
from replay import Store
from replay.agents import unavailable
from tests.helpers import replay

pytestmark = [
    pytest.mark.skipif(
        unavailable() is not None, reason=f"isolation is unavailable here: {unavailable()}"
    ),
    pytest.mark.slow,
]
AGENTS = Path(__file__).with_name("wall_agents.py")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's project: ``wallproject/`` (code), ``cases/``, ``.replay/``, a note; cwd there."""
    root = tmp_path / "project"
    (root / "wallproject").mkdir(parents=True)
    shutil.copy(AGENTS, root / "wallproject" / "wall.py")
    (root / "wallproject" / "__init__.py").write_text("")
    (root / "cases").mkdir()
    (root / "cases" / "notes.sql").write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY);\n")
    (root / "cases" / "other.yaml").write_text("id: other\ninstruction: someone else's case\n")
    (root / "notes.txt").write_text("the project's own notes")
    (root / ".replay").mkdir()
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(root))
    return root


def _sleeping(tag: str) -> list[str]:
    """The processes ``wall_agents.leaves`` starts for ``tag``, still running on the host."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        found += [line] if f"sleep 987.{tag}" in line else []
    return found


def _case(project: Path, case_id: str, instruction: str) -> str:
    path = project / "cases" / f"{case_id}.yaml"
    path.write_text(f"id: {case_id}\ninstruction: {json.dumps(instruction)}\nfixture: notes.sql\n")
    return str(path)


def _run(project: Path, case: str, agent: str, *options: str) -> tuple[int, str]:
    code, _, err = replay(
        "run", case, "--run", Path(case).stem, "--store", ".replay/results.db",
        "--agent", f"wallproject.wall:{agent}", "--tools", "wallproject.wall:make_tools",
        "--isolation", "process",
        "--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check", *options,
    )  # fmt: skip
    return code, err


def test_a_walled_agent_reads_nothing_of_the_host_and_is_no_root(project: Path) -> None:
    home = os.path.expanduser("~")
    mine = Path(home) / f".replay-wall-test-{os.getpid()}"
    mine.write_text("the harness user's own file")
    (project / ".replay" / "results.db").write_bytes(b"")  # (made by the run too)
    given = {
        "store": str(project / ".replay" / "results.db"),
        "sibling": str(project / "cases" / "other.yaml"),
        "note": str(project / "notes.txt"),
        "shadow": "/etc/shadow",
        "home": str(mine),
    }
    try:
        code, err = _run(project, _case(project, "reads", json.dumps(given)), "reads")
    finally:
        mine.unlink()
    assert code == 1, err  # the violations fail it
    (trial,) = Store(".replay/results.db").trials("reads")
    found = json.loads(read_cassette(trial.cassette).footer.final_answer or "{}")
    assert found["uid"] != 0
    assert found["here"] == ["wallproject"]  # of the project, its code alone
    assert {name: found[name] for name in given} == dict.fromkeys(
        given, "failed: FileNotFoundError"
    )
    events = read_cassette(trial.cassette).events
    seen = {(e.action, e.target) for e in events if isinstance(e, ViolationEvent)}
    assert {("read", path) for path in given.values()} <= seen, seen


def test_each_trial_starts_in_its_working_directory_as_it_was(project: Path) -> None:
    """The project is in pytest's temporary folder (/dev/shm or /tmp: a sandbox's private
    folders): its working directory is made there, and kept, emptied, from one trial of a
    zygote to the next."""
    code, err = _run(project, _case(project, "scribbles", "-"), "scribbles", "-k", "3")
    assert code == 0, err
    trials = Store(".replay/results.db").trials("scribbles")
    assert [t.verdict.value for t in trials] == ["pass"] * 3
    for trial in trials:  # (none sees what the one before left)
        assert read_cassette(trial.cassette).footer.final_answer == '["wallproject"]'
    assert not (project / "left-by-a-trial").exists()


@pytest.mark.xdist_group("wall-kids")  # (each looks for the processes both start)
@pytest.mark.parametrize("folder", ["/tmp", "/dev/shm"])
def test_filling_a_private_tmpfs_is_a_memory_limit(project: Path, folder: str) -> None:
    before = set(os.listdir("/dev/shm"))
    code, err = _run(
        project,
        _case(project, "fill", f"fill {folder} 512 {TAG}"),
        "fill",
        "--trial-memory",
        "256",
    )
    assert code == 1, err
    (trial,) = Store(".replay/results.db").trials("fill")
    assert (trial.verdict, trial.cause, trial.guards) == ("error", "limit", ("memory",))
    assert "--trial-memory" in trial.cause_detail[0]
    assert set(os.listdir("/dev/shm")) <= before  # nothing of it is on the host
    assert not _kids()  # (the process it started before filling: stopped with it)


@pytest.mark.xdist_group("wall-kids")
def test_a_fork_loop_ends_at_the_pid_limit_and_leaves_nothing_running(project: Path) -> None:
    before = set(os.listdir("/dev/shm"))
    code, err = _run(
        project, _case(project, "forks", f"forks 2000 {TAG}"), "forks", "--trial-pids", "64"
    )
    assert code == 1, err
    (trial,) = Store(".replay/results.db").trials("forks")
    assert (trial.verdict, trial.cause, trial.guards) == ("error", "limit", ("pids",))
    assert "--trial-pids" in trial.cause_detail[0]
    assert not _kids()
    assert set(os.listdir("/dev/shm")) <= before


TAG = f"{os.getpid() % 10**8}"
"""The wall agents' processes of this test process (``rwk-TAG``): another run on the
machine has its own."""


def _kids() -> list[str]:
    """The processes this test's wall agents started (``rwk-TAG``) still running."""
    left = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            left += [pid] if Path(f"/proc/{pid}/comm").read_text().strip() == f"rwk-{TAG}" else []
        except OSError:
            continue
    return left


def test_an_in_process_agent_s_leftover_processes_are_stopped_when_its_trial_ends(
    project: Path,
) -> None:
    tag = str(os.getpid())  # (this test process's own sleeps, whatever else runs here)
    case = _case(project, "leaves", f"leave them {tag}")
    before = _sleeping(tag)  # (none, but for what a failed run of this test left)
    code, _, err = replay(
        "run", case, "--run", "leaves", "--store", ".replay/results.db",
        "--agent", "wallproject.wall:leaves", "--tools", "wallproject.wall:make_tools",
        "--isolation", "none", "--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check",
    )  # fmt: skip
    assert code == 0, err
    from replay.surroundings._processes import TRACKER, _children

    left = set(_sleeping(tag)) - set(before)
    assert not left, (left, err, TRACKER._running, _children())  # (what to look at if not)
    (trial,) = Store(".replay/results.db").trials("leaves")
    warnings = [e.message for e in read_cassette(trial.cassette).events if e.kind == "warning"]
    assert "the agent left 4 processes running: they were stopped" in warnings


def test_a_program_in_tmp_sees_itself_and_nothing_else_there(project: Path) -> None:
    mine = Path(f"/tmp/replay-wall-agent-{os.getpid()}.py")
    planted = Path(f"/tmp/replay-wall-planted-{os.getpid()}.py")  # another's code, beside it
    mine.write_text(
        f"import os, sys\nprint(os.path.exists({str(planted)!r}), os.path.exists(sys.argv[0]))\n"
    )
    planted.write_text("SECRET = 1\n")
    try:
        code, _, err = replay(
            "run", _case(project, "beside", "look"), "--run", "beside",
            "--store", ".replay/results.db", "--agent-cmd", f"{sys.executable} {mine}",
            "--tools", "wallproject.wall:make_tools", "--isolation", "process",
            "--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check",
        )  # fmt: skip
    finally:
        mine.unlink()
        planted.unlink()
    assert code == 0, err
    (trial,) = Store(".replay/results.db").trials("beside")
    assert read_cassette(trial.cassette).footer.final_answer == "False True"
