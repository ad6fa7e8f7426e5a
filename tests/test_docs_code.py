"""Every code block of the docs runs as its page shows it, or says why it cannot.

The blocks are those of README.md and docs/pages (tutorial.md aside:
tests/test_tutorial.py runs it). An HTML comment on the line before a fence,
invisible in the site, marks each one: ``<!-- run -->`` (this module runs it)
or ``<!-- not run: REASON -->``. A block with neither fails
``test_every_block_is_marked``.

A page's run blocks run in order, in one folder holding the repository's
``examples/`` and a copy of its ``cassettes/``. A block with ``title="PATH"`` is
written to PATH first. Then, by its language:

- ``console``: each ``$ replay ...`` line runs (a ``\\`` at its end continues it)
  and exits 0, or N where the line ends ``# exit N``; each line after a command
  that is not a command must match a line the command printed (``...`` is any text);
- ``python``: executed there; what a reader brings (their agent, their LLM) the
  block's entry in PYTHON gives, found by a phrase of the block, and its check
  says what must hold after;
- ``yaml``: a case file, loaded and checked against its fixture by the case loader;
- ``toml``: ``[tool.agent-replay]`` read by the project's config loader (a key that
  is no option of ``replay run`` is an error); else plugin entry points, whose
  groups must be those the plugin registry reads.
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from replay import load_case
from replay._cli.config import default_map
from replay._cli.main import cli
from replay.plugins import GROUPS
from tests.helpers import HANG_GUARD_S, REPO, SHOP_FIXTURE, replay

if sys.version_info >= (3, 11):
    import tomllib
else:  # the dependency Python 3.10 installs
    import tomli as tomllib

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
MARK = re.compile(r"^\s*<!-- (?P<mark>run|not run: \S.*\S) -->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page, and how it is marked."""

    page: str
    line: int
    language: str
    title: str | None
    body: str
    mark: str | None

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def blocks_of(page: str, text: str) -> list[Block]:
    """The fenced blocks of a page's text (indented ones too), each with its mark."""
    lines, found, i = text.splitlines(), [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, info = opening["fence"], opening["info"].strip()
        end = i + 1
        while end < len(lines) and not re.fullmatch(
            rf"\s*{fence[0]}{{{len(fence)},}}\s*", lines[end]
        ):
            end += 1
        indent = len(opening["indent"])
        body = "".join(line[indent:] + "\n" for line in lines[i + 1 : end])
        title = re.search(r'title="([^"]+)"', info)
        language = info.split()[0] if info and not info.startswith(("title", "{")) else ""
        marked = MARK.match(lines[i - 1]) if i else None
        mark = marked and marked["mark"]
        found.append(Block(page, i + 1, language, title and title[1], body, mark))
        i = end + 1
    return found


PAGES = [
    REPO / "README.md",
    *sorted(p for p in (REPO / "docs" / "pages").rglob("*.md") if p.name != "tutorial.md"),
]
BLOCKS = [
    b for path in PAGES for b in blocks_of(path.relative_to(REPO).as_posix(), path.read_text())
]
RUN_PAGES = sorted({b.page for b in BLOCKS if b.mark == "run"})


# Python blocks: what each needs besides the page (found by a phrase of the block).


@dataclass(frozen=True)
class Given:
    """What a python block needs that a reader brings, and what must hold once it ran."""

    check: Callable[[dict[str, Any], str], None]
    """Called with the block's names and what it printed (``_exit``: its SystemExit code)."""
    prelude: str = ""
    """Run first, in the block's names; ``_stack`` is an ExitStack closed after the page."""
    replace: dict[str, str] = field(default_factory=dict)
    """The reader's values in the block's text (an LLM's URL), and what stands for them."""
    on_path: bool = False
    """Whether the folder goes on the import path (for modules the prelude writes)."""
    exits: bool = False
    """Whether the block ends with ``SystemExit`` (its code in ``_exit``); else exiting fails."""


SHOP_STUB = """
from examples.shop import refund_policy
from replay.stub_llm import StubLLM
_llm = _stack.enter_context(StubLLM(refund_policy()))
"""


def _recorded(names: dict[str, Any], printed: str) -> None:
    names["conn"].close()
    code, out, err = replay("show", "cassettes/refund.cassette")
    assert code == 0, err
    assert "issue_refund" in out and "refunds" in out, out  # the write, with its world delta
    assert "I refunded $35.00" in out, out


def _pytest_passes(names: dict[str, Any], printed: str) -> None:
    Path("test_refund.py").write_text(names["_source"])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_refund.py"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        **{"capture_output": True, "text": True, "timeout": HANG_GUARD_S},
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def _mcp_agent_passes(names: dict[str, Any], printed: str) -> None:
    from examples.frameworks import make_tools, reserve_policy
    from replay import sandbox
    from replay.stub_llm import StubLLM

    with StubLLM(reserve_policy()) as llm:
        trial = sandbox(
            load_case("examples/frameworks/cases/reserve.yaml"),
            names["agent"],
            make_tools,
            Path("mcp.cassette"),
            llm_base_url=llm.openai_base_url,
        )
    assert trial.outcome.verdict == "pass", trial.outcome.evidence


def _both_pass(names: dict[str, Any], printed: str) -> None:
    for outcome in (names["trial"].outcome, names["again"].outcome):
        assert outcome.verdict == "pass", outcome.evidence


def _every_trial_passed(names: dict[str, Any], printed: str) -> None:
    assert printed.strip() == "{1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0, 5: 1.0, 6: 1.0, 7: 1.0, 8: 1.0}"


def _gate_undecided(names: dict[str, Any], printed: str) -> None:
    assert names["result"].undecided and names["_exit"] == 3  # 2 trials cannot settle 0.05


def _serves(names: dict[str, Any], printed: str) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\n", printed), printed


PYTHON = {
    "my_agent(": Given(
        _recorded,
        prelude="""
import sqlite3
from pathlib import Path
with contextlib.closing(sqlite3.connect("shop.db")) as _world:
    _world.executescript(Path("examples/shop/fixture.sql").read_text())
def my_agent(instruction):
    lookup_order(4812)
    issue_refund(4812, 35.0, "customer request")
    return "I refunded $35.00 for order 4812."
""",
    ),
    "replay_session": Given(_pytest_passes),
    "MCPServerStreamableHttp": Given(_mcp_agent_passes),
    "mcp-server-sqlite": Given(
        _both_pass,
        prelude="""
from examples.frameworks.mcp_proxy_agents import notes_policy
from replay.stub_llm import StubLLM
URL = _stack.enter_context(StubLLM(notes_policy())).openai_base_url
""",
    ),
    "ScriptedPolicy([": Given(lambda _, out: _printed(out, "lookup_order {'order_id': 4812}")),
    'build_report(Store(), "nightly")': Given(
        _every_trial_passed,
        prelude=SHOP_STUB
        + """
from pathlib import Path
Path("cases").mkdir()
shop = Path("examples/shop/cases/refund-4812.yaml").read_text()
Path("cases/refund.yaml").write_text(shop.replace("../fixture.sql", "../examples/shop/fixture.sql"))
Path("myagent.py").write_text("from examples.shop import agent, make_tools\\n")
""",
        replace={'"http://127.0.0.1:8000/v1"': "_llm.openai_base_url"},
        on_path=True,
    ),
    "Thresholds(min_pass1=0.9": Given(
        _gate_undecided,
        exits=True,
        prelude="""
from tests.helpers import replay as _replay
for _name in ("main", "pr-123"):
    _code, _, _err = _replay("run", "examples/shop/cases/refund-4812.yaml", "--run", _name,
        "-k", "2", "--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools",
        "--stub-llm", "examples.shop:refund_policy", "--isolation", "none")
    assert _code == 0, _err
""",
    ),
    "replay.view(": Given(_serves, prelude="from replay import Store\nStore()  # (one to serve)"),
}  # fmt: skip


def _printed(printed: str, expected: str) -> None:
    assert printed == expected + "\n", printed


def _given(block: Block) -> list[str]:
    return [phrase for phrase in PYTHON if phrase in block.body]


# Running a block, by its language.


def run_python(block: Block, stack: contextlib.ExitStack) -> None:
    (phrase,) = _given(block)
    given = PYTHON[phrase]
    source = block.body
    for mine, stands_for in given.replace.items():
        assert mine in source, (str(block), mine)
        source = source.replace(mine, stands_for)
    names: dict[str, Any] = {"__name__": "__docs__", "_stack": stack, "_source": block.body}
    names["contextlib"] = contextlib
    if given.on_path:  # (modules the prelude writes there)
        sys.path.insert(0, str(Path.cwd()))
        stack.callback(sys.path.remove, str(Path.cwd()))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(given.prelude, f"{block}:prelude", "exec"), names)
        try:
            exec(compile(source, str(block), "exec"), names)
        except SystemExit as exc:
            names["_exit"] = exc.code
    assert given.exits == ("_exit" in names), f"{block}: exit {names.get('_exit')} unexpected"
    given.check(names, printed.getvalue())


