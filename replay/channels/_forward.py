"""``python _forward.py PORT=SOCKET ... -- PROGRAM ARGS``: the trial's addresses inside a sandbox.

Runs first in an isolated agent's network namespace (only its own loopback
there), standard library alone: for each ``PORT=SOCKET`` it listens on
``127.0.0.1:PORT`` and pipes every connection to the Unix socket ``SOCKET``
(bound into the sandbox; the harness's bridge on the other side reaches the
endpoint at the same port on its own loopback), so the addresses in the
agent's environment work unchanged and nothing else is reachable. Then it
runs ``PROGRAM`` with its stdio and exits with its code.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading


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


def serve(listener: socket.socket, path: str) -> None:
    """Pipe each connection to ``listener`` to the Unix socket at ``path``, both ways."""
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        there = socket.socket(socket.AF_UNIX)
        try:
            there.connect(path)
        except OSError:
            conn.close()
            there.close()
            continue
        splice(conn, there)


def main(argv: list[str]) -> int:
    """Listen, then run the program."""
    if "--" not in argv:
        print("usage: python _forward.py PORT=SOCKET ... -- PROGRAM ARGS", file=sys.stderr)
        return 2
    cut = argv.index("--")
    for pair in argv[:cut]:
        port, _, path = pair.partition("=")
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(64)
        threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    program = argv[cut + 1 :]
    try:  # (posix_spawn, not subprocess: its import alone is most of this script's start-up)
        child = os.posix_spawnp(program[0], program, os.environ)
    except OSError as exc:
        print(f"the agent command did not start: {exc}", file=sys.stderr)
        return 127
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
