"""A Python agent in a process of its own: ``--agent MOD:FN --isolation process``.

``python -m replay.agents._child MOD:FN`` runs inside the walls: it reads the
instruction on stdin, builds the agent's ``Environment`` from the variables
the trial gave it (``env.variables()``: the LLM through the recording proxy,
the tools over the trial's MCP server, the third-party servers' proxies, the
model and settings), calls the agent, and writes what it returned (or what it
raised) as JSON to the file ``REPLAY_ANSWER`` names. Its tool calls are MCP
calls, recorded in the harness with their deltas; nothing of the world, the
store or the harness's memory is in this process.

``python -m replay.agents._child --serve SOCKET MOD:FN [PATH...]`` is a zygote
(``_zygote``): it imports the agent once, then forks a child for each trial
the harness at ``SOCKET`` sends (``serve``, ``_trial``).

What differs from an in-process agent: ``call_tool`` returns the tool's result
as JSON decodes it (text that is not JSON stays text); ``env.functions`` are
built from the tools' schemas (keyword arguments, JSON types), not from their
Python signatures; ``env.user.say`` is a ``POST`` to the trial's user channel
(``REPLAY_USER_URL``), recorded there turn by turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import json
import keyword
import os
import shutil
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from typing import Any

from ..modes import Environment, load_callable
from . import _forward, _seccomp
from ._memory import stored, usage
from ._post import post
from ._warm import warm

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class ToolFailed(Exception):
    """A tool call over MCP answered with an error (its text)."""


class _Mcp:
    """What ``env.mcp`` and ``env.mcp_servers[name]`` give an agent: the addresses."""

    def __init__(self, url: str, command: list[str]) -> None:
        self.url, self.command = url, command

    def close(self) -> None:
        """Nothing to close: the trial owns the server."""


def _rpc(url: str, method: str, params: Mapping[str, Any]) -> Any:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    text = post(url, body, HEADERS).decode()
    lines = [line[5:] for line in text.splitlines() if line.startswith("data:")]
    answer = json.loads(lines[-1] if lines else text)
    if "error" in answer:
        raise ToolFailed(answer["error"].get("message", "MCP error"))
    return answer["result"]


class UserFailed(Exception):
    """The simulated user could not answer (its error, as the harness told it)."""


class _User:
    """``env.user`` in the child: each turn a ``POST`` to the trial's user channel."""

    def __init__(self, url: str) -> None:
        self.url = url

    def say(self, text: str) -> str | None:
        """Tell the user ``text``; its answer, or None once it has ended the talk."""
        body = json.dumps({"text": text}).encode()
        answer = json.loads(post(self.url, body, {"Content-Type": "application/json"}))
        if "error" in answer:
            raise UserFailed(f"{answer['error']['type']}: {answer['error']['message']}")
        reply = answer.get("reply")
        return None if reply is None else str(reply)


def environment(variables: Mapping[str, str]) -> Any:
    """The agent's ``Environment``, from the trial's variables."""
    url = variables["REPLAY_MCP_URL"]
    listed = _rpc(url, "tools/list", {}).get("tools", [])
    specs = [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description") or "",
                "parameters": t.get("inputSchema") or {"type": "object"},
            },
        }
        for t in listed
    ]

    def call_tool(name: str, arguments: Mapping[str, Any]) -> Any:
        result = _rpc(url, "tools/call", {"name": name, "arguments": dict(arguments)})
        text = "".join(c.get("text", "") for c in result.get("content") or [])
        if result.get("isError"):
            raise ToolFailed(text)
        try:
            return json.loads(text)
        except ValueError:
            return text

    servers = json.loads(variables.get("REPLAY_MCP_SERVERS") or "{}")
    user = _User(variables["REPLAY_USER_URL"]) if variables.get("REPLAY_USER_URL") else None
    functions = [_function(t, call_tool) for t in listed]
    return Environment(
        specs,
        call_tool,
        variables["OPENAI_BASE_URL"],
        variables.get("REPLAY_MODEL"),
        json.loads(variables.get("REPLAY_SETTINGS") or "{}"),
        api_key=variables.get("OPENAI_API_KEY", "sk-replay"),
        functions=functions,
        user=user,  # type: ignore[arg-type]
        mcp=_Mcp(url, json.loads(variables["REPLAY_MCP_COMMAND"])),  # type: ignore[arg-type]
        mcp_servers={
            name: _Mcp(s["url"], s["command"])  # type: ignore[misc]
            for name, s in servers.items()
        },
    )


_TYPES: dict[str, Any] = {
    "string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict,
}  # fmt: skip


