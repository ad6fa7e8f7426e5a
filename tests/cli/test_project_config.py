"""Project defaults: ``[tool.agent-replay]`` in ``pyproject.toml`` (or ``replay.toml``).

A project names its agent, tools, store and LLM once; ``replay run CASE`` then needs
nothing else, and names the run itself (the time and the git revision), saying so.
What the command line gives wins; a key that is no option is a one-line error.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from replay import Store
from tests.helpers import REPO, replay

CASE = str(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")
PROJECT = """\
[project]
name = "shop-agent"

[tool.agent-replay]
agent = "examples.shop:agent"
tools = "examples.shop:make_tools"
store = "results/shop.db"
stub-llm = "examples.shop:refund_policy"
isolation = "none"
trials = 2
mode = "sandbox"
ignore-field = ["@claude-code"]
"""


def test_a_run_takes_the_project_s_defaults_and_names_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # (found from a folder below it too)
    code, out, err = replay("run", CASE)
    assert code == 0, err
    (named,) = re.findall(r"^run (\d{8}-\d{6}(?:-\w+)?) \(named by the time", err, re.M)
    store = Store(str(tmp_path / "results" / "shop.db"))
    assert [t.verdict for t in store.trials(named)] == ["pass", "pass"]
    assert f"see `replay report {named} --store" in out
    code, _, err = replay("run", CASE, "--run", "one", "-k", "1")  # the command line wins
    assert code == 0, err
    assert len(store.trials("one")) == 1
    code, out, _ = replay("report", "one")  # --store from the project too
    assert code == 0 and "refund-4812" in out
    code, out, _ = replay("runs", "--json")  # the project's mode is run's, not runs' filter
    assert code == 0 and {r["name"] for r in json.loads(out)} == {named, "one"}


def test_a_key_that_is_no_option_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "replay.toml").write_text('agnet = "examples.shop:agent"\n')
    monkeypatch.chdir(tmp_path)
    code, _, err = replay("run", CASE)
    assert code == 2 and err.count("\n") == 1
    assert "replay.toml: 'agnet' is no option of replay run; did you mean 'agent'?" in err
    (tmp_path / "replay.toml").write_text("agent = \n")
    code, _, err = replay("report", "x")
    assert code == 2 and "replay.toml: not readable TOML" in err and err.count("\n") == 1


def test_the_command_line_s_llm_url_wins_over_the_project_s_stub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    monkeypatch.chdir(tmp_path)
    code, _, err = replay("run", CASE, "--run", "down", "--llm-url", "http://127.0.0.1:9/v1")
    assert code == 3 and "cannot be reached" in err  # its URL was tried, not the stub's
