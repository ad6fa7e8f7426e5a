"""Agents that push on the wall from inside (``tests/e2e/test_wall.py``), copied into a project.

``reads``: the instruction is a JSON object of names to paths; it tries to read
each (a folder: to list it), and answers what it got, with its uid and what
its working directory holds. ``scribbles`` lists its working directory, then
writes a file there. ``fill``: ``fill FOLDER MB`` writes that many
megabytes there. ``forks``: ``forks N TAG`` starts N processes that sleep (named
``rwk-TAG``: a test's own, whatever else runs on the machine), as many as it can.
"""

import ctypes
import json
import os
import time


def reads(instruction: str, env: object) -> str:
    """Try to read each path given; what came of it."""
    found: dict[str, object] = {"uid": os.getuid(), "here": sorted(os.listdir("."))}
    for name, path in json.loads(instruction).items():
        try:
            if os.path.isdir(path):
                found[name] = f"listed {sorted(os.listdir(path))}"
            else:
                with open(path, "rb") as given:
                    found[name] = f"read {len(given.read())} bytes"
        except OSError as exc:
            found[name] = f"failed: {type(exc).__name__}"
    return json.dumps(found)


def fill(instruction: str, env: object) -> str:
    """``fill FOLDER MB TAG``: start a process that sleeps (``forks 1 TAG``), then write
    ``MB`` megabytes to a file in ``FOLDER``, as far as it goes."""
    _, folder, size, tag = instruction.split()
    forks(f"forks 1 {tag}", env)
    wrote = 0
    try:
        with open(os.path.join(folder, "big"), "wb") as big:
            for _ in range(int(size)):
                big.write(b"x" * 2**20)
                big.flush()
                wrote += 1
    except OSError as exc:
        return f"wrote {wrote} MB, then {type(exc).__name__}"
    return f"wrote {wrote} MB"


def forks(instruction: str, env: object) -> str:
    """``forks N TAG``: start processes that sleep (named ``rwk-TAG``), until N or until no
    more may start."""
    _, count, tag = instruction.split()
    started = 0
    for _ in range(int(count)):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            ctypes.CDLL(None).prctl(15, f"rwk-{tag}".encode()[:15], 0, 0, 0)  # PR_SET_NAME
            time.sleep(600)
            os._exit(0)
        started += 1
    return f"started {started}"


def scribbles(instruction: str, env: object) -> str:
    """What its working directory holds, before it leaves a file of its own there."""
    here = sorted(os.listdir("."))
    with open("left-by-a-trial", "w") as note:
        note.write("for the next trial to find")
    return json.dumps(here)


def make_tools(conn: object) -> list[object]:
    """No tools: these agents push on the wall, not on the world."""
    return []


def leaves(instruction: str, env: object) -> str:
    """``leave them TAG``: start a program, and a shell with a child of its own (each a
    ``sleep 987.TAG...``), and return with both running."""
    import subprocess

    tag = instruction.split()[-1]
    LEFT.append(subprocess.Popen(["sleep", f"987.{tag}4"]))
    LEFT.append(subprocess.Popen(["sh", "-c", f"sleep 987.{tag}5 & sleep 987.{tag}6"]))
    for _ in range(1000):  # (until the shell has started both: four in all)
        if len(_running(f"sleep\0987.{tag}")) == 3:
            break
        time.sleep(0.01)
    return "left them running"


def _running(marker: str) -> list[str]:
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline") as line:
                found += [pid] if marker in line.read() else []
        except OSError:
            continue
    return found


LEFT: list[object] = []
"""What ``leaves`` started (held: a dropped ``Popen`` of a running program warns)."""
