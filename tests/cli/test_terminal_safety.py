"""What the commands print from recorded data reaches the terminal escaped, never as control codes.

A recorded message, tool name or result, a case id or a file's content can hold
``\\x1b]0;TITLE\\x07\\x1b[2J`` (retitle the window, clear the screen) or a bidi override:
``show``, ``diff``, ``report`` and the error line print each as the characters that spell it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import hostile
from recorder._codec import decode
from replay import GradeRecord, Store, TrialRecord
from replay.graders import Cause, Verdict
from replay.plugins import printable
from tests.helpers import REPO, replay

ORIGINAL = REPO / "cassettes" / "refund-4812.cassette"
INJECT = "\x1b]0;TITLE\x07\x1b[2J\x9b31m\u202eevil\u2066\r"
SPELLED = "\\x1b]0;TITLE\\x07\\x1b[2J\\x9b31m\\u202eevil\\u2066\\r"


def raw_controls(text: str) -> list[str]:
    """The control characters in printed output, but the newlines and tabs of its layout."""
    return sorted({c for c in text if c not in "\n\t" and printable(c, lines=True) != c})


def hostile_cassette(path: Path) -> Path:
    """The committed refund cassette with ``INJECT`` in an LLM reply, a tool name and result."""
    records: list[dict[str, Any]] = [dict(r) for r in decode(ORIGINAL.read_bytes()).records]
    tool = next(r for r in records if r["kind"] == "tool")
    tool["name"] = f"lookup{INJECT}order"
    tool["result"] = {**tool["result"], "customer_name": f"Mia{INJECT}"}
    http = [r for r in records if r["kind"] == "http"][-1]
    reply = json.loads(b"".join(http["response"]["chunks"]))
    reply["choices"][0]["message"]["content"] = f"done{INJECT}"
    http["response"] = {**http["response"], "chunks": [json.dumps(reply).encode()]}
    footer = records[-1]
    footer["final_answer"] = f"refunded{INJECT}"
    path.write_bytes(hostile._encode(records))
    return path


def test_printable_escapes_controls_and_bidi_and_keeps_layout_only_when_asked() -> None:
    assert printable(f"a{INJECT}b") == f"a{SPELLED}b"
    assert printable("line\r\nnext\tcol\x00\x7f") == "line\\r\\nnext\\tcol\\x00\\x7f"
    assert printable("line\r\nnext\tcol\x85", lines=True) == "line\nnext\tcol\\x85"
    assert printable("plain ünïcode → 表") == "plain ünïcode → 表"


def test_show_prints_recorded_control_sequences_escaped(tmp_path: Path) -> None:
    path = hostile_cassette(tmp_path / "evil.cassette")
    code, out, err = replay("show", "--bodies", str(path))
    assert code == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == []
    assert f"lookup{SPELLED}order" in out  # the tool's name
    assert '"Mia\\u001b]0;TITLE\\u0007' in out  # its result, shown as JSON spells it
    assert f"done{SPELLED}" in out  # the LLM's reply
    assert f"final answer: refunded{SPELLED}" in out


def test_diff_prints_recorded_control_sequences_escaped(tmp_path: Path) -> None:
    path = hostile_cassette(tmp_path / "evil.cassette")
    code, out, err = replay("diff", str(ORIGINAL), str(path))
    assert code == 0, err
    assert raw_controls(out) == []
    assert f"lookup{SPELLED}order" in out
    assert f"answer B: refunded{SPELLED}" in out


def test_report_prints_case_ids_and_evidence_escaped(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    store.start_run("r", {}, {})
    for idx in range(2):
        store.add_trial(
            "r",
            TrialRecord(
                case_id=f"case{INJECT}",
                idx=idx,
                verdict=Verdict.FAIL if idx else Verdict.ERROR,
                cassette=str(tmp_path / f"t{INJECT}.cassette"),
                cause=None if idx else Cause("agent"),
                cause_detail=() if idx else (f"agent raised {INJECT}",),
                grades=(GradeRecord("state", Verdict.FAIL, evidence=(f"got {INJECT}",)),),
            ),
        )
    code, out, err = replay("report", "r", "--store", str(tmp_path / "r.db"))
    assert code == 0, err
    assert raw_controls(out) == []
    assert f"case{SPELLED}" in out and f"got {SPELLED}" in out
    assert f"agent raised {SPELLED}" in out


@pytest.mark.parametrize(
    ("field", "value"),
    [("id", f"x{INJECT}\ny"), ("fixture", f"no{INJECT}.sql"), ("instruction", {INJECT: 1})],
)
def test_an_error_quoting_a_case_file_is_one_escaped_line(
    tmp_path: Path, field: str, value: Any
) -> None:
    case = tmp_path / "evil.yaml"
    case.write_text(json.dumps({"id": "x", "instruction": "do", field: value}))
    code, out, err = replay("grade", str(ORIGINAL), "--case", str(case))
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert raw_controls(err) == []
    if field == "fixture":  # the message quotes the file name as it was written
        assert f"no{SPELLED}.sql does not exist" in err


def test_a_cassette_path_with_controls_is_escaped_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / f"no{INJECT}.cassette"
    path.write_bytes(b"not a cassette")
    code, _, err = replay("show", str(path))
    assert code == 2
    assert raw_controls(err) == [] and f"no{SPELLED}.cassette" in err
