"""The harness's side of the seccomp listener: each trapped call read, judged, answered.

``_seccomp`` installs the filter in the agent's sandbox and hands its listener
to the harness; a ``Supervisor`` here reads what each trapped call aims at
(an address, a path, another process) from the caller's memory, asks the
walls whether it may go on, and answers the kernel. Linux 5.9+.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import socket
import struct
import threading
from collections.abc import Callable

from ._bwrap import HIDDEN
from ._seccomp import (
    _ARCH,
    _AT_FDCWD,
    _CONTINUE,
    _ERRORS,
    _ID_VALID,
    _REACHING,
    _RECV,
    _SEND,
    _WRITES,
    unescaped,
)


class Attempt:
    """One trapped call: what it aimed at.

    Attributes:
        action: ``connect``, ``send`` (a datagram with an address), ``ptrace``
            (any reach into another process), ``write`` (a file opened to write where
            it may not) or ``read`` (a host file the sandbox does not have).
        family: ``inet``, ``inet6``, ``unix``, ``netlink``, ``unspec`` or ``other``;
            ``process`` for ``ptrace``, ``file`` for ``write`` and ``read``.
        host: The address (an IP, a socket path, ``@name`` for an abstract socket,
            a process id for ``ptrace``).
        port: The port, for ``inet``/``inet6``.
    """

    __slots__ = ("action", "family", "host", "port")

    def __init__(self, action: str, family: str, host: str, port: int | None = None) -> None:
        self.action, self.family, self.host, self.port = action, family, host, port

    def __repr__(self) -> str:
        return f"Attempt({self.action} {self.target})"

    @property
    def target(self) -> str:
        """``host:port``, ``[v6]:port``, ``unix:path``, ``pid N``."""
        if self.family == "inet":
            return f"{self.host}:{self.port}"
        if self.family == "inet6":
            return f"[{self.host}]:{self.port}"
        if self.family == "process":
            return f"pid {self.host}"
        if self.family == "file":
            return self.host
        return f"{self.family}:{self.host}"


def _address(raw: bytes) -> tuple[str, str, int | None]:
    """A ``sockaddr``'s family, host and port."""
    if len(raw) < 2:
        return "unspec", "", None
    family = struct.unpack_from("H", raw)[0]
    if family == socket.AF_INET and len(raw) >= 8:
        return "inet", socket.inet_ntop(socket.AF_INET, raw[4:8]), struct.unpack(">H", raw[2:4])[0]
    if family == socket.AF_INET6 and len(raw) >= 24:
        if raw[8:20] == b"\0" * 10 + b"\xff\xff":  # an IPv4 address, mapped: as itself
            return (
                "inet",
                socket.inet_ntop(socket.AF_INET, raw[20:24]),
                struct.unpack(">H", raw[2:4])[0],
            )
        host = socket.inet_ntop(socket.AF_INET6, raw[8:24])
        return "inet6", host, struct.unpack(">H", raw[2:4])[0]
    if family == socket.AF_UNIX:
        path = raw[2:]
        if path[:1] == b"\0":
            return "unix", "@" + path[1:].decode("utf-8", "replace"), None
        return "unix", path.split(b"\0", 1)[0].decode("utf-8", "replace"), None
    if family == socket.AF_NETLINK:
        return "netlink", "", None
    if family == socket.AF_UNSPEC:
        return "unspec", "", None
    return "other", str(family), None


def _writable(pid: int, path: str) -> bool:
    """Whether ``path`` is on a read-write mount as process ``pid`` sees its files.

    Its ``mountinfo`` (mount points as it sees them): the deepest mount holding
    ``path`` says. A write to a read-only one is a reach past the walls (the
    store, the fixtures, the harness's code); one to its private ``/tmp`` is not.
    """
    try:
        with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="replace") as info:
            mounts = [line.split() for line in info]
    except OSError:
        return True  # gone: nothing to record
    best, options = "", "rw"
    for fields in mounts:
        if len(fields) < 6:
            continue
        point = unescaped(fields[4])
        inside = point == "/" or path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, options = point, fields[5]
    return "ro" not in options.split(",")