def _commands(body: str) -> list[tuple[str, list[str]]]:
    """Each ``$`` command of a console block (continuations joined) and the lines shown after it."""
    commands: list[tuple[str, list[str]]] = []
    going_on = False
    for line in body.splitlines():
        if going_on:
            commands[-1] = (commands[-1][0][:-1] + line.strip(), commands[-1][1])
        elif line.startswith("$ "):
            commands.append((line[2:], []))
        elif line.strip():
            assert commands, f"output before any command: {line!r}"
            commands[-1][1].append(line.strip())
        going_on = bool(commands) and commands[-1][0].endswith("\\") and not commands[-1][1]
    return commands


def _matches(pattern: str, printed: str) -> bool:
    shown = ".*".join(re.escape(part) for part in pattern.split("..."))
    return any(re.fullmatch(shown, line.strip()) for line in printed.splitlines())


def _words(command: str) -> list[str]:
    words = []
    for word in shlex.split(command, comments=True):
        if any(c in word for c in "*?["):
            expanded = sorted(glob.glob(word))
            assert expanded, f"{word} matches no file"
            words += expanded
        else:
            words.append(word)
    return words


def run_console(block: Block, stack: contextlib.ExitStack) -> None:
    commands = _commands(block.body)
    assert commands, f"{block}: a console block to run holds no $ command"
    for command, shown in commands:
        words = _words(command)
        assert words[0] == "replay", f"{block}: only replay commands run here: {command}"
        exits = re.search(r"#.*\bexit (\d+)", command)
        code, out, err = replay(*words[1:])
        assert code == (int(exits[1]) if exits else 0), (command, out, err)
        for line in shown:
            assert _matches(line, out + err), (command, line, out, err)


