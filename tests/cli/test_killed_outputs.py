"""`gate --junit` and `report --html` killed at random points: the file is old or whole (issue 29).

The real ``replay`` command runs in a child process and is sent SIGKILL at a point drawn
between its start and 1.2 times the length of an uninterrupted run. Writing a few KB
takes microseconds of a run that is nearly all start-up, so a random kill would almost
never land in it: the children write into a folder whose writes a ``sitecustomize``
slows down (a slow disk; ``Path.write_bytes``/``write_text`` only, there only), so that
the write is a good share of each run and a file written in place would be caught torn.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from replay import Store, TrialRecord
from replay.graders import Verdict

REPLAY = Path(sys.executable).with_name("replay")
TRIES = 12
OLD = b"the old file, which a CI may be reading\n"

# A slow disk for one folder, in the children: each write there is made in 25 flushed
# pieces, 12 ms apart (about 0.3 s whatever the size).
SLOW_DISK = """
import os, pathlib, time

_FOLDER = os.environ["REPLAY_TEST_SLOW_FOLDER"]
_write_bytes, _write_text = pathlib.Path.write_bytes, pathlib.Path.write_text


def _slowly(file, data):
    step = max(1, -(-len(data) // 25))
    for start in range(0, len(data), step):
        file.write(data[start : start + step])
        file.flush()
        time.sleep(0.012)


def write_bytes(self, data):
    if str(self.parent) != _FOLDER:
        return _write_bytes(self, data)
    data = bytes(data)
    with self.open("wb") as file:
        _slowly(file, data)
    return len(data)


def write_text(self, data, encoding=None, errors=None, newline=None):
    if str(self.parent) != _FOLDER:
        return _write_text(self, data, encoding, errors, newline)
    with self.open("w", encoding=encoding, errors=errors, newline=newline) as file:
        _slowly(file, data)
    return len(data)


pathlib.Path.write_bytes, pathlib.Path.write_text = write_bytes, write_text
"""


def _store(path: Path) -> str:
    """Two finished runs of three cases, four trials each, written straight into a store."""
    store = Store(path)
    for name, failing in (("base", 1), ("cand", 2)):
        store.start_run(name, {}, {})
        for case in ("a", "b", "c"):
            for idx in range(4):
                verdict = Verdict.FAIL if idx < failing else Verdict.PASS
                store.add_trial(name, TrialRecord(case_id=case, idx=idx, verdict=verdict))
        store.finish_run(name)
    return str(path)


def _same_output(data: bytes) -> bytes:
    """The output with the JUnit suite's timestamp (all that differs run to run) blanked."""
    return re.sub(rb' timestamp="[^"]*"', b' timestamp=""', data)


@pytest.mark.slow
def test_a_report_killed_anywhere_is_the_old_file_or_the_whole_new_one(tmp_path: Path) -> None:
    store = _store(tmp_path / "r.db")
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SLOW_DISK)
    out = tmp_path / "out"
    out.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
        "REPLAY_TEST_SLOW_FOLDER": str(out),
    }
    targets = {"gate": out / "junit.xml", "report": out / "report.html"}

    def start(command: str, path: Path) -> subprocess.Popen[bytes]:
        """The command writing ``path``, its errors in ``COMMAND.err``."""
        args = (
            ["gate", "--baseline", "base", "--candidate", "cand", "--min-pass1", "0",
             "--junit", str(path)]
            if command == "gate"
            else ["report", "cand", "--html", str(path)]
        )  # fmt: skip
        with (tmp_path / f"{command}.err").open("wb") as errors:
            return subprocess.Popen(
                [str(REPLAY), *args, "--store", store],
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env=env,
            )

    def kill_anywhere(command: str) -> tuple[bytes, int, str]:
        """The whole output once, then ``TRIES`` runs each killed at a random point.

        Returns the whole output, how many runs were killed, and what each left (old/new).
        """
        path, draw = targets[command], random.Random(f"issue 29 {command}")
        whole = out / f"whole-{path.name}"
        began = time.monotonic()
        assert start(command, whole).wait(timeout=300) == 0, command
        took = time.monotonic() - began  # (only to place the kills: no time is asserted)
        expected = _same_output(whole.read_bytes())
        kills, seen = 0, ""
        for attempt in range(TRIES):
            path.write_bytes(OLD)
            point = draw.uniform(0, 1.2 * took)
            child = start(command, path)
            try:
                child.wait(timeout=point)
            except subprocess.TimeoutExpired:
                child.kill()
            code = child.wait(timeout=300)
            errors = (tmp_path / f"{command}.err").read_text()
            assert code in (0, -signal.SIGKILL), f"{command} try {attempt} exited {code}: {errors}"
            kills += code == -signal.SIGKILL
            data = path.read_bytes()
            if data == OLD:
                seen += "o"
                continue
            assert _same_output(data) == expected, (
                f"{command} try {attempt}, killed at {point:.2f} s of {took:.2f}: "
                f"{path.name} is torn ({len(data)} bytes)"
            )
            seen += "n"
        # A killed write leaves its temporary file; the next write of the path removes it.
        assert start(command, path).wait(timeout=300) == 0, command
        assert _same_output(path.read_bytes()) == expected
        assert not list(out.glob(f".{path.name}.*.part")), f"{command} left a killed write's file"
        return expected, kills, seen

    # The two commands are tried side by side, each in its own loop, to halve the wait.
    with ThreadPoolExecutor(2) as pool:
        tried = dict(zip(targets, pool.map(kill_anywhere, targets), strict=True))
    cases = [case.get("name") for case in ET.fromstring(tried["gate"][0]).iter("testcase")]
    assert cases[:3] == ["a", "b", "c"] and len(cases) > 3  # a testcase per case and check
    assert tried["report"][0].rstrip().endswith(b"</html>")
    assert all(kills for _, kills, _ in tried.values()), tried  # kills did land before the end
    # Nothing else was written there.
    assert sorted(p.name for p in out.iterdir()) == [
        "junit.xml", "report.html", "whole-junit.xml", "whole-report.html"
    ]  # fmt: skip