def _function(listed: Mapping[str, Any], call_tool: Any) -> Any:
    """A listed tool as a plain function with a signature from its schema, for a framework."""
    schema = listed.get("inputSchema") or {}
    required = set(schema.get("required") or [])
    properties = schema.get("properties") or {}
    if not all(str(name).isidentifier() for name in properties):  # ("from", "max-results")
        properties = {}  # a **arguments signature: the framework passes what the model gave
    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if name in required else None,
            annotation=_TYPES.get(str(spec.get("type")), Any),
        )
        for name, spec in properties.items()
        if not keyword.iskeyword(name)
    ]
    if len(parameters) < len(properties):
        parameters = []
    parameters.sort(key=lambda p: p.default is not inspect.Parameter.empty)

    def call(**arguments: Any) -> Any:
        return call_tool(listed["name"], arguments)

    if not parameters and (schema.get("properties") or {}):
        parameters = [inspect.Parameter("arguments", inspect.Parameter.VAR_KEYWORD)]
    call.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    call.__annotations__ = {
        p.name: p.annotation for p in parameters if p.annotation is not inspect.Parameter.empty
    }
    call.__name__ = call.__qualname__ = str(listed["name"])
    call.__doc__ = listed.get("description") or ""
    return call


def run(agent: Any, instruction: str, variables: Mapping[str, str]) -> None:
    """Run ``agent`` on ``instruction``; its outcome to the file ``REPLAY_ANSWER`` names."""
    outcome: dict[str, Any]
    try:
        if isinstance(agent, str):
            agent = load_callable(agent)
        answer = agent(instruction, environment(variables))
        if inspect.isawaitable(answer):
            answer = asyncio.run(_awaited(answer))
        outcome = {"answer": answer}
    except BaseException as exc:  # the agent's failure, told to the harness as it was
        cls = type(exc)
        outcome = {
            "error": {
                "type": f"{cls.__module__}.{cls.__qualname__}",
                "message": str(exc),
                "traceback": traceback.format_exc(),
            }
        }
    with open(variables["REPLAY_ANSWER"], "w", encoding="utf-8") as out:
        json.dump(outcome, out, default=str)


def main(argv: list[str]) -> int:
    """Run the agent ``argv[0]`` on stdin's instruction (``--serve SOCKET MOD:FN``: many)."""
    if argv[:1] == ["--serve"]:
        paths = argv[3 : argv.index("--")] if "--" in argv else argv[3:]
        sys.path[:0] = paths  # the harness's import path
        return serve(argv[1], argv[2])
    run(argv[0], sys.stdin.read(), os.environ)
    return 0


async def _awaited(answer: Any) -> Any:
    return await answer


# -- a zygote's (``_zygote``): the agent imported once, a child forked per trial ------------


class _Reports:
    """Where the resolver tells names looked up: the current trial's filter socket."""

    def __init__(self) -> None:
        self.current: socket.socket | None = None

    def sendall(self, data: bytes) -> None:
        """To the current trial, if any (a name looked up between trials is the zygote's)."""
        current = self.current
        if current is not None:
            with contextlib.suppress(OSError):
                current.sendall(data)


def serve(path: str, entry: str) -> int:
    """Inside: import ``entry``, then run each trial the harness at ``path`` sends."""
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(path)
    try:
        agent = load_callable(entry) if entry != "-" else None  # (-: programs, nothing to import)
    except Exception as exc:
        conn.sendall(json.dumps({"error": str(exc)}).encode() + b"\n")
        return 1
    warm()
    reports, names = _Reports(), dict[str, str]()
    resolver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    resolver.bind(("127.0.0.1", 53))  # (the one capability the walls leave the zygote)
    threading.Thread(
        target=_forward.answer_dns, args=(resolver, reports, names), daemon=True
    ).start()
    conn.sendall(b'{"ready": true}\n')
    keep = {conn.fileno(), resolver.fileno()}
    for line in conn.makefile("rb"):
        request = json.loads(line)
        pairs, given = _forward.split_forwards(request["forward"])
        names.clear()
        names.update(given)
        request["forward"] = pairs
        outcome = _trial(agent, request, reports, keep, run)
        conn.sendall(json.dumps(outcome).encode() + b"\n")
    return 0


