"""Modes are registry entries: what they declare runs them, nothing compares their names."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from recorder import ConfigError, HttpEvent, read_cassette
from replay import AgentSettings, Environment, LlmSettings, RunSpec, Store, execute, load_case
from replay.modes import REGISTRY, Mode, TrialPlan, cassette_name, register, run_trial
from replay.pytest_plugin import ALIASES, RECORD_MODES, RECORDS, REPLAYS
from tests.helpers import REPO

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
GOLDEN = REPO / "cassettes" / "refund-4812.cassette"


def test_the_built_in_modes_are_registered_by_importing_the_package_alone() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import replay.modes as m; print(' '.join(m.REGISTRY))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout
    assert out.split() == ["review", "offline", "sandbox", "record"]


def test_no_code_outside_the_mode_definitions_compares_a_mode_name() -> None:
    names = "|".join(REGISTRY)
    compared = re.compile(
        rf"mode\w*\s*(==|!=|\bin\b|\bnot in\b)\s*[\(\[{{]?\s*[\"']({names})[\"']"
        rf"|[\"']({names})[\"']\s*(==|!=)\s*\w*mode"
    )
    found = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in (REPO / "replay").rglob("*.py")
        if "modes" not in path.relative_to(REPO / "replay").parts
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if compared.search(line)
    ]
    assert found == []


def test_the_pytest_plugin_runs_registered_modes_that_run_an_agent() -> None:
    assert list(RECORD_MODES) == ["none", "once", "new_episodes", "all", "sandbox"]
    assert ALIASES == {"offline": "none", "record": "all"}
    assert REGISTRY[REPLAYS].runs_agent and REGISTRY[RECORDS].runs_agent
    assert RECORDS == "sandbox"  # a test records under watch


def test_an_unknown_mode_is_refused_naming_the_modes(tmp_path: Path) -> None:
    spec = RunSpec(name="x", cases=[str(CASE)], mode="replay-everything")
    with pytest.raises(ConfigError, match="no mode 'replay-everything'; the modes are review"):
        execute(spec, Store(tmp_path / "r.db"))


def test_a_plan_run_offline_from_the_golden_cassette_passes(tmp_path: Path) -> None:
    from examples.shop import agent, make_tools

    out = tmp_path / cassette_name("refund-4812", 0)
    plan = TrialPlan(
        case=load_case(CASE),
        mode="offline",
        out=out,
        agent=agent,
        tools=make_tools,
        recorded=read_cassette(GOLDEN),
    )
    result = run_trial(plan)
    assert result.outcome.verdict.value == "pass", result.outcome.evidence
    assert result.mode == "offline" and result.cassette == out and out.exists()
    assert read_cassette(out).header.pins.user["mode"] == "offline"


def test_a_registered_mode_runs_through_the_runner_with_its_own_name(tmp_path: Path) -> None:
    review = REGISTRY["review"]
    regrade = register(
        Mode(
            "regrade-test",
            "review, under another name",
            review.channels,
            review.steps,
            runs_agent=False,
            llm=(),
            recorded="required",
            per_recording=True,
        )
    )
    assert REGISTRY["regrade-test"] is regrade
    store = Store(tmp_path / "r.db")
    spec = RunSpec(
        name="again",
        cases=[str(CASE)],
        mode="regrade-test",
        cassettes=str(GOLDEN.parent),
        trials=5,  # per_recording: one trial per recorded cassette, whatever --trials says
    )
    execute(spec, store)
    assert [t.verdict for t in store.trials("again")] == ["pass"]
    assert store.run("again").pins["mode"] == "regrade-test"  # type: ignore[union-attr]


class _Other(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", "5")
        self.end_headers()
        self.wfile.write(b"other")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def other_host() -> Iterator[str]:
    """A server that is not the LLM: on ``localhost``, where the LLM is ``127.0.0.1``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Other)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://localhost:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def peeking_agent(instruction: str, env: Environment) -> str:
    """Reads a secret and calls a host that is not the LLM."""
    try:
        other = httpx.get(env.settings["other"], timeout=5).text
    except Exception as exc:
        other = f"refused ({type(exc).__name__})"
    return json.dumps({"key": os.environ.get("SHOP_API_KEY"), "other": other})


@pytest.mark.parametrize(
    ("mode", "key", "other"),
    [("record", "sk-live-123", "other"), ("sandbox", None, "refused")],
)
def test_record_captures_the_session_as_it_runs_and_sandbox_watches_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    other_host: str,
    mode: str,
    key: str | None,
    other: str,
) -> None:
    from examples.shop import make_tools

    monkeypatch.setenv("SHOP_API_KEY", "sk-live-123")
    plan = TrialPlan(
        case=load_case(CASE),
        mode=mode,
        out=tmp_path / "t.cassette",
        agent=peeking_agent,
        tools=make_tools,
        settings={"other": other_host},
    )
    result = run_trial(plan)
    seen = json.loads(result.trial.answer or "{}")
    assert seen["key"] == key and seen["other"].startswith(other)
    cassette = read_cassette(plan.out)
    (call,) = [e for e in cassette.events if isinstance(e, HttpEvent)]
    assert call.request.url == other_host
    if mode == "record":
        assert call.response is not None and call.response.status == 200
    else:
        assert call.response is None and call.error is not None
    assert REGISTRY[mode].records is (mode == "record")


def test_record_takes_a_live_llm_only(tmp_path: Path) -> None:
    spec = RunSpec(
        name="r",
        cases=[str(CASE)],
        mode="record",
        llm=LlmSettings("frozen"),
        agent=AgentSettings("examples.shop:agent", "examples.shop:make_tools"),
    )
    with pytest.raises(
        ConfigError, match=re.escape("record mode takes `llm.source` live, not 'frozen'")
    ):
        execute(spec, Store(tmp_path / "r.db"))


def test_a_plan_without_what_its_mode_needs_is_a_config_error(tmp_path: Path) -> None:
    case = load_case(CASE)
    with pytest.raises(ConfigError, match="offline of case 'refund-4812' needs the recorded"):
        run_trial(TrialPlan(case=case, mode="offline", out=tmp_path / "t.cassette"))
    recorded = read_cassette(GOLDEN)
    with pytest.raises(ConfigError, match="needs the case's tools"):
        run_trial(TrialPlan(case=case, mode="offline", out=tmp_path / "t", recorded=recorded))
