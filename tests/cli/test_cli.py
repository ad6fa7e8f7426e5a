"""`replay show`: the transcript in the terminal and as JSON; cut and damaged cassettes."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import pytest

from examples.shop import record_refund
from replay._cli.main import cli
from tests.helpers import REPO, documentation, replay


@pytest.fixture(scope="module")
def refund(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("show") / "refund.cassette"
    record_refund(path)
    return path


def assert_lines(output: str, patterns: list[str]) -> None:
    lines = output.splitlines()
    position = 0
    for pattern in patterns:
        while position < len(lines) and not fnmatch.fnmatch(lines[position], pattern):
            position += 1
        assert position < len(lines), f"no line matching {pattern!r} (in order) in:\n{output}"
        position += 1


def test_terminal_transcript_tells_the_story(refund: Path) -> None:
    code, out, err = replay("show", str(refund))
    assert code == 0 and err == ""
    assert_lines(
        out,
        [
            "*refund.cassette  case refund-4812  trial 0",
            "1. LLM openai stub-shop-1 *",
            "   user: Refund order 4812 and notify the customer.",
            '   assistant calls lookup_order({"order_id": 4812})',
            "2. tool lookup_order(order_id=4812) read *",
            "4. tool issue_refund(order_id=4812, amount=35.0, reason='customer request', "
            "idempotency_key='refund-4812') write *",
            "   + refunds {id: 1, order_id: 4812, amount: 35.0, reason: 'customer request', "
            "idempotency_key: 'refund-4812'}",
            "   ~ orders[[]4812] status: 'paid' -> 'refunded'",
            "*assistant: I refunded $35.00 for order 4812*",
            "outcome ok",
            "  final answer: I refunded $35.00 for order 4812*",
            "  state diff: 4 row(s) changed",
            "  usage: 6 LLM calls (* in / * out tokens), 5 tool calls, 6 HTTP calls",
            "*model*stub-shop-1*",
            "*tool_schema_hash*",
        ],
    )


def test_json_is_the_same_cassette_for_tools(refund: Path) -> None:
    code, out, _ = replay("show", "--json", str(refund))
    assert code == 0
    data = json.loads(out)
    assert data["complete"] is True and data["header"]["case_id"] == "refund-4812"
    kinds = [e["kind"] for e in data["events"]]
    assert kinds.count("http") == 6 and kinds.count("tool") == 5
    first_llm = next(e for e in data["events"] if e["kind"] == "http")
    assert first_llm["llm"]["reply_tool_calls"][0]["name"] == "lookup_order"
    assert data["footer"]["state_diff"]["orders"] == [
        {"key": [4812], "before": {"status": "paid"}, "after": {"status": "refunded"}}
    ]
    # Bodies read as what they are: JSON as JSON, not base64; the summary is no second footer.
    assert first_llm["request"]["body_is"] == "json"
    assert first_llm["request"]["body"]["messages"][0]["role"] == "system"
    assert first_llm["response"]["body_is"] == "json"
    assert first_llm["response"]["body"]["choices"][0]["message"]["tool_calls"]
    assert data["summary"] is None


def test_a_cut_cassette_shows_its_prefix_and_warns(refund: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.cassette"
    data = refund.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    code, out, err = replay("show", str(cut))
    assert code == 0
    assert "1. LLM openai stub-shop-1" in out
    assert "outcome error" in out
    assert err.startswith(f"warning: {cut}: recording was cut short: ")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not a cassette at all", "not a cassette (missing the agent-replay file signature)"),
        (None, "no such cassette; check the path"),
    ],
)
def test_bad_files_are_one_line_errors_with_exit_2(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "x.cassette"
    if content is not None:
        path.write_bytes(content)
    code, out, err = replay("show", str(path))
    assert (code, out) == (2, "")
    assert err == f"error: {path}: {message}\n"


def test_every_command_has_help() -> None:
    for command in cli.commands:
        code, out, _ = replay(command, "--help")
        assert code == 0 and "Usage:" in out
    docs = documentation()
    for command in cli.commands:
        assert f"replay {command}" in docs, f"the docs do not mention `replay {command}`"


def test_stub_llm_refuses_a_bad_script_in_one_line(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"turns": 3}')
    code, _out, err = replay("stub-llm", "--script", str(script), "--port", "0")
    assert code == 2
    assert err == f"error: {script}: expected an object with a 'turns' list\n"


def _first_reply(*options: str, said: str) -> Any:
    """Start ``replay stub-llm OPTIONS`` as a user would, ask it once, stop it."""
    import re
    import subprocess
    import sys

    import openai

    replay_bin = Path(sys.executable).with_name("replay")
    args = [replay_bin, "stub-llm", *options, "--port", "0"]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stderr is not None
        match = re.search(r"OpenAI base URL (\S+),", proc.stderr.readline())
        assert match, "stub-llm did not announce its URL"
        with openai.OpenAI(base_url=match.group(1), api_key="k", max_retries=0) as client:
            reply = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": said}]
            )
        return reply.choices[0].message
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


def test_stub_llm_serves_a_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"content": "scripted hello"}]}))
    assert _first_reply("--script", str(script), said="hi").content == "scripted hello"


def test_stub_llm_serves_a_python_policy_and_refuses_what_is_not_one() -> None:
    message = _first_reply("--policy", "examples.shop:refund_policy", said="Refund order 4812.")
    assert [c.function.name for c in message.tool_calls or []] == ["lookup_order"]
    code, _, err = replay("stub-llm", "--policy", "examples.shop:make_tools", "--port", "0")
    assert code == 2 and "makes no policy without arguments" in err and err.count("\n") == 1
