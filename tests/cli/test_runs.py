"""`replay runs`: every run in a store, filtered by name, mode and state; `--delete` one."""

from __future__ import annotations

import json
from pathlib import Path

from examples.shop import refund_policy
from replay import Store
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

CASE = str(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]


def test_runs_are_listed_filtered_and_deleted(tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    with StubLLM(refund_policy()) as llm:
        base = ["--llm-url", llm.openai_base_url, "--store", store, "--isolation", "none", *AGENT]
        for name, k in (("nightly-1", "2"), ("nightly-2", "1"), ("adhoc", "1")):
            code, _, err = replay("run", CASE, "--run", name, "-k", k, *base)
            assert code == 0, err
    Store(store).start_run("stopped", {"name": "stopped"}, {"mode": "offline"})

    code, out, _ = replay("runs", "--store", store, "--json")
    listed = {r["name"]: r for r in json.loads(out)}
    assert list(listed) == ["nightly-1", "nightly-2", "adhoc", "stopped"]  # oldest first
    assert listed["nightly-1"]["trials"] == 2 and listed["nightly-1"]["verdicts"] == {"pass": 2}
    assert listed["nightly-1"]["mode"] == "sandbox" and listed["stopped"]["finished"] is None

    code, out, _ = replay("runs", "nightly-*", "--store", store)
    assert code == 0 and "nightly-1" in out and "nightly-2" in out and "adhoc" not in out
    code, out, _ = replay("runs", "--unfinished", "--store", store, "--json")
    assert [r["name"] for r in json.loads(out)] == ["stopped"]
    code, out, _ = replay("runs", "--mode", "offline", "--store", store, "--json")
    assert [r["name"] for r in json.loads(out)] == ["stopped"]

    code, out, _ = replay("runs", "--delete", "nightly-1", "--store", store)
    assert code == 0 and "run nightly-1: deleted (2 trials)" in out
    assert "nightly-1" not in Store(store).runs() and Store(store).trials("nightly-1") == []
    code, _, err = replay("report", "nightly-1", "--store", store)
    assert code == 2 and "no run 'nightly-1'" in err
    code, _, err = replay("runs", "--delete", "nightly-1", "--store", store)
    assert code == 2 and err.count("\n") == 1
    code, out, _ = replay("runs", "none-*", "--store", store)
    assert code == 0 and "no run matches" in out


def test_no_store_is_a_one_line_error(tmp_path: Path) -> None:
    code, _, err = replay("runs", "--store", str(tmp_path / "absent.db"))
    assert code == 2 and err.count("\n") == 1
