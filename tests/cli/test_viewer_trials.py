"""A run's trials in the viewer: listed, sorted, filtered, and any two set side by side.

One real run of 200 trials (two cases of 100, in this process, unwalled) against a
flaky stub whose retried calls make some trials refund twice; it is served by `replay
view` and browsed in Debian's Chromium, which takes screenshots (``TEST_ARTIFACTS=DIR``
keeps them).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from examples.shop import naive_refund_policy
from recorder import read_cassette
from replay import Store, TrialRecord, ViewServer, diff_cassettes, run_html, view
from replay.graders import Verdict
from replay.stub_llm import StubLLM
from tests.cli.test_html import CASE, png_facts
from tests.cli.test_view import browser_on, href
from tests.helpers import replay

pytestmark = pytest.mark.xdist_group("viewer-trials")  # one worker makes the run, once
RUN = "two hundred"


@dataclass(frozen=True)
class Big:
    store: Path
    trials: list[TrialRecord]


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Big:
    tmp = tmp_path_factory.mktemp("trials")
    copy = tmp / "copy.yaml"
    copy.write_text(
        CASE.read_text()
        .replace("id: refund-4812", "id: refund-4812-copy")
        .replace("../fixture.sql", str(CASE.parent.parent / "fixture.sql"))
    )
    store = tmp / "results.db"
    with StubLLM(naive_refund_policy(), seed=7, flake_rate=0.1) as llm:
        code, _, err = replay(
            *("run", str(CASE), str(copy), "--run", RUN, "-k", "100", "-j", "4"),
            *("--llm-url", llm.openai_base_url, "--store", str(store), "--isolation", "none"),
            *("--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"),
            "--measure",  # some trials fail on purpose: they are what the viewer is for
        )
    assert code == 0, err
    trials = Store(store).trials(RUN)
    verdicts = Counter(t.verdict.value for t in trials)
    assert len(trials) == 200 and verdicts["pass"] and verdicts["fail"], verdicts
    return Big(store, trials)


@pytest.fixture
def server(big: Big) -> Iterator[ViewServer]:
    with view(big.store) as running:
        yield running


def shots(tmp_path: Path) -> Path:
    """Where screenshots go: ``TEST_ARTIFACTS`` if set, else the test's own folder."""
    where = Path(os.environ.get("TEST_ARTIFACTS", "") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    return where


def test_the_static_page_lists_every_trial_with_its_figures(big: Big) -> None:
    page = run_html(Store(big.store), RUN)
    table = page.split('id="trials"')[1].split("</table>")[0]
    assert table.count("<tr data-anchor=") == 200
    heads = ["trial", "verdict", "cause", "steps", "tokens", "cost", "seconds"]
    assert "".join(f"<th>{h}</th>" for h in heads) in table
    assert "<input" not in table and 'id="side-go"' not in page  # (picking two is `replay view`'s)
    fail = next(t for t in big.trials if t.verdict.value == "fail")
    assert f'data-cause="{fail.failure.value}" data-case="{fail.case_id}"' in table  # type: ignore[union-attr]
    assert '<select id="f-cause">' in page and '<select id="f-case">' in page


def test_a_trial_page_offers_its_siblings_side_by_side(big: Big, server: ViewServer) -> None:
    fail = next(t for t in big.trials if t.verdict.value == "fail")
    base = server.url.rstrip("/")
    page = httpx.get(base + href("runs", RUN, "trials", fail.case_id, fail.idx)).text
    # Ten of the case's 99 other trials offered, those that passed first (run: none other).
    assert page.count('class="beside"') == 10 and "(and 89 more of this run" in page
    other = next(t for t in big.trials if t.case_id == fail.case_id and t.passed)
    side = href("side", RUN, fail.case_id, fail.idx, RUN, other.case_id, other.idx)
    assert f'href="{side}"' in page
    answer = httpx.get(base + side)
    assert answer.status_code == 200
    assert "first divergence:" in answer.text and 'id="aligned"' in answer.text
    missing = httpx.get(base + href("side", RUN, fail.case_id, fail.idx, RUN, fail.case_id, 999))
    assert missing.status_code == 404 and "has no trial &#x27;999&#x27;" in missing.text


def visible(page: Any) -> list[Any]:
    return page.locator("#trials tbody tr:not([hidden])").all()


@pytest.mark.slow
def test_filter_sort_and_set_two_trials_side_by_side_in_chromium(
    big: Big, server: ViewServer, tmp_path: Path
) -> None:
    failing = [t for t in big.trials if not t.passed]
    with browser_on(server) as (page, errors, blocked):
        page.goto(server.url.rstrip("/") + href("runs", RUN))
        assert page.locator("#trials tbody tr").count() == 200
        assert page.locator("#f-count").inner_text() == "200 of 200 trials"
        # Its failures: the rows and the trials below them, filtered together.
        page.select_option("#f-verdict", "!pass")
        assert len(visible(page)) == len(failing)
        assert page.locator("details.trial:not([hidden])").count() == len(failing)
        assert page.locator("#f-count").inner_text() == f"{len(failing)} of 200 trials"
        cause = Counter(t.failure.value for t in failing if t.failure).most_common(1)[0]
        page.select_option("#f-cause", cause[0])
        assert len(visible(page)) == cause[1]
        page.select_option("#f-case", "refund-4812-copy")
        copy = [t for t in failing if t.case_id == "refund-4812-copy" and t.failure]
        assert len(visible(page)) == sum(t.failure.value == cause[0] for t in copy)  # type: ignore[union-attr]
        page.select_option("#f-case", "")
        page.select_option("#f-cause", "")
        # Sorted by steps, most first: the rows' figures descend.
        steps = page.locator("#trials th", has_text="steps")
        steps.click()
        steps.click()
        assert steps.get_attribute("data-dir") == "desc"
        figures = [int(r.locator("td").nth(4).get_attribute("data-v")) for r in visible(page)]
        assert figures == sorted(figures, reverse=True) and figures[0] > figures[-1]
        for width, height in ((1400, 1000), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            page.locator("#filter").scroll_into_view_if_needed()
            page.screenshot(path=str(shots(tmp_path) / f"trials-{width}x{height}.png"))
        page.set_viewport_size({"width": 1400, "height": 1000})
        # One failing trial and one that passed, of the same case, picked and set side by side.
        fail = next(t for t in failing if t.verdict.value == "fail")
        good = next(t for t in big.trials if t.case_id == fail.case_id and t.passed)
        page.select_option("#f-verdict", "")
        go = page.locator("#side-go")
        for trial in (fail, good):
            assert go.is_disabled()
            page.locator(f'input.pick[value="{href(RUN, trial.case_id, trial.idx)[1:]}"]').check()
        go.click()
        side = href("side", RUN, fail.case_id, fail.idx, RUN, good.case_id, good.idx)
        page.wait_for_url(server.url.rstrip("/") + side)
        diff = diff_cassettes(*(read_cassette(t.cassette or "") for t in (fail, good)))
        assert diff.divergence is not None and diff.state  # (one failed, the other passed)
        divergence = page.locator("#divergence").inner_text()
        assert divergence == f"first divergence: {diff.divergence.describe()}"
        marked = page.locator("#aligned tr.diverge")
        assert marked.count() == 1 and marked.locator("td").first.inner_text() == str(
            diff.divergence.call
        )
        assert page.locator("#states tr.diverge").count() == len(diff.state)  # a row each
        columns = page.locator("#transcripts > div").all()
        assert len(columns) == 2
        left, right = (c.bounding_box() for c in columns)
        assert left is not None and right is not None and left["x"] < right["x"]
        assert abs(left["y"] - right["y"]) < 1  # (beside each other, not one under the other)
        for width, height in ((1400, 1000), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            page.evaluate("window.scrollTo(0, 0)")
            path = shots(tmp_path) / f"side-{width}x{height}.png"
            page.screenshot(path=str(path))
            assert png_facts(path.read_bytes())[2] > 50
        assert errors == [] and blocked == []


def test_a_case_named_dot_dot_keeps_its_own_address(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    store.start_run("r", {}, {})
    for case in ("..", "."):
        store.add_trial("r", TrialRecord(case_id=case, idx=0, verdict=Verdict.PASS))
    with view(store.path) as running:
        page = httpx.get(running.url.rstrip("/") + href("runs", "r")).text
        for case, encoded in (("..", "%2E%2E"), (".", "%2E")):
            assert f'href="/runs/r/trials/{encoded}/0"' in page  # (not resolved by a browser)
            own = httpx.get(f"{running.url.rstrip('/')}/runs/r/trials/{encoded}/0")
            assert own.status_code == 200 and f"case {case}, trial 0" in own.text