def _trial(
    agent: Any, request: dict[str, Any], reports: _Reports, keep: set[int], run: Any
) -> dict[str, Any]:
    listeners = [_forward.forward(pair) for pair in request["forward"]]
    control = socket.socket(socket.AF_UNIX)
    control.connect(request["control"])
    said_r, said_w = os.pipe()
    go_r, go_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    program = request.get("program")
    # Out of the child's collections: its first full one (an import or two can start it)
    # would otherwise write to each object the agent's import made, a copy-on-write fault a
    # page (~80 ms for httpx's first client, measured in the wall). The zygote thaws its own.
    gc.freeze()
    child = os.fork()
    if child:
        gc.unfreeze()
    if child == 0:
        try:
            os.setsid()
            ours = (*keep, control.fileno(), *(s.fileno() for s in listeners), said_r, go_w)
            for fd in (*ours, out_r, err_r):
                with contextlib.suppress(OSError):
                    os.close(fd)
            _seccomp.filtered(said_w, go_r, request.get("tasks"))
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.environ.clear()
            # (no bytecode cache written: a write outside the sandbox's room is a violation)
            os.environ.update({**request["environ"], "PYTHONDONTWRITEBYTECODE": "1"})
            if program:  # a program: the instruction on its stdin, its answer on stdout
                os.dup2(os.open(request["stdin"], os.O_RDONLY), 0)
                try:
                    os.execvp(program[0], program)
                except OSError as exc:
                    os.write(2, f"the agent command did not start: {exc}\n".encode())
                    os._exit(127)
            run(agent, request["instruction"], request["environ"])
        finally:
            os._exit(0)
    os.close(said_w)
    os.close(go_r)
    os.close(out_w)
    os.close(err_w)
    drains = [
        threading.Thread(target=_drain, args=(out_r, request["stdout"]), daemon=True),
        threading.Thread(target=_drain, args=(err_r, request["stderr"]), daemon=True),
    ]
    for drain in drains:
        drain.start()
    _seccomp.handed(child, said_r, control)
    reports.current = control
    os.write(go_w, b"g")
    os.close(go_w)
    over: list[tuple[str, str]] = []
    memory, tasks = request.get("memory_mb"), request.get("tasks")
    done = threading.Event()
    if memory or tasks:
        private = request.get("hidden") or []

        def watch() -> None:
            while not done.is_set():
                why = usage(child, private, memory, here=True).over(memory, tasks)
                if why is not None:
                    over.append(("pids" if "--trial-pids" in why else "memory", why))
                    with contextlib.suppress(OSError):
                        os.killpg(child, signal.SIGKILL)
                    return
                done.wait(0.1)

        threading.Thread(target=watch, daemon=True).start()
    status = os.waitpid(child, 0)[1]
    done.set()
    if memory and not over:  # (one that filled its /tmp and ended before a look: seen here)
        full = stored(os.getpid(), request.get("hidden") or [])[1]
        if full:
            over.append(("memory", f"filled its {full}, its share of {memory} MB (--trial-memory)"))
    if tasks and not over:  # (what it left running, its parent gone: the sandbox's init's now)
        left = usage(1).tasks - usage(os.getpid()).tasks - 1
        if left >= tasks - 1:
            over.append(("pids", f"left {left} processes and threads, its limit (--trial-pids)"))
    _stop_the_rest()  # what it left running, in its group or not
    for drain in drains:
        drain.join(timeout=2)
    reports.current = None
    control.close()
    for listener in listeners:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
    _empty(request.get("hidden") or ["/tmp"])
    return {"code": os.waitstatus_to_exitcode(status), "over": over[0] if over else None}


OUTPUT_CAP = 10 * 2**20
"""Bytes of a trial's stdout and stderr kept (as ``_command.OUTPUT_CAP``); the rest dropped."""


def _drain(fd: int, path: str) -> None:
    """Copy the pipe ``fd`` to the file ``path`` until it ends, the first ``OUTPUT_CAP`` bytes."""
    kept = 0
    with open(path, "wb") as out:
        while data := _read(fd):
            if kept < OUTPUT_CAP:
                out.write(data[: OUTPUT_CAP - kept])
                kept += len(data)
    os.close(fd)


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


def _stop_the_rest() -> None:
    """Stop every process of the sandbox but this one and its init (a trial's leftovers).

    ``kill(-1)``: every process this one may signal, at once (one that forks
    cannot outrun it), but for itself and its namespace's init; then wait until
    they are gone (reaped by init, or here).
    """
    try:
        with open("/proc/1/comm", encoding="ascii", errors="replace") as comm:
            walled = comm.read().strip() == "bwrap"
    except OSError:
        walled = False
    if not walled:  # (never outside a sandbox's own PID namespace: -1 is everyone there)
        return
    spared = {"1", str(os.getpid())}
    deadline = time.monotonic() + 5
    while True:
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError, OSError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        left = [p for p in os.listdir("/proc") if p.isdigit() and p not in spared]
        if not left or time.monotonic() > deadline:
            return
        time.sleep(0.005)


def _empty(roots: list[str]) -> None:
    """Remove what the trial left in the sandbox's private folders (``/tmp``, home...).

    Never a folder bound there (the trials' own, the agent's code); a folder holding
    one, the working directory (made there when the harness runs from under ``/tmp`` or
    home) and the folders on the way to it stay, emptied around what they hold: the next
    trial starts in it as the first did.
    """
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as info:
        mounts = [_seccomp.unescaped(line.split()[4]) for line in info if len(line.split()) > 4]
    try:
        here = os.getcwd()
    except OSError:
        here = ""
    for root in roots:
        with contextlib.suppress(OSError):
            _empty_one(root, mounts, here)


def _empty_one(root: str, mounts: list[str], here: str) -> None:
    for name in os.listdir(root):
        target = os.path.join(root, name)
        if target in mounts:
            continue
        if here == target or any(m.startswith(target + "/") for m in (here, *mounts)):
            _empty_one(target, mounts, here)  # (emptied around what it holds)
            continue
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(target)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
