"""``replay run --stub-llm``: the stub LLM started for the run on a free port, stopped after."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit

from recorder import read_cassette
from replay import Store
from tests.helpers import REPO, replay

CASE = str(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")
AGENT = [
    "--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools",
    "--isolation", "none",
]  # fmt: skip


def test_a_run_with_its_own_stub_passes_and_leaves_no_server(tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    code, _, err = replay(
        "run", CASE, "--run", "own", "--store", store, "-k", "2",
        "--stub-llm", "examples.shop:refund_policy", *AGENT,
    )  # fmt: skip
    assert code == 0, err
    trials = Store(store).trials("own")
    assert [t.verdict for t in trials] == ["pass", "pass"]
    first = next(e for e in read_cassette(trials[0].cassette).events if hasattr(e, "request"))
    where = urlsplit(first.request.url)  # type: ignore[attr-defined]
    probe = socket.socket()
    try:  # stopped after the run: nothing listens there now
        assert probe.connect_ex((where.hostname or "", where.port or 0)) != 0, where
    finally:
        probe.close()


def test_bad_stub_llm_values_are_one_line_errors(tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    common = ["run", CASE, "--run", "bad", "--store", store, *AGENT]
    for given, said in (
        (["--stub-llm", "echo", "--llm-url", "http://127.0.0.1:9/v1"], "not both"),
        (["--stub-llm", "nowhere:policy"], "cannot load 'nowhere:policy'"),
        (["--stub-llm", str(tmp_path / "missing.json")], "stub script"),
    ):
        code, _, err = replay(*common, *given)
        assert code == 2 and err.count("\n") == 1 and said in err, err
