"""Sandbox violations from the command line: refused, recorded, failing the trial, reported.

An in-process agent (the sandbox's HTTP check) reaches a local service and the
cloud's metadata address; ``--allow-host`` lets it reach the service. The walled
agent's violations (seen by the seccomp supervisor) are tested in
``tests/e2e/test_isolation.py``.
"""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

from replay import Store
from replay.modes import NO_LLM_URL
from tests.helpers import replay


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        pass


def test_a_violation_fails_the_trial_is_reported_and_allow_host_allows_one(
    tmp_path: Path,
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    (tmp_path / "w.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    (tmp_path / "case.yaml").write_text("id: reach\ninstruction: reach out\nfixture: w.sql\n")
    store = str(tmp_path / "results.db")
    run = [
        "run", str(tmp_path / "case.yaml"), "--store", store,
        "--llm-url", NO_LLM_URL, "--no-llm-check",
        "--agent", "tests.cli.reaching_agent:agent", "--tools", "tests.cli.reaching_agent:no_tools",
        "--set", f"port={port}", "--isolation", "none",
    ]  # fmt: skip
    try:
        code, _, err = replay(*run, "--run", "closed")
        assert code == 1, err  # a sandbox violation fails the trial
        code, _, err = replay(*run, "--run", "open", "--allow-host", f"localhost:{port}")
        assert code == 1, err  # the other host is still refused
    finally:
        server.shutdown()
        server.server_close()
    closed, opened = (Store(store).trials(name)[0] for name in ("closed", "open"))
    assert closed.verdict == opened.verdict == "fail"
    code, out, _ = replay("report", "closed", "--store", store)
    assert "sandbox violation: http http://localhost:" in out
    assert "sandbox violation: http http://169.254.169.254/latest/" in out
    code, out, _ = replay("report", "open", "--store", store)
    assert "http://localhost:" not in out  # allowed: reached, and no violation
    assert "sandbox violation: http http://169.254.169.254/latest/" in out
    cassette = tmp_path / "cassettes" / "open" / "reach-0.cassette"
    code, shown, _ = replay("show", str(cassette), "--json")
    assert code == 0
    assert "hello | " in json.dumps(json.loads(shown))  # the allowed service answered
    stored = Store(store).run("open").spec  # type: ignore[union-attr]
    assert stored["agent"]["allow_hosts"] == [f"127.0.0.1:{port}"]


def test_allow_host_with_an_address_of_another_machine_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "w.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    (tmp_path / "case.yaml").write_text("id: reach\ninstruction: reach out\nfixture: w.sql\n")
    code, _, err = replay(
        "run", str(tmp_path / "case.yaml"), "--store", str(tmp_path / "r.db"),
        "--agent", "tests.cli.reaching_agent:agent", "--allow-host", "10.0.0.5:5432", "--run", "x",
    )  # fmt: skip
    assert code != 0
    assert "give the host name" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
