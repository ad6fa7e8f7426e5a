"""A judge call and a simulated user's answer have a total deadline, not a per-read one.

The server here trickles a well-formed answer (a ``pass`` verdict) a byte every
0.3 s: each read comes well within a 1 s timeout, the whole answer would take
tens of seconds. Past the deadline the grade is ``unknown`` and the late answer
is never read (it would have been a pass).
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from examples.shop import RefundChatPolicy
from recorder import read_cassette
from replay import Store, load_case
from replay.graders import Dimension, Judge, Verdict
from replay.modes import review
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
GOLDEN = REPO / "cassettes" / "refund-4812.cassette"
PASS = json.dumps(
    {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": '{"verdict": "pass", "reason": "it says how much"}',
                }
            }
        ]
    }
).encode()


@pytest.fixture
def trickling() -> Iterator[str]:
    """An OpenAI-compatible endpoint that sends its answer a byte every 0.3 s."""
    stop = threading.Event()

    class Trickle(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(PASS)))
            self.end_headers()
            try:
                for byte in PASS:
                    if stop.wait(0.3):
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            except OSError:  # the client gave up
                self.close_connection = True

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads, server.block_on_close = True, False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def test_a_trickling_judge_is_unknown_at_its_deadline(trickling: str, tmp_path: Path) -> None:
    judge = Judge(trickling, "judge-1", timeout=1.0, calibrated=None)
    trial = review(load_case(CASE), GOLDEN).trial
    (grade,) = judge.grade(trial, [Dimension("tone", "Says the amount.")], tmp_path / "j.cassette")
    assert grade.verdict is Verdict.UNKNOWN  # the answer on its way was a pass
    assert grade.evidence == ("judge timed out after 1s",)
    assert read_cassette(tmp_path / "j.cassette").complete


def test_a_trickling_simulated_user_fails_at_its_deadline(trickling: str, tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    chat = REPO / "examples" / "shop" / "cases" / "refund-chat.yaml"
    with StubLLM(RefundChatPolicy()) as llm:
        code, _, err = replay(
            "run", str(chat), "--run", "r", "--store", store, "--llm-url", llm.openai_base_url,
            "--user-url", trickling, "--user-timeout", "1",
            "--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools",
        )  # fmt: skip
    assert code == 3, err  # the user's failure, not the agent's
    (trial,) = Store(store).trials("r")
    assert trial.verdict == "error" and trial.cause == "user"
    assert trial.cause_detail == ("the simulated user failed: it gave no answer within 1s",)
