"""A large run's HTML page shows the trials of its worst cases, and says where the rest are.

(The page of a 100,000-trial run would be hundreds of MB: ``PAGE_TRIALS`` bounds it; set
small here.)
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from replay import Store, TrialRecord, run_html, view
from replay.graders import Verdict
from replay.views import _run_page


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setattr(_run_page, "PAGE_TRIALS", 8)
    store = Store(tmp_path / "r.db")
    store.start_run("big", {}, {"mode": "review"})
    for case in range(5):  # case c0 passes least, c4 most: worst first is c0, c1, ...
        for idx in range(4):
            verdict = Verdict.PASS if idx < case else Verdict.FAIL
            store.add_trial("big", TrialRecord(case_id=f"c{case}", idx=idx, verdict=verdict))
    store.finish_run("big")
    return store


def _trial_rows(page: str) -> set[str]:
    return set(re.findall(r'data-case="(c\d)"', page))


def test_a_large_run_s_page_shows_its_worst_cases_and_names_the_viewer(store: Store) -> None:
    page = run_html(store, "big")
    assert _trial_rows(page) == {"c0"} | {"c1"}  # 8 trials: two cases fill the page
    assert "8 of the run's 20 trials" in page
    assert "cases 1 to 2 of 5, worst first" in page
    assert "<code>replay view --store STORE</code>" in page
    assert 'href="#case-0"' in page and '<h2 id="case-2">' not in page
    # every case is in the case table, and every failing trial's cause is counted
    for case in ("c0", "c1", "c2", "c3", "c4"):
        assert f">{case}</a>" in page
    assert "<h3>assertion failed (10)</h3>" in page


def test_the_viewer_pages_a_large_run_by_cases(store: Store) -> None:
    with view(store.path) as server:
        base = server.url.rstrip("/") + "/runs/big"
        first = httpx.get(base).text
        assert _trial_rows(first) == {"c0", "c1"} and 'href="/runs/big?from=2#trials"' in first
        second = httpx.get(base, params={"from": "2"}).text
        assert _trial_rows(second) == {"c2", "c3"}
        assert 'href="/runs/big?from=0#trials"' in second
        assert 'href="/runs/big?from=4#trials"' in second
        assert _trial_rows(httpx.get(base, params={"from": "x"}).text) == {"c0", "c1"}


def test_a_small_run_s_page_is_not_paged(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_run_page, "PAGE_TRIALS", 20)
    page = run_html(store, "big")
    assert _trial_rows(page) == {"c0", "c1", "c2", "c3", "c4"} and 'id="paged"' not in page
