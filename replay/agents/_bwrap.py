"""Bubblewrap's command line for a sandbox: a root filesystem built from what the trial needs.

Nothing of the host is there unless it is named: the system's programs and
libraries (``/usr``, the ``/bin`` and ``/lib`` links), a few files of ``/etc``
(``ETC``: the linker's cache, certificates, time zone, name-service settings),
the interpreter and the virtualenv the harness runs on, the harness's own
packages (its forwarder runs there), the agent's code, and the folders given
writable. ``/etc/passwd``, ``group``, ``hosts`` and ``resolv.conf`` are the
sandbox's own (``write_names``). ``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm``
and the home folder are private tmpfs, of sizes that add up to the trial's
memory cap (``tmpfs_sizes``). The results store, the harness's working folder,
other users' files, ``/etc/shadow``: none of it exists inside.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

HIDDEN = ("/tmp", "/var/tmp", "/run", "/dev/shm", os.path.expanduser("~"))
"""The private folders: an empty tmpfs each inside (where other trials, services and the
user keep their files on the host), but for what the program needs (``shown_paths``)."""
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""The system's programs and libraries, read-only (a link stays a link: merged ``/usr``)."""
ETC = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "host.conf", "gai.conf",
    "localtime", "timezone", "ssl", "ca-certificates", "ca-certificates.conf", "pki",
    "crypto-policies", "alternatives", "mime.types", "protocols", "services", "os-release",
    "debian_version", "locale.alias", "python3", f"python3.{sys.version_info.minor}",
)  # fmt: skip
"""The files of the host's ``/etc`` shown inside (those that exist): what programs read to
link, resolve, check certificates and tell the time. No user, password or host key."""
AGENT_UID = 1000
"""The uid (and gid) the agent runs as inside: ``agent`` in the sandbox's ``/etc/passwd``."""
SHARES = {"/tmp": 0.5, "/dev/shm": 0.25}
"""Each private tmpfs's share of ``--trial-memory``; the others split what is left."""


def write_names(folder: str, names: Mapping[str, str]) -> None:
    """Write the ``/etc`` files a sandbox has of its own (``sandbox_argv``) in ``folder``.

    ``resolv.conf`` names the forwarder's resolver (127.0.0.1:53); ``hosts`` has
    ``localhost`` and the allowed names at their addresses inside (the host's own
    names would go around the resolver: every name is looked up there, and
    recorded); ``passwd`` and ``group`` have root and the agent's user
    (``AGENT_UID``). Rewritten in place, a running sandbox sees the new ones.
    """
    home = os.path.expanduser("~")
    files = {
        "resolv.conf": "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n",
        "hosts": "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"
        + "".join(f"{address} {name}\n" for name, address in names.items()),
        "passwd": f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"agent:x:{AGENT_UID}:{AGENT_UID}:agent:{home}:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": f"root:x:0:\nagent:x:{AGENT_UID}:\nnogroup:x:65534:\n",
    }
    for name, text in files.items():
        with open(
            os.path.join(folder, name),
            "r+" if os.path.exists(os.path.join(folder, name)) else "w",
            encoding="utf-8",
        ) as given:
            given.truncate(0)
            given.write(text)


def tmpfs_sizes(memory_mb: int) -> dict[str, int]:
    """Bytes each private tmpfs may hold: ``SHARES`` of ``memory_mb``, adding up to it."""
    roots = hidden_roots()
    others = [root for root in roots if root not in SHARES]
    rest = 1.0 - sum(share for root, share in SHARES.items() if root in roots)
    cap = memory_mb * 2**20
    return {
        root: max(2**20, int(cap * SHARES.get(root, rest / max(1, len(others))))) for root in roots
    }


def sandbox_argv(
    program: Sequence[str],
    writable: Sequence[str],
    names: str,
    watched: bool = False,
    shown: Sequence[str] = (),
    memory_mb: int | None = None,
) -> list[str]:
    """Bubblewrap's command line up to the program, for a sandbox running ``program``.

    ``writable`` are bound read-write, ``shown`` read-only besides what ``program``
    needs (``shown_paths``); ``names`` is a folder ``write_names`` wrote. Watched
    (``_seccomp``), one capability is kept for the resolver's port; always, one to
    map the agent's user (``_seccomp.unprivileged``): both dropped before the program.
    """
    caps = ["--cap-add", "CAP_SETFCAP"]
    if watched:
        caps += ["--cap-add", "CAP_NET_BIND_SERVICE"]
    sizes = tmpfs_sizes(memory_mb) if memory_mb else {}
    private: list[str] = []
    for root in hidden_roots():
        size = ["--size", str(sizes[root])] if root in sizes else []
        private += [*size, "--perms", "1777" if root != os.path.expanduser("~") else "0700"]
        private += ["--tmpfs", root]
    etc = [
        arg
        for name in ETC
        if os.path.exists(f"/etc/{name}")
        for arg in ("--ro-bind", f"/etc/{name}", f"/etc/{name}")
    ]
    own = [
        arg
        for name in ("resolv.conf", "hosts", "passwd", "group")
        for arg in ("--ro-bind", os.path.join(names, name), f"/etc/{name}")
    ]
    every = [  # (what is writable is bound so: a file named on the command line there too)
        path
        for path in shown_paths(program, shown)
        if not any(Path(path).is_relative_to(w) for w in writable)
    ]
    here = os.getcwd()
    bound = [*every, *writable, *(p for p in SYSTEM if not os.path.islink(p))]
    where = [] if any(Path(here).is_relative_to(p) for p in bound) else ["--dir", here]
    return [
        "bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL",
        *caps, *_system(), "--dev", "/dev", "--proc", "/proc", *private,
        "--symlink", "../run", "/var/run", *etc, *own,
        *(arg for path in every for arg in ("--ro-bind", path, path)),
        *(arg for path in writable for arg in ("--bind", path, path)), *where,
        "--setenv", "TMPDIR", "/tmp", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
        "--chdir", here, "--",
    ]  # fmt: skip


