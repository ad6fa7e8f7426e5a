"""Bubblewrap's command line for a sandbox: what is hidden, what is shown, what may be written.

Everything is read-only but the folders given; where other trials, services and
the user keep their files (``HIDDEN``) is a private empty tmpfs, but for what
the program needs (``_shown``); a folder of names (``write_names``) is the
sandbox's ``resolv.conf`` and ``hosts``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

HIDDEN = ("/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm", os.path.expanduser("~"))
"""Where other trials, services and the user keep their files and sockets: empty inside
(a private tmpfs each), but for what the program needs (``_shown``)."""


def write_names(folder: str, names: Mapping[str, str]) -> None:
    """Write the ``resolv.conf`` and ``hosts`` a sandbox sees (``sandbox_argv``) in ``folder``.

    The resolver is the forwarder's (127.0.0.1:53); ``hosts`` has ``localhost``
    and the allowed names at their addresses inside: the host's own names would
    go around the resolver (every name is looked up there, and recorded).
    Rewritten in place, a running sandbox sees the new ones.
    """
    files = {
        "resolv.conf": "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n",
        "hosts": "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"
        + "".join(f"{address} {name}\n" for name, address in names.items()),
    }
    for name, text in files.items():
        with open(
            os.path.join(folder, name),
            "r+" if os.path.exists(os.path.join(folder, name)) else "w",
            encoding="utf-8",
        ) as given:
            given.truncate(0)
            given.write(text)


def sandbox_argv(program: Sequence[str], writable: Sequence[str], names: str | None) -> list[str]:
    """Bubblewrap's command line up to the program, for a sandbox running ``program``.

    ``writable`` are bound read-write; with ``names`` (a folder ``write_names``
    wrote), its ``resolv.conf`` and ``hosts`` are the sandbox's and one capability
    is kept for the resolver's port (the forwarder's, dropped before the program).
    """
    binds = [arg for path in writable for arg in ("--bind", path, path)]
    hidden = [arg for path in _hidden() for arg in ("--tmpfs", path)]
    caps: list[str] = []
    resolver: list[str] = []
    if names is not None:
        caps = ["--cap-add", "CAP_NET_BIND_SERVICE"]
        for name in ("resolv.conf", "hosts"):
            if os.path.lexists(f"/etc/{name}"):  # (with none, resolvers ask 127.0.0.1)
                resolver += [
                    "--ro-bind",
                    os.path.join(names, name),
                    os.path.realpath(f"/etc/{name}"),
                ]
    shown = _shown(program)
    here = os.getcwd() if os.getcwd() in shown or not _under(os.getcwd(), _hidden()) else "/"
    return [
        "bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL",
        *caps, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *hidden,
        *(arg for path in shown for arg in ("--ro-bind", path, path)), *binds, *resolver,
        "--setenv", "TMPDIR", "/tmp", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
        "--chdir", here, "--",
    ]  # fmt: skip


def hidden_roots() -> list[str]:
    """The folders each sandbox has private and empty (``/tmp``, home...)."""
    return _hidden()


def _hidden() -> list[str]:
    """The hidden roots that exist here (real folders, not links to one another)."""
    real = {os.path.realpath(p) for p in HIDDEN if os.path.isdir(p)}
    return sorted(p for p in real if p != "/")


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(Path(path).is_relative_to(root) for root in roots)


def _shown(program: Sequence[str]) -> list[str]:
    """What the program needs from the hidden roots, shown read-only.

    The working directory, the interpreters and the harness's code (the forwarder runs
    there), the program's folder and every path the command line names; never a hidden
    root itself or a folder holding one (``/tmp`` as the working directory would show
    every trial's files: the program then runs in ``/``). A program that needs more of
    the home folder (a version manager's shims) is named by its real path instead.
    """
    roots = _hidden()
    needed = {os.getcwd(), str(Path(__file__).parents[2])}
    needed |= {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    needed |= {arg for arg in program if os.path.exists(arg)}
    found = shutil.which(program[0]) if program else None
    if found:  # the program itself, wherever PATH found it (a link's target too)
        needed |= {os.path.dirname(found), os.path.dirname(os.path.realpath(found))}
    inside = {
        real
        for real in (os.path.realpath(p) for p in needed)
        if _under(real, roots) and not any(Path(root).is_relative_to(real) for root in roots)
    }
    # A path already shown with one of its parents needs no bind of its own.
    return sorted(
        p for p in inside if not any(p != q and Path(p).is_relative_to(q) for q in inside)
    )
