"""``python _forward.py PORT=SOCKET ... -- PROGRAM ARGS``: the trial's addresses inside a sandbox.

Runs first in an isolated agent's network namespace (only its own loopback
there), standard library alone: for each ``PORT=SOCKET`` it listens on
``127.0.0.1:PORT`` and pipes every connection to the Unix socket ``SOCKET``
(bound into the sandbox; the harness's bridge on the other side reaches the
endpoint at the same port on its own loopback), so the addresses in the
agent's environment work unchanged and nothing else is reachable. Then it
runs ``PROGRAM`` with its stdio, as the agent's user (``_seccomp.unprivileged``:
no capability, at most ``--tasks`` processes), and exits with its code; with
``--control SOCKET``, under the seccomp filter that shows the harness every
attempt to reach anything else (``_seccomp``, ``watched``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import sys
import threading
from typing import Any


def pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until it ends; then end ``sink``'s writing."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def splice(one: socket.socket, other: socket.socket) -> None:
    """Pipe two sockets both ways, in threads; close both once both ways have ended."""
    left = [2]
    lock = threading.Lock()

    def way(source: socket.socket, sink: socket.socket) -> None:
        pipe(source, sink)
        with lock:
            left[0] -= 1
            if left[0] == 0:
                one.close()
                other.close()

    for source, sink in ((one, other), (other, one)):
        threading.Thread(target=way, args=(source, sink), daemon=True).start()


def split_forwards(given: list[str]) -> tuple[list[str], dict[str, str]]:
    """``[ADDRESS:]PORT=SOCKET`` pairs and ``--name=NAME=ADDRESS`` names, apart."""
    names = dict(a.removeprefix("--name=").split("=", 1) for a in given if a[:7] == "--name=")
    return [a for a in given if a[:7] != "--name="], names


def forward(pair: str) -> socket.socket:
    """Listen as ``[ADDRESS:]PORT=SOCKET`` says (``serve``, in a thread); the listener."""
    where, _, path = pair.partition("=")
    address, _, port = where.rpartition(":")
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((address or "127.0.0.1", int(port)))
    listener.listen(64)
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    return listener


def serve(listener: socket.socket, path: str) -> None:
    """Pipe each connection to ``listener`` to the Unix socket at ``path``, both ways."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return  # closed (a zygote's trial is over)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        there = socket.socket(socket.AF_UNIX)
        try:
            there.connect(path)
        except OSError:
            conn.close()
            there.close()
            continue
        splice(conn, there)


def answer_dns(listener: socket.socket, report: socket.socket, names: dict[str, str]) -> None:
    """Answer DNS queries, telling ``report`` each name asked.

    The sandbox's ``resolv.conf`` names this resolver: a lookup is how most
    attempts to reach a host begin, and the name is what the harness records.
    A name in ``names`` (an allowed host) gets its address there; any other,
    "no such name".
    """
    while True:
        try:
            query, peer = listener.recvfrom(4096)
        except OSError:
            return
        asked = question(query)
        if asked is None:
            continue
        name, end = asked
        flags = (query[2] << 8 | query[3]) & 0x7900  # opcode and RD, as asked
        address = names.get(name.lower().rstrip("."))
        answers = b""
        if address is not None and query[end - 4 : end - 2] == b"\0\1":  # A: its address
            answers = b"\xc0\x0c\0\1\0\1\0\0\0\x3c\0\4" + socket.inet_aton(address)
        code = 0x8080 if address is not None else 0x8083  # found (maybe no AAAA); no such name
        head = (code | flags).to_bytes(2, "big") + b"\0\1" + (b"\0\1" if answers else b"\0\0")
        with contextlib.suppress(OSError):  # (told before it is answered: none goes unseen)
            report.sendall(f"dns {name}\n".encode())
        with contextlib.suppress(OSError):
            listener.sendto(query[:2] + head + b"\0\0\0\0" + query[12:end] + answers, peer)


