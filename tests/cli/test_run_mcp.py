"""`replay run --mcp-server`: a third-party MCP server (mcp-server-sqlite) from the command line."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from replay import Store
from replay.modes import NO_LLM_URL
from tests.helpers import replay

_BESIDE = Path(sys.executable).with_name("mcp-server-sqlite")  # this venv's, PATH or not
SERVER = str(_BESIDE) if _BESIDE.exists() else shutil.which("mcp-server-sqlite")
AGENT = [
    "--agent", "tests.replay.mcp_agents:task_done_over_stdio",
    "--tools", "tests.replay.mcp_agents:no_tools",
    "--llm-url", NO_LLM_URL, "--no-llm-check",
]  # fmt: skip
CASE = """\
id: ship-it
instruction: Mark the task "ship" done.
fixture: tasks.sql
allowed_tables: [tasks]
assert:
  - tasks.count(title="ship", done=1) == 1
  - tasks.count(done=1) == 1
  - no_side_effects
"""


@pytest.fixture
def case(tmp_path: Path) -> str:
    (tmp_path / "tasks.sql").write_text(
        "CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT NOT NULL, done INTEGER NOT NULL);\n"
        "INSERT INTO tasks (title, done) VALUES ('ship', 0), ('test', 0);\n"
    )
    (tmp_path / "ship-it.yaml").write_text(CASE)
    return str(tmp_path / "ship-it.yaml")


def _verdicts(store: str, run: str) -> list[str]:
    return [t.verdict for t in Store(store).trials(run)]


@pytest.mark.slow
def test_a_run_with_a_third_party_server_is_stored_resumed_and_replayed_offline(
    case: str, tmp_path: Path
) -> None:
    pytest.importorskip("mcp", reason="the mcp SDK is not installed (the mcp extra)")
    if SERVER is None:
        pytest.skip("mcp-server-sqlite is not installed (the frameworks extra pins it)")
    store = str(tmp_path / "results.db")
    server = ["--mcp-server", f"sqlite={shlex.quote(SERVER)} --db-path {{world}}"]
    secret = ["--mcp-env", "sqlite:API_TOKEN=hunter2-secret", "--mcp-env", "sqlite:LANG=C"]
    code, _, err = replay(
        "run", case, "--run", "live", "-k", "3", "--store", store, *AGENT, *server, *secret
    )
    assert code == 0, err
    assert _verdicts(store, "live") == ["pass"] * 3
    stored = Store(store).run("live")
    assert stored is not None
    assert stored.spec["agent"]["mcp_servers"]["sqlite"] == {
        "command": [SERVER, "--db-path", "{world}"],
        "url": None,
        "env": {"API_TOKEN": "[REDACTED]", "LANG": "C"},  # never on disk
        "timeout": 60.0,
        "max_message_bytes": 16 * 2**20,
    }
    code, out, _ = replay("report", "live", "--store", store, "--json")
    pinned = json.loads(out)["pins"]["mcp_servers"]
    assert pinned == {
        "sqlite": {
            "command": [SERVER, "--db-path", "{world}"],
            "env": {"API_TOKEN": "[REDACTED]", "LANG": "C"},
        }
    }
    assert "hunter2" not in out

    # A run stopped before its trials: --resume runs them from the stored spec and the
    # secret given again.
    Store(store).start_run("later", {**stored.spec, "name": "later"}, dict(stored.pins))
    code, _, err = replay("run", "--run", "later", "--resume", "--store", store)
    assert code == 2 and "--mcp-env sqlite:API_TOKEN=..." in err
    code, _, err = replay("run", "--run", "later", "--resume", "--store", store, *server, *secret)
    assert code == 0, err
    assert _verdicts(store, "later") == ["pass"] * 3

    nowhere = [
        "--mcp-server",
        f"sqlite={shlex.quote(str(tmp_path / 'no-such-server'))} --db-path {{world}}",
    ]
    recorded = str(Path(store).parent / "cassettes" / "live")
    code, _, err = replay(
        "run", case, "--run", "again", "--mode", "offline", "-k", "3", "--cassettes", recorded,
        "--store", store, *AGENT, *nowhere,
    )  # fmt: skip
    assert code == 0, err
    assert _verdicts(store, "again") == ["pass"] * 3  # answered from the cassettes, never started


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mcp-server", "sqlite"], "'sqlite' is not NAME=COMMAND or NAME=URL"),
        (["--mcp-server", "=mcp-server-sqlite"], "is not NAME=COMMAND or NAME=URL"),
        (["--mcp-server", "sqlite=  "], "'sqlite=  ' has no command or URL"),
        (["--mcp-server", "sqlite='unclosed"], "No closing quotation"),
        (["--mcp-server", "a=x", "--mcp-server", "a=y"], "server 'a' is named twice"),
        (["--mcp-server", "a=http://h/mcp extra"], "'a': a URL is one word"),
        (["--mcp-server", "a=x", "--mcp-env", "a:NOVALUE"], "'a:NOVALUE' is not NAME:KEY=VALUE"),
        (["--mcp-server", "a=x", "--mcp-env", "b:K=V"], "no --mcp-server 'b' started by a command"),
        (["--mcp-server", "a=https://h/mcp", "--mcp-env", "a:K=V"], "started by a command"),
    ],
)
def test_bad_server_options_are_one_line_usage_errors(
    case: str, tmp_path: Path, args: list[str], message: str
) -> None:
    store = str(tmp_path / "results.db")
    code, _, err = replay("run", case, "--run", "r", "--store", store, *AGENT, *args)
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not Path(store).exists()


def test_a_url_server_is_stored_as_a_url_with_its_secrets_hidden_from_the_pins(
    case: str, tmp_path: Path
) -> None:
    store = str(tmp_path / "results.db")
    url = "https://user:pw@mcp.example/mcp?token=abcdefgh123"
    idle = ["--agent", "tests.replay.mcp_agents:idle", *AGENT[2:]]
    code, _, err = replay(
        "run", case, "--run", "r", "--store", store, *idle, "--mcp-server", f"remote={url}"
    )
    assert code == 1, err
    assert _verdicts(store, "r") == ["fail"]  # nothing done: the idle agent asks no server
    stored = Store(store).run("r")
    assert stored is not None
    hidden = "https://[REDACTED]@mcp.example/mcp?token=[REDACTED]"
    assert stored.spec["agent"]["mcp_servers"]["remote"]["url"] == hidden  # never on disk
    assert stored.pins["mcp_servers"] == {"remote": {"url": hidden}}
