"""``replay run``'s options are the settings they fill, one each; errors name settings."""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import MISSING
from pathlib import Path

import pytest

from examples.shop import refund_policy
from replay import AgentSettings, LlmSettings, RunSpec, Store, execute
from replay._cli.run import run
from replay._cli.run_options import OPTIONS, flags
from replay.runs import SETTINGS
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

NOT_ON_THE_COMMAND_LINE = {"out"}
"""Settings ``replay run`` leaves at their defaults."""
CLI_DEFAULTS = {"mode": "sandbox", "agent.isolation": "auto", "name": None}
"""Where the command's default is not the library's (a run without --run is named by the
time and revision: tests/cli/test_project_config.py)."""
CASE = str(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")


def test_every_setting_the_command_fills_has_exactly_one_option_and_each_option_one() -> None:
    filled = Counter(f.setting for f in OPTIONS if f.setting in SETTINGS)
    assert [s for s, n in filled.items() if n > 1] == []
    assert set(filled) == set(SETTINGS) - NOT_ON_THE_COMMAND_LINE
    folded = [f.setting for f in OPTIONS if f.setting and f.setting not in SETTINGS]
    assert folded == ["agent.mcp_servers.env"]  # --mcp-env: part of --mcp-server's servers
    steering = [f.decls[0] for f in OPTIONS if f.setting is None]
    assert steering == ["--store", "--resume", "--stub-llm", "--measure", "--json"]
    params = [p.name for p in run.params]
    assert params == [f.param for f in OPTIONS]  # in the table's order, none besides


def test_each_option_defaults_to_its_settings_default() -> None:
    by_param = {p.name: p for p in run.params}
    for flag in OPTIONS:
        param = by_param[flag.param]
        if flag.setting not in SETTINGS or flag.multiple or flag.is_flag or flag.param == "cases":
            continue
        default = CLI_DEFAULTS.get(flag.setting, SETTINGS[flag.setting])
        assert param.required is (default is MISSING), flag.decls
        if default is not MISSING and default is not None:
            assert param.default == default, flag.decls


@pytest.mark.parametrize(
    ("library", "command_line"),
    [
        (
            "sandbox mode needs `agent.entry` MOD:FN (or `agent.command` PROGRAM) and "
            "`agent.tools` MOD:FN",
            "sandbox mode needs --agent MOD:FN (or --agent-cmd PROGRAM) and --tools MOD:FN",
        ),
        ("give `user.source=live`", "give --user live"),
        ("or `judge.enabled=False` to skip", "or --no-judge to skip"),
        ("(`agent.isolation=none`; see", "(--isolation none; see"),
        ("`trials` must be at least 1", "--trials must be at least 1"),
        (
            "`agent.mcp_servers` local=... `agent.mcp_servers.env` local:TOKEN=...",
            "--mcp-server local=... --mcp-env local:TOKEN=...",
        ),
        ("`agent.settings` api_key=...", "--set api_key=..."),
        ("`executor.kind=ray` needs Ray", "--executor ray needs Ray"),
        (
            "see `replay report r`, `no.such` and `out`",
            "see `replay report r`, `no.such` and `out`",
        ),
    ],
)
def test_the_command_line_names_the_options_of_the_settings_an_error_names(
    library: str, command_line: str
) -> None:
    assert flags(library) == command_line


def test_a_library_error_is_said_with_the_options(tmp_path: Path) -> None:
    code, _, err = replay(
        "run", CASE, "--run", "r", "--store", str(tmp_path / "r.db"), "--llm-url", "http://x/v1"
    )
    assert code == 2
    assert err == (
        "error: sandbox mode needs --agent MOD:FN (or --agent-cmd PROGRAM) and --tools MOD:FN\n"
    )


def test_auto_isolation_is_chosen_by_the_library_for_the_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """``AgentSettings(isolation="auto")``: walls for sandbox where they can be built."""
    import replay.agents._choice as isolation

    with pytest.raises(ValueError, match="chosen by execute"):
        _ = AgentSettings(isolation="auto").resolved_isolation

    class NoBwrap:  # the walls' look-up of bubblewrap finds none; any other, as it is
        @staticmethod
        def which(name: str) -> str | None:
            return None if name == "bwrap" else shutil.which(name)

    monkeypatch.setattr(isolation, "shutil", NoBwrap)
    isolation.unavailable.cache_clear()  # asked once a process: ask again, and after the test
    request.addfinalizer(isolation.unavailable.cache_clear)
    said: list[str] = []
    agent = AgentSettings("examples.shop:agent", "examples.shop:make_tools", isolation="auto")
    with StubLLM(refund_policy()) as llm:
        spec = RunSpec(
            "r", [CASE], "sandbox", agent=agent, llm=LlmSettings(url=llm.openai_base_url)
        )
        execute(spec, Store(tmp_path / "r.db"), on_warning=said.append)
    assert said == [
        "sandbox: no walls on this machine (bubblewrap (bwrap) is not installed (Debian: "
        "apt-get install bubblewrap)): each agent runs in this process "
        "(`agent.isolation=none`; see the docs' known limits, docs/pages/limits.md)"
    ]
