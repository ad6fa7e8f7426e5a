"""A run's spec is stored with its version: --resume reads an older one, refuses a newer one."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from recorder import ConfigError
from replay import (
    AgentSettings,
    ExecutorSettings,
    FaultSettings,
    JudgeSettings,
    Limits,
    LlmSettings,
    McpServer,
    RunSpec,
    UserSettings,
)
from replay.runs._spec import SPEC_VERSION

FLAT = {  # as agent-replay stored a spec before specs had versions
    "name": "nightly",
    "cases": ["cases/refund.yaml"],
    "mode": "sandbox",
    "trials": 8,
    "agent": "shop:agent",
    "tools": "shop:make_tools",
    "llm": "live",
    "llm_url": "http://127.0.0.1:8000/v1",
    "cassettes": None,
    "out": None,
    "model": "gpt-x",
    "settings": {"temperature": 0},
    "concurrency": 4,
    "allow_env": ["DEPLOY_TOKEN"],
    "ignore_hosts": ["traces.example"],
    "default_ignore": False,
    "prices": {"gpt-x": [2.0, 8.0]},
    "judge_url": "http://127.0.0.1:8001/v1",
    "judge_model": "judge-1",
    "judge_timeout": 30.0,
    "judge_min_labels": 5,
    "judge_min_agreement": 0.7,
    "no_judge": True,
    "graders": ["mine:polite"],
    "user": "frozen",
    "user_url": None,
    "user_model": "user-sim",
    "faults": ["timeout:issue_refund@0.5"],
    "fault_seed": 7,
    "executor": "local",
    "workers": 2,
    "ray_address": None,
    "ship": None,
    "dask_address": None,
}


def test_a_flat_spec_from_before_versions_is_read_into_its_groups() -> None:
    spec = RunSpec.from_stored(FLAT)
    assert spec == RunSpec(
        name="nightly",
        cases=["cases/refund.yaml"],
        mode="sandbox",
        trials=8,
        graders=["mine:polite"],
        agent=AgentSettings(
            "shop:agent", "shop:make_tools", "gpt-x", {"temperature": 0}, ["DEPLOY_TOKEN"]
        ),
        llm=LlmSettings(
            "live", "http://127.0.0.1:8000/v1", ["traces.example"], False, {"gpt-x": (2.0, 8.0)}
        ),
        judge=JudgeSettings("http://127.0.0.1:8001/v1", "judge-1", 30.0, 5, 0.7, enabled=False),
        user=UserSettings("frozen", None, "user-sim"),
        faults=FaultSettings(["timeout:issue_refund@0.5"], 7),
        executor=ExecutorSettings("local", 2, 4),
    )


def test_a_stored_spec_reads_back_as_it_was() -> None:
    spec = RunSpec.from_stored(FLAT)
    assert RunSpec.from_stored(spec.to_stored()) == spec
    assert spec.to_stored()["version"] == SPEC_VERSION == 5


SERVERS = {
    "sqlite": McpServer(command=["mcp-server-sqlite", "--db-path", "{world}"], env={"A": "1"}),
    "remote": McpServer(url="http://127.0.0.1:8931/mcp"),
}


def test_a_spec_s_mcp_servers_are_stored_as_their_fields_and_read_back_as_servers() -> None:
    spec = RunSpec("r", ["c.yaml"], "sandbox", agent=AgentSettings("a:b", mcp_servers=SERVERS))
    stored = json.loads(json.dumps(spec.to_stored()))  # as the store keeps it
    assert set(stored["agent"]["mcp_servers"]["sqlite"]) == {f.name for f in fields(McpServer)}
    assert stored["agent"]["mcp_servers"]["sqlite"]["command"] == [
        "mcp-server-sqlite", "--db-path", "{world}",
    ]  # fmt: skip
    again = RunSpec.from_stored(stored)
    assert again == spec
    assert isinstance(
        again.agent.mcp_servers["sqlite"].command, tuple
    )  # one form, so specs compare
    assert again.agent.mcp_servers["remote"] == McpServer(url="http://127.0.0.1:8931/mcp")


def test_a_version_2_spec_has_no_mcp_servers() -> None:
    stored = RunSpec.from_stored(FLAT).to_stored()
    del stored["agent"]["mcp_servers"]
    spec = RunSpec.from_stored({**stored, "version": 2})
    assert spec.agent.mcp_servers == {} and spec.version == SPEC_VERSION


def test_a_version_3_spec_has_no_caps_and_a_spec_s_limits_read_back() -> None:
    stored = RunSpec.from_stored(FLAT).to_stored()
    for cap in ("max_llm_tokens", "max_tool_result_chars"):
        del stored["agent"][cap]
    spec = RunSpec.from_stored({**stored, "version": 3})
    assert spec.agent.limits() == Limits(600.0, None, None) and spec.version == SPEC_VERSION
    capped = AgentSettings("a:b", timeout=2.5, max_llm_tokens=900, max_tool_result_chars=40)
    stored = json.loads(json.dumps(RunSpec("r", [], "sandbox", agent=capped).to_stored()))
    again = RunSpec.from_stored(stored)  # as the store keeps it
    assert again.agent == capped and again.agent.limits() == Limits(2.5, 900, 40)


def test_a_stored_server_that_is_not_one_is_a_clear_error() -> None:
    agent = AgentSettings(mcp_servers=SERVERS)
    stored = RunSpec("r", ["c.yaml"], "sandbox", agent=agent).to_stored()
    stored["agent"]["mcp_servers"]["remote"]["colour"] = "blue"
    with pytest.raises(ConfigError, match=r"stored spec of run 'r' is unreadable: .*colour"):
        RunSpec.from_stored(stored)
    stored["agent"]["mcp_servers"]["remote"] = {"command": [], "url": None}
    with pytest.raises(ConfigError, match="a command or a url"):
        RunSpec.from_stored(stored)


def test_a_spec_from_a_newer_version_is_refused_saying_which() -> None:
    stored = {**RunSpec.from_stored(FLAT).to_stored(), "version": SPEC_VERSION + 1}
    with pytest.raises(ConfigError, match=r"newer agent-replay .* resume it with that version"):
        RunSpec.from_stored(stored)


def test_a_spec_with_an_unknown_field_is_a_clear_error() -> None:
    stored = RunSpec.from_stored(FLAT).to_stored()
    stored["agent"]["colour"] = "blue"
    with pytest.raises(ConfigError, match="stored spec of run 'nightly' is unreadable"):
        RunSpec.from_stored(stored)
