"""An agent program that tries to get out, and says what it reached (JSON on stdout).

Run by ``tests/e2e/test_isolation.py``; ``REPLAY_SETTINGS`` names the canary
port (a server of the test's on the harness's loopback), the files it must not
write, and the secret it must not see.
"""

import json
import os
import socket
import urllib.request


def attempts(given: dict) -> dict:  # type: ignore[type-arg]
    """Try every way out; what each reached."""
    found: dict[str, str] = {}

    def attempt(name, action):  # type: ignore[no-untyped-def]
        try:
            action()
            found[name] = "reached"
        except Exception as exc:  # what stopped it
            found[name] = f"blocked: {type(exc).__name__}"

    def connect(family, address):  # type: ignore[no-untyped-def]
        with socket.socket(family) as conn:
            conn.settimeout(3)
            conn.connect(address)

    attempt(
        "canary over 127.0.0.1", lambda: connect(socket.AF_INET, ("127.0.0.1", given["canary"]))
    )
    attempt("canary over ::1", lambda: connect(socket.AF_INET6, ("::1", given["canary6"])))
    attempt("another host", lambda: connect(socket.AF_INET, ("10.255.255.1", 80)))
    attempt("DNS", lambda: socket.getaddrinfo("example.com", 443))
    attempt(
        "HTTP through the LLM's host, another port",
        lambda: urllib.request.urlopen(f"http://127.0.0.1:{given['canary']}/", timeout=3),
    )
    url = f"http://127.0.0.1:{given['canary']}/"
    attempt("curl in a subprocess", lambda: _curl(url))
    attempt("httpcore directly", lambda: _httpcore(url))
    attempt("recorder.unrecorded()", lambda: _unrecorded(url))
    attempt(
        "a plain thread",
        lambda: _in_thread(lambda: connect(socket.AF_INET, ("127.0.0.1", given["canary"]))),
    )
    attempt("UPDATE the results store", lambda: _update(given["store"]))
    attempt("the World through gc", _world_in_memory)
    attempt("read another trial's temporary file", lambda: open(given["planted"]).close())
    attempt("a Unix socket of the host's", lambda: _unix(given["socket"]))
    attempt("remount / writable", _remount)
    attempt("an abstract Unix socket", lambda: _unix("\0" + given["abstract"]))
    if given.get("ptrace"):  # (not from the harness's own process: its parent is no harness)
        attempt("ptrace of the parent", _ptrace_parent)
    attempt("a capability left", _capabilities)
    for name in ("store", "fixture", "code"):
        attempt(f"write the {name}", lambda name=name: open(given[name], "ab").close())
    attempt("write a private temp file", lambda: open("/tmp/mine", "w").close())
    # (given reversed: REPLAY_SETTINGS itself is in the environment)
    values = [v[::-1] for v in given["values"]]
    mine = "\n".join(os.environ.values())
    found["secret in the environment"] = "reached" if any(v in mine for v in values) else "blocked"
    seen = ""
    pids = {p for p in os.listdir("/proc") if p.isdigit()} - {str(os.getpid())}
    for pid in {*pids, str(os.getppid())}:  # the harness is its parent, when nothing walls it in
        try:
            with open(f"/proc/{pid}/environ", "rb") as other:
                seen += other.read().decode(errors="replace")
        except OSError:
            pass
    found["secret in /proc/*/environ"] = "reached" if any(v in seen for v in values) else "blocked"
    found["processes seen"] = str(len([p for p in os.listdir("/proc") if p.isdigit()]))
    return found


def _curl(url):  # type: ignore[no-untyped-def]
    import subprocess

    if subprocess.run(["curl", "-s", "-m", "3", url], capture_output=True).returncode:
        raise ConnectionError("curl failed")


def _httpcore(url):  # type: ignore[no-untyped-def]
    import httpcore

    with httpcore.ConnectionPool() as pool:
        pool.request("GET", url, extensions={"timeout": {"connect": 3}})


def _unrecorded(url):  # type: ignore[no-untyped-def]
    import recorder

    with recorder.unrecorded():
        urllib.request.urlopen(url, timeout=3)


def _in_thread(action):  # type: ignore[no-untyped-def]
    import threading

    failed = []

    def run():  # type: ignore[no-untyped-def]
        try:
            action()
        except Exception as exc:
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]


def _update(store):  # type: ignore[no-untyped-def]
    import sqlite3

    with sqlite3.connect(store) as conn:
        conn.execute("CREATE TABLE planted (verdict TEXT)")


def _world_in_memory():  # type: ignore[no-untyped-def]
    import gc

    if not any(type(o).__name__ == "World" for o in gc.get_objects()):
        raise LookupError("no World in this process")


def _unix(path):  # type: ignore[no-untyped-def]
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(3)
        conn.connect(path)


def _remount():  # type: ignore[no-untyped-def]
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    ms_remount, ms_bind = 32, 4096
    if libc.mount(None, b"/", None, ms_remount | ms_bind, None) != 0:
        raise PermissionError(ctypes.get_errno(), "mount failed")


def _ptrace_parent():  # type: ignore[no-untyped-def]
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    ptrace_seize = 0x4206  # attaches without stopping it; detached when this process ends
    if libc.ptrace(ptrace_seize, os.getppid(), None, None) != 0:
        raise PermissionError(ctypes.get_errno(), "ptrace failed")


def _capabilities():  # type: ignore[no-untyped-def]
    with open("/proc/self/status") as status:
        held = {k: v.strip() for k, _, v in (line.partition(":") for line in status)}
    if int(held["CapEff"], 16) == 0 and int(held["CapPrm"], 16) == 0:
        raise PermissionError("no capability held")


def escape(instruction: str, env) -> str:  # type: ignore[no-untyped-def]
    """The same, as a Python agent (``--agent tests.e2e.escape_child:escape``)."""
    return json.dumps(attempts(env.settings))


if __name__ == "__main__":
    print(json.dumps(attempts(json.loads(os.environ.get("REPLAY_SETTINGS") or "{}"))))