_NAMES = {v: k for k, v in _ARCH.numbers.items()} if _ARCH is not None else {}
"""The trapped calls' names, by number."""
_SHOWN_WHOLE = ("/usr/", "/lib/", "/lib64/", "/bin/", "/sbin/", "/proc/", "/dev/", "/sys/")
"""Where a sandbox has what the host has, or only its own: no read there reaches the host."""
_OWN = ("/proc", "/dev", "/sys")
"""The sandbox's own (or the host's, shown whole): never a host file it reaches for."""
_HIDDEN_IN_OWN = tuple(f"{h}/" for h in HIDDEN if h.startswith(tuple(f"{o}/" for o in _OWN)))
"""Under those, the folders whose host files the walls hide (``/dev/shm``: a sandbox has its
own, empty): a host file there it reaches for is an attempt like any other."""


def _string(read: Callable[[int, int], bytes], address: int, most: int = 4096) -> bytes:
    """The NUL-ended string at ``address``, a page at a time (never reading past its end)."""
    out = b""
    while len(out) < most:
        size = 4096 - address % 4096
        chunk = read(address, size)
        end = chunk.find(b"\0")
        if end >= 0 or not chunk:
            return out + chunk[: end if end >= 0 else len(chunk)]
        out, address = out + chunk, address + size
    return out[:most]


def _host_only(pid: int, path: str) -> bool:
    """Whether ``path`` is a file of the host's that process ``pid``'s sandbox does not have."""
    if path == "/" or (
        any(path == p or path.startswith(p + "/") for p in _OWN)
        and not path.startswith(_HIDDEN_IN_OWN)
    ):
        return False
    return _inside(pid, path) is False and os.path.lexists(path)


def _inside(pid: int, path: str) -> bool | None:
    """Whether process ``pid``'s sandbox has ``path`` (None: it cannot be told)."""
    try:
        os.lstat(f"/proc/{pid}/root{path}")
        return True
    except FileNotFoundError:
        return False
    except OSError:
        return None  # (not a folder on the way, gone: nothing to tell)