def run_yaml(block: Block, stack: contextlib.ExitStack) -> None:
    path = Path(block.title or f"cases/block-{block.line}.yaml")
    if block.title is None:
        path.parent.mkdir(exist_ok=True)
        path.write_text(block.body)
        shutil.copy(SHOP_FIXTURE, "fixture.sql")
    case = load_case(path)
    assert case.schema_problems() == []
    assert case.id and case.instruction


def run_toml(block: Block, stack: contextlib.ExitStack) -> None:
    table = tomllib.loads(block.body)
    if "tool" not in table:
        groups = table["project"]["entry-points"]
        assert set(groups) <= set(GROUPS.values()), f"{block}: no registry reads {set(groups)}"
        for entries in groups.values():
            assert all(re.fullmatch(r"[\w.]+:\w+", value) for value in entries.values())
        return
    folder = Path(block.title).parent if block.title else Path(f"toml-{block.line}")
    if block.title is None:
        folder.mkdir()
        (folder / "pyproject.toml").write_text(block.body)
    defaults = default_map(cli.commands.values(), folder.resolve())
    assert len(defaults["run"]) == len(table["tool"]["agent-replay"]), defaults["run"]


RUNNERS = {"console": run_console, "python": run_python, "yaml": run_yaml, "toml": run_toml}


# The tests.


def test_every_block_is_marked() -> None:
    unmarked = [str(b) for b in BLOCKS if b.mark is None]
    assert unmarked == [], (
        "mark each block on the line before its fence, "
        "<!-- run --> or <!-- not run: REASON -->: " + ", ".join(unmarked)
    )


def test_every_run_block_has_a_way_to_run() -> None:
    run = [b for b in BLOCKS if b.mark == "run"]
    assert [str(b) for b in run if b.language not in RUNNERS] == []
    python = [b for b in run if b.language == "python"]
    assert {str(b): len(_given(b)) for b in python} == {str(b): 1 for b in python}
    used = {phrase for b in python for phrase in _given(b)}
    assert used == set(PYTHON), f"PYTHON entries no block uses: {set(PYTHON) - used}"


def test_the_walk_sees_every_fence_and_mark() -> None:
    text = "<!-- run -->\n```console\n$ replay --help\n```\n\n- item\n\n    ~~~~\n    x\n    ~~~~\n"
    found = blocks_of(
        "page.md", text + "<!-- not run: a sketch -->\n```\nreplay run CASES...\n```\n"
    )
    assert [(b.line, b.language, b.mark, b.body) for b in found] == [
        (2, "console", "run", "$ replay --help\n"),
        (8, "", None, "x\n"),
        (12, "", "not run: a sketch", "replay run CASES...\n"),
    ]
    assert len(BLOCKS) >= 40 and RUN_PAGES
    assert not any(b.page.endswith("tutorial.md") for b in BLOCKS)  # test_tutorial's


NEEDS = {"docs/pages/how-to/ray-dask.md": "distributed", "docs/pages/how-to/mcp.md": "agents"}
"""What a page's run blocks need installed besides the dev extras' OpenAI SDK."""


@pytest.mark.parametrize("page", RUN_PAGES)
def test_the_run_blocks_of_a_page_run_as_shown(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai", reason="the examples' agents use the OpenAI SDK")
    if page in NEEDS:
        pytest.importorskip(NEEDS[page])
    (tmp_path / "examples").symlink_to(REPO / "examples")
    shutil.copytree(REPO / "cassettes", tmp_path / "cassettes")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")  # (servers)
    before = set(sys.modules)
    try:
        with contextlib.ExitStack() as stack:
            for block in (b for b in BLOCKS if b.page == page and b.mark == "run"):
                if block.title:
                    Path(block.title).parent.mkdir(parents=True, exist_ok=True)
                    Path(block.title).write_text(block.body)
                RUNNERS[block.language](block, stack)
    finally:  # (a block's own modules: no other test imports them by these names)
        for name in set(sys.modules) - before:
            if getattr(sys.modules[name], "__file__", None) and str(tmp_path) in str(
                sys.modules[name].__file__
            ):
                del sys.modules[name]
