"""A started MCP server boots as the trial is set up, not inside the agent's first request.

Some servers take seconds to start (mcp-server-git: 2.8-5.5 s of imports); landing
in the agent's first request, that time was blamed on the agent (its client's own
time-out). The server here says it is up by writing a file; the agent asks the
server nothing and waits for that file: it appears, so the server was started
before any request of the agent's.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from recorder import read_cassette
from replay import load_case, sandbox
from replay.mcp import McpServer

SERVER = Path(__file__).with_name("booting_mcp_server.py")
HANG_GUARD_S = 120


def test_a_started_server_is_up_before_the_agent_asks_it_anything(tmp_path: Path) -> None:
    marker = tmp_path / "up"

    def agent(instruction: str, env: Any) -> str:
        waited = 0.0
        while not marker.exists() and waited < HANG_GUARD_S:
            time.sleep(0.05)
            waited += 0.05
        return "up" if marker.exists() else "never started"

    (tmp_path / "empty.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    (tmp_path / "c.yaml").write_text("id: boot\ninstruction: Wait.\nfixture: empty.sql\n")
    server = McpServer(command=[sys.executable, str(SERVER), str(marker)])
    trial = sandbox(
        load_case(tmp_path / "c.yaml"), agent, lambda conn: [], tmp_path / "boot.cassette",
        llm_base_url="http://127.0.0.1:9/v1", mcp_servers={"boot": server},
    )  # fmt: skip
    assert read_cassette(trial.cassette).summary().final_answer == "up"
