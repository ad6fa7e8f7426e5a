"""Hostile cassettes: what the reader accepts, everything after it takes; the rest it refuses.

Mutants come from the committed cassettes (``bench.hostile``): each runs through
the reader, ``show`` (text, ``--json``, ``--html``), ``grade``, ``diff`` and
offline playback, and may end only in a project error (one ``error:`` line).
"""

from __future__ import annotations

import json
import math
import resource
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from bench import hostile
from recorder import CassetteCorrupt, FixtureError, read_cassette
from recorder._codec import decode
from replay.worlds._world import Fixture
from tests.helpers import REPO, replay

ORIGINAL = REPO / "cassettes" / "refund-4812.cassette"
CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"


def records() -> list[dict[str, Any]]:
    return [dict(r) for r in decode(ORIGINAL.read_bytes()).records]


def write(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_bytes(hostile._encode(recs))
    return path


def first(recs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(r for r in recs if r.get("kind") == kind)


def one_error_line(code: int, err: str) -> str:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (math.inf, "not finite"),
        (math.nan, "not finite"),
        (2**64 - 1, "64 bits"),
        (hostile.deep(150), "nested more than 100 deep"),
        ({b"bytes key": 1}, "not a string"),
    ],
)
def test_a_tool_result_no_reader_can_take_is_refused_in_one_line(
    tmp_path: Path, value: Any, says: str
) -> None:
    recs = records()
    first(recs, "tool")["result"] = value
    path = write(tmp_path / "bad.cassette", recs)
    with pytest.raises(CassetteCorrupt, match=says):
        read_cassette(path)
    for args in (
        ["show", str(path)],
        ["show", "--json", str(path)],
        ["grade", str(path), "--case", str(CASE)],
    ):
        code, _, err = replay(*args)
        assert says in one_error_line(code, err)


def test_a_uint64_in_a_delta_is_refused_not_an_overflow_in_grade(tmp_path: Path) -> None:
    recs = records()
    tool = next(r for r in recs if r.get("kind") == "tool" and r.get("delta"))
    table = next(iter(tool["delta"]))
    tool["delta"][table][0]["key"] = [2**64 - 1]
    path = write(tmp_path / "bad.cassette", recs)
    code, _, err = replay("grade", str(path), "--case", str(CASE))
    assert "64 bits" in one_error_line(code, err)


def test_markup_in_header_fields_is_shown_as_written(tmp_path: Path) -> None:
    recs = records()
    recs[0]["started_at"] = "[/red]"
    recs[0]["recorder_version"] = "[bold]x"
    path = write(tmp_path / "markup.cassette", recs)
    code, out, err = replay("show", str(path))
    assert code == 0, err
    assert "recorded [/red] by agent-replay [bold]x" in out


def test_non_finite_token_counts_in_a_reply_leave_show_working(tmp_path: Path) -> None:
    recs = records()
    http = first(recs, "http")
    body = json.loads(b"".join(http["response"]["chunks"]))
    body["usage"]["prompt_tokens"] = "__INF__"
    text = json.dumps(body).replace('"__INF__"', "Infinity").encode()
    http["response"] = {**http["response"], "chunks": [text], "headers": []}
    path = write(tmp_path / "inf.cassette", recs)
    for args in (["show", str(path)], ["show", "--json", str(path)]):
        code, _, err = replay(*args)
        assert code == 0, err
    assert hostile.exercise(2, path.read_bytes(), tmp_path) == []  # grade, diff, offline too


def test_deep_json_bodies_leave_show_and_offline_working(tmp_path: Path) -> None:
    recs = records()
    http = first(recs, "http")
    http["request"] = {
        **http["request"],
        "body": b'{"messages": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    }
    path = write(tmp_path / "deep.cassette", recs)
    assert hostile.exercise(1, path.read_bytes(), tmp_path) == []


def test_a_delta_bomb_is_refused_quickly_in_bounded_memory(tmp_path: Path) -> None:
    recs = records()
    http = first(recs, "http")
    at = recs.index(http)
    big = {**http, "request": {**http["request"], "body": b"\0" * (16 << 20)}}
    copies = [{**http, "request": {**http["request"], "body": [16 << 20, b"x", 0]}}] * 300
    path = write(tmp_path / "bomb.cassette", [*recs[:at], big, *copies, *recs[at + 1 :]])
    assert path.stat().st_size < 100_000  # 5 GB of bodies from a file this small
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CassetteCorrupt, match="decompresses to more than"):
        read_cassette(path)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 200


def test_a_gzip_bomb_response_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    recs = records()
    http = first(recs, "http")
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    body = b"".join(z.compress(b"\0" * (1 << 20)) for _ in range(256)) + z.flush()
    http["response"] = {
        **http["response"],
        "headers": [["content-encoding", "gzip"]],
        "chunks": [body],
    }
    path = write(tmp_path / "gzip.cassette", recs)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, _, err = replay("show", str(path))
    assert "inflates past 100x" in one_error_line(code, err)
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 200


def test_column_names_from_a_delta_are_names_never_sql(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, w TEXT);"
        "INSERT INTO t VALUES (1, 'a', 'a');"
    )
    world = Fixture(conn, "t.sql").open()
    from recorder import RowChange

    name = "v\" = 'injected', \"w"  # spliced into SQL, this sets v too
    delta = {"t": [RowChange(key=[1], before={"w": "a"}, after={name: "b"})]}
    with pytest.raises(FixtureError, match="do not apply"):
        world.apply(delta)
    assert world.conn.execute("SELECT v FROM t").fetchall() == [("a",)]


@pytest.mark.slow
def test_mutated_cassettes_end_only_in_project_errors(tmp_path: Path) -> None:
    # A spread of every kind of mutation (bench.hostile runs 10,000 the same way).
    found = []
    for seed in range(120):
        found += hostile.exercise(seed, hostile.mutant(seed), tmp_path)
        for f in tmp_path.iterdir():
            if f.is_file():
                f.unlink()
    assert not found, "\n\n".join(f"seed {f.seed}, {f.step}:\n{f.what}" for f in found[:3])


@pytest.mark.slow
def test_many_mutants_each_within_time_and_memory() -> None:
    # In child processes of its own (peak RSS per worker): bench.hostile, mutants 0-249
    # (numbered: the same ones every run; `python -m bench.hostile` runs 10,000).
    proc = subprocess.run(
        [sys.executable, "-m", "bench.hostile", "-n", "250"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "findings (tracebacks, not one error line): 0" in proc.stdout
