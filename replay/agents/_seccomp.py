"""What a walled agent tries to reach, seen as it tries: a seccomp listener (Linux 5.9+).

The walls (``_isolation``) are what stop an agent: in its own network namespace
nothing but the trial's endpoints exists. This module is what *sees* it try.
Before the agent's program starts, a filter is installed on it (inherited by
every thread and child it makes) that stops the calls that aim somewhere —
``connect``, ``sendto`` with an address, ``sendmsg``/``sendmmsg`` — the opens
that write (``open``/``openat`` with a writing flag, ``creat``, ``openat2``)
and the calls that reach into another process (``ptrace``,
``process_vm_readv``/``writev``, ``pidfd_getfd``), and hands each to a
supervisor in the harness (``_supervisor``). The supervisor reads the address (or path) from
the caller's memory and lets the call go on when it is one of the trial's
endpoints (or a file on a read-write mount of the sandbox: its ``/tmp``);
anything else is refused (``EACCES``; ``EPERM`` for another process,
``EROFS`` for a file) and reported as a sandbox violation. ``io_uring``
(which would connect past the filter) is not available inside (``ENOSYS``).

A caller could change the address between our reading and the kernel's (a
second thread racing the first): that evades the *record*, never the walls,
which the kernel holds. Standard library only: ``_forward.py`` installs the
filter inside the sandbox, loading this file by its path.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import socket
import struct

AGENT_UID = 1000
"""The agent's uid inside (``_bwrap.AGENT_UID``: this file loads alone, with no import)."""
_ALLOW, _NOTIFY, _ERRNO = 0x7FFF0000, 0x7FC00000, 0x00050000
_KILL_PROCESS = 0x80000000
_LD_ABS_W, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
"""Open flags that write: such an open is trapped (a read-only one is not)."""
_NEW_LISTENER = 1 << 3
_NO_NEW_PRIVS = 38
_RECV, _SEND, _ID_VALID = 0xC0502100, 0xC0182101, 0x40082102
_CONTINUE = 1
_NAMESPACES = 0x7E020080
"""``CLONE_NEWNS``, ``NEWCGROUP``, ``NEWUTS``, ``NEWIPC``, ``NEWUSER``, ``NEWPID``, ``NEWNET``,
``NEWTIME``: refused to ``unshare`` and ``clone`` (``NEWTIME`` is ``unshare``'s alone)."""
_NEW_USER = 0x10000000
_SET_DUMPABLE = 4
_AT_FDCWD = -100
_ERRORS = {"ptrace": errno.EPERM, "write": errno.EROFS, "read": errno.ENOENT}
"""What a refused call returns, by action (else ``EACCES``)."""


class _Arch:
    """An architecture's audit number and the calls' numbers there."""

    def __init__(self, audit: int, numbers: dict[str, int], x32: bool = False) -> None:
        self.audit, self.numbers, self.x32 = audit, numbers, x32


_ARCHES = {
    "x86_64": _Arch(
        0xC000003E,
        {
            "connect": 42, "sendto": 44, "sendmsg": 46, "sendmmsg": 307, "ptrace": 101,
            "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438,
            "io_uring_setup": 425, "seccomp": 317, "open": 2, "creat": 85, "openat": 257,
            "openat2": 437, "unshare": 272, "clone": 56, "clone3": 435, "setns": 308,
        },
        x32=True,
    ),
    "aarch64": _Arch(
        0xC00000B7,
        {
            "connect": 203, "sendto": 206, "sendmsg": 211, "sendmmsg": 269, "ptrace": 117,
            "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438,
            "io_uring_setup": 425, "seccomp": 277, "openat": 56, "openat2": 437,
            "unshare": 97, "clone": 220, "clone3": 435, "setns": 268,
        },
    ),
}  # fmt: skip
_ARCH = _ARCHES.get(os.uname().machine)
_REACHING = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd")


def supported() -> bool:
    """Whether this machine's architecture is one the filter is written for."""
    return _ARCH is not None


