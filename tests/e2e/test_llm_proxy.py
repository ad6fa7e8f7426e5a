"""The recording LLM proxy: a program's streamed exchange is recorded chunk by chunk, and frozen.

The program (``streaming_child.py``, the official openai SDK in a process of its
own, given ``OPENAI_BASE_URL`` alone) cannot be patched: every byte it exchanges
with the LLM is recorded by the proxy, and offline the cassette answers it with
no LLM running.
"""

from __future__ import annotations

import sys
from pathlib import Path

from recorder import HttpEvent, llm_call, read_cassette
from replay import AgentCommand, load_case, offline, sandbox
from replay.stub_llm import StubLLM

CHILD = Path(__file__).with_name("streaming_child.py")


def test_a_program_s_streamed_llm_exchange_is_recorded_and_replayed_frozen(
    tmp_path: Path,
) -> None:
    (tmp_path / "w.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    (tmp_path / "case.yaml").write_text(
        "id: echo\ninstruction: say hello back\nfixture: w.sql\nassert:\n"
        '  - answer contains "say hello back"\n'
    )
    case, agent = load_case(tmp_path / "case.yaml"), AgentCommand((sys.executable, str(CHILD)))
    with StubLLM() as llm:  # echoes the last user message, streamed when asked
        url = llm.openai_base_url
        live = sandbox(case, agent, lambda conn: [], tmp_path / "s.cassette", llm_base_url=url)
    assert live.outcome.verdict.value == "pass", live.outcome.evidence
    recorded = read_cassette(tmp_path / "s.cassette")
    (exchange,) = [e for e in recorded.events if isinstance(e, HttpEvent)]
    call = llm_call(exchange)
    assert call is not None and call.stream and len(exchange.response.chunks) > 2
    assert exchange.request.url.startswith(url)  # the LLM's address, not ours

    again = offline(case, agent, lambda conn: [], recorded, tmp_path / "o.cassette")
    assert again.outcome.verdict.value == "pass", again.outcome.evidence  # no LLM is running
    assert again.trial.answer == live.trial.answer


def test_the_proxy_sends_on_to_the_llm_s_host_alone() -> None:
    """A request line that is not a path (``GET @host:port/``) would name another authority."""
    import socket

    from replay.surroundings._llm_proxy import LlmProxy

    with socket.socket() as canary:
        canary.bind(("127.0.0.1", 0))
        canary.listen(1)
        canary.settimeout(0.5)
        proxy = LlmProxy("http://127.0.0.1:9/v1")
        port = int(proxy.url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port)) as conn:
            target = f"@127.0.0.1:{canary.getsockname()[1]}/"
            conn.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert conn.recv(4096).startswith(b"HTTP/1.1 400")
        try:
            canary.accept()
            reached = True
        except OSError:
            reached = False
        proxy.close()
    assert not reached


def test_a_frozen_miss_is_answered_once_not_retried_and_the_trial_is_unsupported(
    tmp_path: Path,
) -> None:
    """The SDK retries a 5xx (twice, with back-off); a miss is a 400 it must not retry."""
    (tmp_path / "w.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    (tmp_path / "case.yaml").write_text("id: echo\ninstruction: say hello back\nfixture: w.sql\n")
    case, agent = load_case(tmp_path / "case.yaml"), AgentCommand((sys.executable, str(CHILD)))
    with StubLLM() as llm:
        sandbox(
            case, agent, lambda conn: [], tmp_path / "s.cassette", llm_base_url=llm.openai_base_url
        )
    changed = case.model_copy(update={"instruction": "say something else"})
    again = offline(changed, agent, lambda conn: [], read_cassette(tmp_path / "s.cassette"),
                    tmp_path / "o.cassette")  # fmt: skip
    assert again.outcome.verdict.value == "unsupported", again.outcome.evidence
    evidence = " ".join(again.outcome.evidence)
    assert "fixture unsupported" in evidence and "say something else" in evidence
    asked = [e for e in read_cassette(tmp_path / "o.cassette").events if isinstance(e, HttpEvent)]
    assert len(asked) == 1, asked  # asked once: no retry (a 502 was asked three times)


def test_a_cookie_the_llm_sets_in_one_trial_is_never_sent_in_another() -> None:
    """The proxies of a process share one HTTP client: it keeps no cookie jar between them."""
    import http.server
    import threading
    import urllib.request

    class Llm(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            said = (self.headers.get("Cookie") or "none").encode()
            self.send_response(200)
            self.send_header("Set-Cookie", "__cf_bm=trial-one; Path=/")
            self.send_header("Content-Length", str(len(said)))
            self.end_headers()
            self.wfile.write(said)

        def log_message(self, *args: object) -> None:
            pass

    from replay.surroundings._llm_proxy import LlmProxy

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Llm)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        seen = []
        for _ in range(2):  # two trials, one after the other
            proxy = LlmProxy(f"http://127.0.0.1:{server.server_address[1]}/v1")
            with urllib.request.urlopen(proxy.url + "/models", timeout=60) as answer:
                seen.append(answer.read())
            proxy.close()
    finally:
        server.shutdown()
        server.server_close()
    assert seen == [b"none", b"none"]