class Supervisor:
    """Answers one sandbox's trapped calls, in a thread, until its last process ends.

    ``allowed(attempt)`` says whether a call may go on; ``report(attempt)`` is
    told of each that may not (it is refused).
    """

    def __init__(
        self,
        fd: int,
        allowed: Callable[[Attempt], bool],
        report: Callable[[Attempt], None],
    ) -> None:
        self._fd, self._allowed, self._report = fd, allowed, report
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._serve, name="replay-seccomp", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop answering (calls still trapped then fail: the filter's listener is gone)."""
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")
        self._thread.join(timeout=5)
        for fd in (self._stop_r, self._stop_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _serve(self) -> None:
        import fcntl

        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        notif = bytearray(80)
        try:
            while True:
                events = dict(poller.poll())
                if self._stop_r in events:
                    return
                if events.get(self._fd, 0) & (select.POLLHUP | select.POLLERR):
                    return  # every process under the filter has ended
                notif[:] = bytes(80)
                try:
                    fcntl.ioctl(self._fd, _RECV, notif)
                except OSError as exc:
                    if exc.errno in (errno.EINTR, errno.ENOENT):
                        continue  # the caller was interrupted before we took it
                    return
                ident, pid = struct.unpack_from("QI", notif)
                number = struct.unpack_from("i", notif, 16)[0]
                args = struct.unpack_from("6Q", notif, 32)
                try:
                    error = self._answer(ident, pid, number, args)
                except Exception:  # whatever went wrong with this call: refused, not served on
                    error = errno.EACCES
                if error is None:
                    continue  # gone meanwhile (its pid may be another process's now)
                response = struct.pack(
                    "QqiI", ident, 0, -error if error else 0, 0 if error else _CONTINUE
                )
                with contextlib.suppress(OSError):  # gone meanwhile (a signal, an exit)
                    fcntl.ioctl(self._fd, _SEND, response)
        finally:
            with contextlib.suppress(OSError):
                os.close(self._fd)

    def _answer(self, ident: int, pid: int, number: int, args: tuple[int, ...]) -> int | None:
        """The errno to refuse a call with (0: it goes on; None: it is gone)."""
        import fcntl

        attempts = self._read(pid, number, args)
        if not attempts:
            return 0  # (nothing to refuse: another's memory read would change no answer)
        try:  # what was read was that caller's: its pid was not reused meanwhile
            fcntl.ioctl(self._fd, _ID_VALID, struct.pack("Q", ident))
        except OSError:
            return None
        refused = [a for a in attempts if not self._allowed(a)]
        for attempt in refused:
            self._report(attempt)
        return _ERRORS.get(refused[0].action, errno.EACCES) if refused else 0

    def _read(self, pid: int, number: int, args: tuple[int, ...]) -> list[Attempt]:
        """What the call aims at (none: it may go on as it is)."""
        name = _NAMES.get(number, "")
        if name in _REACHING:
            target = args[1] if name == "ptrace" else args[0]
            return [Attempt("ptrace", "process", str(target))]
        try:
            with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:

                def read(address: int, size: int) -> bytes:
                    return os.pread(mem.fileno(), size, address) if address else b""

                if name in ("open", "creat", "openat", "openat2"):
                    return self._opened(pid, name, args, read)
                if name == "connect":
                    return [self._attempt("connect", read(args[1], min(args[2], 128)))]
                if name == "sendto":
                    return [self._attempt("send", read(args[4], min(args[5], 128)))]
                headers = [args[1]] if name == "sendmsg" else [
                    args[1] + 64 * i for i in range(min(args[2], 64))
                ]  # fmt: skip
                found = []
                for at in headers:
                    name_at, size = struct.unpack("QI", read(at, 12))
                    if name_at:
                        found.append(self._attempt("send", read(name_at, min(size, 128))))
                return found
        except (OSError, ValueError, OverflowError, struct.error):
            return [Attempt("connect", "other", "an address that could not be read")]

    @staticmethod
    def _opened(
        pid: int, name: str, args: tuple[int, ...], read: Callable[[int, int], bytes]
    ) -> list[Attempt]:
        """The host file an open reaches for (none: one the sandbox has, or none at all).

        A write to a read-only mount (the walls' own files), or any open of a path
        the sandbox does not have but the host does (the store, ``/etc/shadow``,
        another trial's ``/tmp``): a path absent from both is only a missing file.
        """
        at_dir = name in ("openat", "openat2")
        if name == "openat2":  # its flags are the first field of its struct open_how
            (flags,) = struct.unpack("Q", read(args[2], 8).ljust(8, b"\0"))
        elif name == "creat":
            flags = os.O_WRONLY
        else:
            flags = args[2] if at_dir else args[1]
        try:
            raw = _string(read, args[1] if at_dir else args[0])
        except OSError:
            return []  # (no path there: the kernel says EFAULT)
        path = raw.decode("utf-8", "replace")
        if not path.startswith("/"):
            fd = args[0] & 0xFFFFFFFF
            fd = fd - 2**32 if fd >= 2**31 else fd
            base = f"/proc/{pid}/cwd" if not at_dir or fd == _AT_FDCWD else f"/proc/{pid}/fd/{fd}"
            try:
                where = os.readlink(base)
            except OSError:
                return []
            if not where.startswith("/"):
                return []  # (a folder the harness cannot name: the walls hold all the same)
            path = os.path.join(where, path)
        path = os.path.normpath(path)
        action = "write" if flags & _WRITES else "read"
        shown = path.startswith(_SHOWN_WHOLE) and not path.startswith(_HIDDEN_IN_OWN)
        if action == "read" and shown:
            return []
        if action == "write" and not _writable(pid, path):
            return [Attempt("write", "file", path)]
        if flags & os.O_CREAT and _inside(pid, os.path.dirname(path)):
            return []  # a file of its own made (even where the host has one of that name)
        return [Attempt(action, "file", path)] if _host_only(pid, path) else []

    @staticmethod
    def _attempt(action: str, raw: bytes) -> Attempt:
        family, host, port = _address(raw)
        return Attempt(action, family, host, port)