_PLAIN = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def question(query: bytes) -> tuple[str, int] | None:
    """The name a DNS query asks about, and where its question ends (None: unreadable)."""
    if len(query) < 17 or query[2] & 0x80 or query[4:6] != b"\0\1":
        return None
    labels, at = [], 12
    while at < len(query) and query[at]:
        size = query[at]
        if size > 63 or at + 1 + size >= len(query):
            return None
        label = query[at + 1 : at + 1 + size]  # (a name's letters, or escaped: no line breaks)
        labels.append("".join(chr(c) if c in _PLAIN else f"\\{c:03d}" for c in label))
        at += 1 + size
    end = at + 1 + 4  # the root label, the type and class
    return (".".join(labels)[:1024], end) if end <= len(query) else None


def _seccomp() -> Any:
    """``_seccomp.py``, loaded by its path (the forwarder imports nothing of the harness)."""
    spec = importlib.util.spec_from_file_location(
        "_seccomp", os.path.join(os.path.dirname(__file__), "_seccomp.py")
    )
    assert spec is not None
    assert spec.loader is not None
    seccomp = sys.modules["_seccomp"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(seccomp)
    return seccomp


def watched(
    program: list[str], control: str, tasks: int | None = None
) -> tuple[int, int, socket.socket]:
    """Fork ``program``'s process under the seccomp filter, its listener handed to ``control``.

    The agent's user is made and the filter installed in the child, between
    ``fork`` and ``exec`` (``_seccomp.filtered``); this process (unfiltered) takes
    a copy of its listener and sends it over the Unix socket ``control`` to the
    harness's supervisor, or a line saying why there is none. Returns the child's
    pid, the pipe to write one byte to when it may run the program, and the
    connection (kept open: the names looked up are reported there, ``answer_dns``).
    """
    seccomp = _seccomp()
    said_r, said_w = os.pipe()
    go_r, go_w = os.pipe()
    child = os.fork()
    if child == 0:  # (no thread runs yet: fork is safe)
        os.close(said_r)
        os.close(go_w)
        seccomp.filtered(said_w, go_r, tasks)
        _exec(program)
    os.close(said_w)
    os.close(go_r)
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(control)
    seccomp.handed(child, said_r, conn)
    return child, go_w, conn


def unwatched(program: list[str], tasks: int | None = None) -> tuple[int, int]:
    """Fork ``program``'s process as the agent's user, with no filter (none asked for).

    Returns its pid and the pipe to write one byte to when it may run the program.
    """
    seccomp = _seccomp()
    go_r, go_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(go_w)
        try:
            seccomp.unprivileged(tasks)
        except OSError as exc:
            print(f"the agent's user could not be made: {exc}", file=sys.stderr)
            os._exit(126)
        if not os.read(go_r, 1):
            os._exit(127)
        os.close(go_r)
        _exec(program)
    os.close(go_r)
    return child, go_w


def _exec(program: list[str]) -> None:
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        print(f"the agent command did not start: {exc}", file=sys.stderr)
    os._exit(127)


def main(argv: list[str]) -> int:
    """Listen, then run the program."""
    control, tasks = None, None
    while argv[:1] in (["--control"], ["--tasks"]):
        if argv[0] == "--control":
            control = argv[1]
        else:
            tasks = int(argv[1])
        argv = argv[2:]
    if "--" not in argv:
        print(
            "usage: python _forward.py [--control SOCKET] [--tasks N] [ADDRESS:]PORT=SOCKET ... "
            "[--name=NAME=ADDRESS ...] -- PROGRAM ARGS",
            file=sys.stderr,
        )
        return 2
    cut = argv.index("--")
    pairs, names = split_forwards(argv[:cut])
    program = argv[cut + 1 :]
    # Forked before any listener or thread: the program inherits neither.
    if control is None:
        child, go = unwatched(program, tasks)
    else:
        child, go, report = watched(program, control, tasks)
        resolver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            resolver.bind(("127.0.0.1", 53))  # (the one capability the walls leave us)
            threading.Thread(target=answer_dns, args=(resolver, report, names), daemon=True).start()
        except OSError as exc:
            report.sendall(f"unavailable: no resolver to see names looked up ({exc})\n".encode())
    for pair in pairs:
        forward(pair)
    os.write(go, b"g")
    os.close(go)
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