def hidden_roots() -> list[str]:
    """The folders each sandbox has private and empty (``/tmp``, home...)."""
    real = {os.path.realpath(p) for p in HIDDEN if os.path.isdir(p)}
    return sorted(p for p in real if p != "/")


def _system() -> list[str]:
    """``SYSTEM``, as the host has it: a folder bound, a link made again."""
    out: list[str] = []
    for path in SYSTEM:
        if os.path.islink(path):
            out += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            out += ["--ro-bind", path, path]
    return out


def visible(path: str, shown: Sequence[str]) -> bool:
    """Whether ``path`` is in a sandbox that shows ``shown``: in one, or on the way to one."""
    real = Path(os.path.realpath(path))
    system = [p for p in SYSTEM if os.path.isdir(p) and not os.path.islink(p)]
    return any(real.is_relative_to(p) or Path(p).is_relative_to(real) for p in (*shown, *system))


def harness_code() -> list[str]:
    """The folders of the harness's own packages (``replay``, ``recorder``)."""
    here = Path(__file__).resolve().parents[1]
    import recorder

    return sorted({str(here), str(Path(recorder.__file__).resolve().parent)})


def shown_paths(program: Sequence[str], shown: Sequence[str]) -> list[str]:
    """What the sandbox sees of the host besides ``SYSTEM`` and ``ETC``, read-only.

    The interpreters the harness runs on (and their virtualenv), its own packages
    (the forwarder runs there), the program (wherever ``PATH`` found it), every path
    its command line names (a file: with the code beside it, ``code_in``; ``-m
    MODULE``: the code where it is), and ``shown``. Never the root, a private folder
    or one holding one (``/tmp`` as a script's folder would show every trial's files).
    """
    roots = hidden_roots()
    needed = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    needed |= {*harness_code(), *shown}
    for arg in program:
        if os.path.exists(arg) and not os.path.isdir(arg):
            needed |= {arg, *code_in(os.path.dirname(os.path.abspath(arg)))}
        elif os.path.isdir(arg):
            needed.add(arg)
    if "-m" in program[1:-1]:  # ``python -m MODULE``: the module's package is its code
        needed |= set(python_paths(program[program.index("-m") + 1]))
    found = shutil.which(program[0]) if program else None
    if found:  # the program itself, wherever PATH found it (a link's target too)
        needed |= {os.path.dirname(found), os.path.dirname(os.path.realpath(found))}
    system = [p for p in SYSTEM if os.path.isdir(p) and not os.path.islink(p)]
    kept = set()
    for real in (os.path.realpath(p) for p in needed if p):
        if not os.path.exists(real) or real == "/":
            continue
        if any(Path(real).is_relative_to(s) for s in system):
            continue  # (shown already)
        if os.path.isdir(real) and any(Path(root).is_relative_to(real) for root in roots):
            continue  # a folder holding a private one: never
        kept.add(real)
    # A path already shown with one of its parents needs no bind of its own.
    return sorted(p for p in kept if not any(p != q and Path(p).is_relative_to(q) for q in kept))


CODE = (".py", ".pyi", ".pth", ".so", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts")
"""What a file of code ends with (``code_in``); ``package.json`` and ``node_modules`` too."""


def code_in(folder: str) -> list[str]:
    """The code in ``folder``: its files of code (``CODE``) and the folders that hold some.

    What an agent's program imports from beside it (its modules, its packages, its
    ``node_modules``), and not what else is there: the results store, cassettes,
    case files, the project's other files, anything whose name starts with ``.``.
    None in a private folder itself (``/tmp``) or one holding one (``/``, home's parent).
    """
    real = os.path.realpath(folder)
    if any(Path(root).is_relative_to(real) for root in hidden_roots()):
        return []  # (``/tmp`` itself, or ``/``: every trial's files, not an agent's code)
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        code = entry.name.endswith(CODE) or entry.name == "package.json"
        if (entry.is_file() and code) or (
            entry.is_dir() and (entry.name == "node_modules" or _holds_code(entry.path))
        ):
            found.append(entry.path)
    return found


def _holds_code(folder: str) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(
                e.name.endswith(CODE) or e.name == "package.json" for e in entries if e.is_file()
            )
    except OSError:
        return False


def python_paths(entry: str) -> list[str]:
    """The code an agent ``module:function`` imports from: where its module is (``code_in``).

    Found as ``python -m`` would (the working directory first), not imported; the
    working directory's code is shown too (where the harness imports from).
    """
    import importlib.machinery
    import importlib.util

    top = entry.partition(":")[0].partition(".")[0]
    try:  # (from the working directory too: where ``python -m`` and the harness look)
        spec = importlib.machinery.PathFinder.find_spec(top, [os.getcwd(), *sys.path])
        spec = spec or importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    places = [*code_in(os.getcwd())]
    if spec is not None:
        module = list(spec.submodule_search_locations or [])
        if not module and spec.origin and os.path.isfile(spec.origin):
            module = [spec.origin]
        for path in module:
            places += code_in(os.path.dirname(os.path.abspath(path)))
    return sorted({p for p in places if os.path.exists(p)})