def _program(arch: _Arch) -> bytes:
    """The filter: trapped calls to the supervisor, the rest allowed.

    Written with labels (classic BPF jumps forward only, by offset): each jump
    names where it goes, and offsets are counted once every label is placed.
    """
    n = arch.numbers
    code: list[tuple[int, int | str, int | str, int]] = []
    labels: dict[str, int] = {}

    def op(kind: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        code.append((kind, jt, jf, k))

    def here(label: str) -> None:
        labels[label] = len(code)

    op(_LD_ABS_W, 4)  # arch
    op(_JEQ, arch.audit, 0, "kill")
    op(_LD_ABS_W, 0)  # nr
    if arch.x32:  # the x32 calls of x86_64 would go around every number below
        op(_JGE, 0x40000000, "eperm", 0)
    op(_JEQ, n["io_uring_setup"], "enosys", 0)
    op(_JEQ, n["clone3"], "enosys", 0)  # (its flags are out of reach: libc falls back to clone)
    op(_JEQ, n["setns"], "eperm", 0)
    op(_JEQ, n["unshare"], "unshare", 0)
    op(_JEQ, n["clone"], "clone", 0)
    trapped = ["connect", "sendmsg", "sendmmsg", *_REACHING, "creat", "openat2"]
    for name in trapped:
        if name in n:
            op(_JEQ, n[name], "notify", 0)
    op(_JEQ, n["sendto"], "sendto", 0)
    op(_JEQ, n["openat"], "notify", 0)
    if "open" in n:
        op(_JEQ, n["open"], "notify", 0)
    op(_RET, _ALLOW)
    here("sendto")  # args[4], the address: none (a connected socket's send) is allowed
    op(_LD_ABS_W, 16 + 8 * 4)
    op(_JEQ, 0, 0, "notify")
    op(_LD_ABS_W, 16 + 8 * 4 + 4)
    op(_JEQ, 0, "allow", "notify")
    here("unshare")  # no namespace of its own (a user's would give it back capabilities)
    op(_LD_ABS_W, 16)
    op(_JSET, _NAMESPACES, "eperm", "allow")
    here("clone")
    op(_LD_ABS_W, 16)
    op(_JSET, _NAMESPACES & ~0xFF, "eperm", "allow")
    here("notify")
    op(_RET, _NOTIFY)
    here("allow")
    op(_RET, _ALLOW)
    here("kill")
    op(_RET, _KILL_PROCESS)
    here("eperm")
    op(_RET, _ERRNO | errno.EPERM)
    here("enosys")
    op(_RET, _ERRNO | errno.ENOSYS)

    def offset(at: int, to: int | str) -> int:
        if isinstance(to, int):
            return to
        jump = labels[to] - at - 1
        assert 0 <= jump < 256, (to, jump)
        return jump

    out = [(kind, offset(i, jt), offset(i, jf), k) for i, (kind, jt, jf, k) in enumerate(code)]
    return b"".join(struct.pack("HBBI", *c) for c in out)


def unprivileged(tasks: int | None = None) -> None:
    """Become the agent's user: ``AGENT_UID`` in a user namespace of its own, no capability.

    Before ``install``, in the process that runs the agent. Its files (``/tmp``...)
    are its own there; with ``tasks``, it and what it starts may number that many
    processes and threads at once (``RLIMIT_NPROC``, counted in its namespace alone:
    this trial's). Dumpable again, for the supervisor and the forwarder to reach it.
    """
    uid, gid = os.geteuid(), os.getegid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_NEW_USER) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER)")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{AGENT_UID} {uid} 1"),
        ("gid_map", f"{AGENT_UID} {gid} 1"),
    ):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    if tasks:  # (after: the namespace's own ceiling stays its maker's, the count is its own)
        resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))
    if libc.prctl(_SET_DUMPABLE, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")


def install() -> int:
    """Install the filter on this process (before ``exec``); return the listener's fd.

    Raises:
        OSError: The kernel refused (no seccomp, or no user notification).
    """
    if _ARCH is None:
        raise OSError(errno.ENOSYS, f"no seccomp filter for {os.uname().machine}")
    libc = ctypes.CDLL(None, use_errno=True)
    # No capability survives into the program (the forwarder kept one to answer DNS on
    # port 53): with none permitted and no new privileges, exec grants none back.
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    if libc.capset(header, bytes(24)) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    if libc.prctl(_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    program = _program(_ARCH)
    filters = ctypes.create_string_buffer(program, len(program))

    class Fprog(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))

    fprog = Fprog(len(program) // 8, ctypes.addressof(filters))
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(
        ctypes.c_long(_ARCH.numbers["seccomp"]),
        ctypes.c_uint(1),  # SECCOMP_SET_MODE_FILTER
        ctypes.c_uint(_NEW_LISTENER),
        ctypes.byref(fprog),
    )
    if fd < 0:
        raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_SET_MODE_FILTER)")
    return int(fd)


def filtered(said: int, go: int, tasks: int | None = None) -> None:
    """In a forked child, before it runs the agent: its user, the filter handed over.

    Becomes the agent's user (``unprivileged``, at most ``tasks`` processes; if it
    cannot, nothing runs), installs the filter, writes its listener's fd number (or
    why there is none) to the pipe ``said``, and waits for a byte on ``go``: the
    parent has handed the listener on. A parent gone first ends the child (nothing
    runs unwatched).
    """
    try:
        unprivileged(tasks)
    except OSError as exc:
        why = f"the agent's user could not be made: {exc}"
        os.write(said, f"-1 {why}".encode()[:400])
        os.write(2, f"{why}\n".encode())
        os._exit(126)
    try:
        fd = install()
        os.write(said, str(fd).encode())
    except OSError as exc:
        fd = -1
        os.write(said, f"-1 {exc}".encode()[:400])
    os.close(said)
    if not os.read(go, 1):
        os._exit(127)
    os.close(go)
    if fd >= 0:
        os.close(fd)


def handed(child: int, said: int, control: socket.socket) -> None:
    """In the parent: take the child's listener (``filtered``) and send it on ``control``.

    Or a line saying why there is none.
    """
    told = os.read(said, 512).decode()
    os.close(said)
    if told.startswith("-1") or not told:
        control.sendall(f"unavailable: {told[3:] or 'the child ended'}\n".encode())
        return
    listener = fetch_fd(child, int(told))
    socket.send_fds(control, [b"listener\n"], [listener])
    os.close(listener)


def fetch_fd(pid: int, number: int) -> int:
    """A copy of process ``pid``'s fd ``number`` (``pidfd_getfd``)."""
    if _ARCH is None:
        raise OSError(errno.ENOSYS, "pidfd_getfd")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    pidfd = os.pidfd_open(pid)
    try:
        fd = libc.syscall(
            ctypes.c_long(_ARCH.numbers["pidfd_getfd"]),
            ctypes.c_int(pidfd),
            ctypes.c_int(number),
            ctypes.c_uint(0),
        )
    finally:
        os.close(pidfd)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "pidfd_getfd")
    return int(fd)


def unescaped(point: str) -> str:
    r"""A mount point as ``mountinfo`` writes it (``\040`` for a space...), as it is."""
    import re  # (here: the forwarder never loads it)

    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), point)
