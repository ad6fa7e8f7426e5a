"""The HTML viewer: `replay report RUN --html` and `replay show CASSETTE --html`.

Static checks on the file always run; the browser check drives Debian's Chromium
through playwright, with every non-file request aborted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from examples.shop import naive_refund_policy
from replay import GradeRecord, Store, TrialRecord, run_html
from replay.graders import Cause, Verdict
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
# In this process, unwalled: what is tested here is what is made of the runs (the walls
# are tests/e2e's).
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools",
         "--isolation", "none"]  # fmt: skip
pytestmark = pytest.mark.xdist_group("html")  # one worker builds the store, once
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
EVIDENCE = "refunds.count(order_id=4812) == 1: expected 1, actual 2"
"""What a duplicated refund's state grade says."""


@contextlib.contextmanager
def offline_browser(sync_api: Any) -> Iterator[tuple[Any, list[str], list[str]]]:
    """Debian's Chromium with every request but file: aborted: (context, errors, blocked)."""
    errors: list[str] = []
    blocked: list[str] = []

    def only_files(route: Any) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.route("**/*", only_files)
            yield context, errors, blocked
        finally:
            browser.close()


def watched_page(context: Any, errors: list[str]) -> Any:
    """A new page whose console errors and page errors land in ``errors``."""
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page


@dataclass(frozen=True)
class Viewer:
    store: Path
    page: Path
    verdicts: dict[str, list[str]]
    """Verdicts by case id, in trial order."""


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Viewer:
    """A sandbox run of 4 trials of the demo case and of a copy, against a flaky stub.

    Seed 2 with one worker (requests in a fixed order) gives both cases fail, pass, pass,
    fail; the demo case's failures are duplicated refunds.
    """
    tmp = tmp_path_factory.mktemp("html")
    copy = tmp / "copy.yaml"
    copy.write_text(
        CASE.read_text()
        .replace("id: refund-4812", "id: refund-4812-copy")
        .replace("suite: regression", "suite: capability")
        .replace("../fixture.sql", str(CASE.parent.parent / "fixture.sql"))
    )
    store = tmp / "results.db"
    with StubLLM(naive_refund_policy(), seed=2, flake_rate=0.15) as llm:
        code, _, err = replay(
            "run",
            str(CASE),
            str(copy),
            "--run",
            "flaky",
            "-k",
            "4",
            "-j",
            "1",
            "--llm-url",
            llm.openai_base_url,
            "--store",
            str(store),
            *AGENT,
            "--measure",  # trials fail on purpose: the page shows them
        )
    assert code == 0, err
    page = tmp / "out" / "report.html"
    code, out, _ = replay("report", "flaky", "--store", str(store), "--html", str(page))
    assert code == 0 and out == f"wrote {page}\n"
    verdicts: dict[str, list[str]] = {}
    for trial in Store(store).trials("flaky"):
        verdicts.setdefault(trial.case_id, []).append(trial.verdict.value)
    assert all({"pass", "fail"} <= set(v) for v in verdicts.values()), verdicts
    return Viewer(store, page, verdicts)


def assert_self_contained(page: str) -> None:
    """Nothing the browser would fetch: no external scripts, styles, images, fonts or links."""
    assert not re.search(r"""(?:src|href|action|data)\s*=\s*["']?\s*(?:https?:)?//""", page)
    for needle in ("<link", "@import", "url(", "<img", "<iframe", "<script src", "@font-face"):
        assert needle not in page.lower(), needle


def test_report_page_is_self_contained_and_complete(viewer: Viewer) -> None:
    page = viewer.page.read_text()
    assert_self_contained(page)
    assert page.count("<script>") == 1 and page.count("<style>") == 1
    assert "<h1>run flaky</h1>" in page and "grader_version" in page  # name and pins
    assert re.search(r"<svg[^>]*>.*</svg>", page, re.S)
    assert page.count("<polyline") == 2 and 'data-name="pass^k"' in page
    assert '<td data-v="refund-4812-copy"><a href="#case-1">refund-4812-copy</a></td>' in page
    assert EVIDENCE in page and "first divergence:" in page and "class=diverge" in page
    # Per case: failing trials first, open; passing ones after, closed.
    for section in page.split('<h2 id="case-')[1:]:
        classes = re.findall(r'<details class="trial trial-(\w+)"( open)?>', section)
        assert [c for c, _ in classes] == sorted((c for c, _ in classes), key="fail pass".index)
        assert all(bool(is_open) == (c != "pass") for c, is_open in classes)
    # A failing trial is compared with the first passing one, from the transcript's calls.
    assert "<th>B: trial 1 (pass)</th>" in page
    # Its calls carry their transcript's step numbers, as `replay show` and `diff` give them.
    assert '<td>1</td><td><span class="meta">step 2</span> lookup_order(order_id=4812)' in page
    assert re.search(r"first divergence:</b> step \d+", page)


def test_show_html_writes_one_transcript(viewer: Viewer) -> None:
    trial = next(t for t in Store(viewer.store).trials("flaky") if t.verdict is Verdict.FAIL)
    assert trial.cassette is not None
    out = viewer.page.with_name("show.html")
    code, stdout, _ = replay("show", trial.cassette, "--html", str(out))
    assert code == 0 and stdout == f"wrote {out}\n"
    page = out.read_text()
    assert_self_contained(page)
    assert "<code>issue_refund</code>" in page and "final answer" in page
    assert page.count('<span class="s-inserted">inserted</span>') >= 2  # the duplicate refund
    code, _, err = replay("show", trial.cassette, "--html", str(out), "--json")
    assert code == 2 and "give one of --html, --json and --plain" in err


def test_recorded_text_is_escaped_and_a_missing_cassette_is_one_line(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    store.start_run("evil", {}, {"note": "<script>alert(1)</script>"})
    miss = "lookup_order(order_id=9): nearest recorded lookup_order(order_id=4812) <b>x</b>"
    for idx, verdict in enumerate([Verdict.PASS, Verdict.UNSUPPORTED]):
        grade = GradeRecord("replay", verdict, evidence=(miss,) * idx)
        record = TrialRecord(
            case_id="c<1>", idx=idx, verdict=verdict, cassette=f"/nowhere/{idx}", grades=(grade,)
        )
        store.add_trial("evil", record)
    page = run_html(store, "evil")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>x</b>" not in page and "c&lt;1&gt;" in page
    assert "unsupported: nearest recorded call" in page and "&lt;b&gt;x&lt;/b&gt;" in page
    assert page.count("cassette /nowhere/") == 2  # one note per trial, no transcript, no crash
    assert page.index("trial-unsupported") < page.index("trial-pass")
    # The passing trial's body is inert text in which nothing can end its script element.
    lazy = re.findall(r'<script type="text/html" class="lazy">(.*?)</script>', page, re.S)
    assert len(lazy) == 1 and "</" not in lazy[0] and "cassette /nowhere/0" in lazy[0]


def test_only_the_first_50_failing_trials_start_open(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    store.start_run("many", {}, {})
    for idx in range(60):
        trial = TrialRecord(case_id=f"c{idx % 2}", idx=idx, verdict=Verdict.FAIL, cassette="")
        store.add_trial("many", trial)
    page = run_html(store, "many")
    details = re.findall(r'<details class="trial trial-fail" data-[^>]*?( open)?>', page)
    assert len(details) == 60 and details.count(" open") == 50
    assert page.count('<script type="text/html" class="lazy">') == 10
    assert "10 more trials that did not pass start closed: only the first 50 start open" in page


def png_facts(data: bytes) -> tuple[int, int, int]:
    """Width, height and how many distinct byte values the decoded pixel rows hold."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    position, idat = 8, b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        if data[position + 4 : position + 8] == b"IDAT":
            idat += data[position + 8 : position + 8 + length]
        position += length + 12
    return width, height, len(set(zlib.decompress(idat)))


@pytest.mark.slow
def test_the_page_works_in_chromium_without_network(viewer: Viewer) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian package `chromium`)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    started = time.monotonic()
    with offline_browser(sync_api) as (context, errors, blocked):
        page = watched_page(context, errors)
        page.goto(viewer.page.as_uri())
        assert page.locator("#totals").is_visible()
        assert "pass" in page.locator("#totals").inner_text()
        assert page.locator("#curves svg polyline").count() == 2
        evidence = page.locator("details.trial-fail table.grades").first
        assert evidence.is_visible() and EVIDENCE in evidence.inner_text()

        def first_column() -> list[str]:
            return page.locator("#cases tbody tr td:first-child").all_inner_texts()

        assert first_column() == list(viewer.verdicts)  # both have failures: run order
        page.locator("#cases th", has_text="suite").click()  # capability < regression
        assert first_column() == ["refund-4812-copy", "refund-4812"]
        page.locator("#cases th", has_text="case").click()
        ascending = first_column()
        page.locator("#cases th", has_text="case").click()
        assert ascending == sorted(viewer.verdicts) and first_column() == ascending[::-1]
        assert page.evaluate("document.body.innerText.length") > 1000
        shot = page.screenshot(full_page=True)
        assert errors == [] and blocked == []
        blank_page = context.new_page()
        blank_page.set_content("<html><body></body></html>")
        blank = blank_page.screenshot(full_page=True)
        # The routing does catch what a page would fetch: a probe is blocked.
        blank_page.set_content('<img src="http://127.0.0.1:9/probe.png">')
        assert blocked == ["http://127.0.0.1:9/probe.png"]
    width, height, distinct = png_facts(shot)
    assert width == 1200 and height > 2000 and distinct > 50, (width, height, distinct)
    assert len(shot) > 20 * len(blank) and png_facts(blank)[2] < 10
    print(
        f"screenshot {width}x{height}, {len(shot)} bytes, {distinct} distinct values "
        f"(blank: {len(blank)} bytes); {time.monotonic() - started:.1f} s"
    )


EVIL_PATH = "/nowhere/</script><script>document.title='pwned'</script>"
"""A trial's cassette path that would end a raw script element if it were not escaped."""


def thousand_trials(viewer: Viewer, path: Path) -> Store:
    """A store of 1,000 trials (20 cases of 50) pointing at 3 of the viewer run's cassettes.

    Rows are written directly: every 5th trial fails (the duplicated refund), the rest pass;
    case 0's trial 1 passes with a cassette path full of markup that cannot be read.
    """
    source = Store(viewer.store)
    rows = [t for t in source.trials("flaky") if t.case_id == "refund-4812"]
    failing = next(t for t in rows if t.verdict is Verdict.FAIL)
    templates = [failing, *[t for t in rows if t.passed][:2]]
    store = Store(path)
    store.start_run("big", {}, {"grader_version": 1})
    for n in range(1000):
        case, idx = divmod(n, 50)
        template = templates[0] if idx % 5 == 4 else templates[1 + idx % 2]
        grades = tuple(
            GradeRecord(g.grader, g.verdict, g.score, g.veto, g.evidence) for g in template.grades
        )
        record = dataclasses.replace(template, case_id=f"case-{case:02d}", idx=idx, grades=grades)
        if n == 1:
            record = dataclasses.replace(record, cassette=EVIL_PATH)
        store.add_trial("big", record)
    return store


@pytest.mark.slow
def test_a_thousand_trials_render_lazily(viewer: Viewer, tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian package `chromium`)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    store = thousand_trials(viewer, tmp_path / "big.db")
    html = run_html(store, "big")
    out = tmp_path / "big.html"
    out.write_text(html)
    size = out.stat().st_size
    assert_self_contained(html)
    assert size < 15_000_000, size  # (how fast it renders and loads: bench, not here)
    with offline_browser(sync_api) as (context, errors, blocked):
        page = watched_page(context, errors)
        page.goto(out.as_uri(), wait_until="load")
        assert page.locator("details.trial").count() == 1000
        assert page.locator(".step").count() < 50 * 20  # only the eager failing trials
        # A closed passing trial has no transcript until it is opened.
        lazy = page.locator("#case-0 ~ details.trial-pass").first
        assert lazy.locator(".step").count() == 0
        lazy.locator("summary").click()
        assert lazy.locator(".step").first.is_visible()
        assert "final answer" in lazy.inner_text()
        # So has a failing trial past the eager ones, which keeps its comparison.
        assert page.locator("details.trial-fail[open]").count() == 50
        late = page.locator("details.trial-fail").nth(50)
        assert late.get_attribute("open") is None
        assert late.locator("table.grades").count() == 0
        late.locator("summary").click()
        assert EVIDENCE in late.locator("table.grades").inner_text()
        assert "first divergence:" in late.inner_text()
        # Markup in a lazy body's recorded text stays text.
        summary = page.locator("summary", has_text=re.compile(r"^case-00 trial 1 pass"))
        summary.click()
        evil = summary.locator("xpath=..")
        assert EVIL_PATH in evil.inner_text() and page.title() == "run big"
        # Filtered to what did not pass, then searched (closed transcripts too).
        page.select_option("#f-verdict", "!pass")
        assert page.locator("details.trial:not([hidden])").count() == 200
        assert page.locator("#f-count").inner_text() == "200 of 1000 trials"
        page.fill("#f-text", "case-07 trial")
        assert page.locator("details.trial:not([hidden])").count() == 10
        page.fill("#f-text", "")
        page.select_option("#f-verdict", "")
        assert page.locator("details.trial:not([hidden])").count() == 1000
        page.select_option("#f-verdict", "fail")
        shots = Path(os.environ.get("TEST_ARTIFACTS", str(tmp_path)))
        shots.mkdir(parents=True, exist_ok=True)
        for width, height in ((1400, 1000), (390, 844)):  # a desktop, a phone
            page.set_viewport_size({"width": width, "height": height})
            page.evaluate("window.scrollTo(0, 0)")  # the first screen: failures and causes
            page.screenshot(path=str(shots / f"run-{width}x{height}.png"))
            assert png_facts((shots / f"run-{width}x{height}.png").read_bytes())[2] > 50
        assert errors == [] and blocked == []


def test_no_pass_k_column_it_cannot_compute(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    store.start_run("broken", {}, {})
    for idx, verdict in enumerate([Verdict.ERROR, Verdict.UNSUPPORTED, Verdict.ERROR]):
        store.add_trial("broken", TrialRecord(case_id="c", idx=idx, verdict=verdict))
    page = run_html(store, "broken")
    heads = re.findall(r"<th>([^<]*)</th>", page.split('id="cases"')[1].split("</thead>")[0])
    assert heads == ["case", "suite", "n", "c", "pass^1", "interval", "verdicts"]
    assert "pass^0" not in page
    # One graded trial each: pass^1 alone, not twice.
    store.start_run("once", {}, {})
    for case in ("a", "b"):
        store.add_trial("once", TrialRecord(case_id=case, idx=0, verdict=Verdict.PASS))
    head = run_html(store, "once").split('id="cases"')[1].split("</thead>")[0]
    assert re.findall(r"<th>([^<]*)</th>", head).count("pass^1") == 1


def test_the_case_table_is_worst_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    store.start_run("r", {}, {})
    verdicts = {
        "a-all-pass": ["pass", "pass"],
        "b-half": ["pass", "fail"],
        "c-errors": ["error", "error"],
        "d-pass-and-unsupported": ["pass", "unsupported"],
        "f-all-fail": ["fail", "fail"],
    }
    for case, seen in verdicts.items():
        for idx, verdict in enumerate(seen):
            store.add_trial("r", TrialRecord(case_id=case, idx=idx, verdict=Verdict(verdict)))
    page = run_html(store, "r")
    table = page.split('id="cases"')[1].split("</table>")[0]
    order = ["c-errors", "f-all-fail", "b-half", "d-pass-and-unsupported", "a-all-pass"]
    assert re.findall(r'<a href="#case-\d+">([^<]*)</a>', table) == order
    sections = re.findall(r'<h2 id="case-\d+">case ([^<]*)</h2>', page)
    assert sections == order


def many_failures(path: Path) -> Store:
    """60 failing trials of one case (the last 10 start closed), 1 agent error, 1 pass."""
    store = Store(path)
    store.start_run("many", {}, {})
    for idx in range(60):
        grade = GradeRecord("state", Verdict.FAIL, evidence=(f"no {idx}",))
        store.add_trial(
            "many", TrialRecord(case_id="c", idx=idx, verdict=Verdict.FAIL, grades=(grade,))
        )
    crash = ("agent raised RuntimeError: boom",)
    error = TrialRecord(
        case_id="d", idx=0, verdict=Verdict.ERROR, cause=Cause.AGENT, cause_detail=crash
    )
    store.add_trial("many", error)
    store.add_trial("many", TrialRecord(case_id="d", idx=1, verdict=Verdict.PASS))
    return store


def test_the_page_lists_failures_by_cause_before_the_cases(tmp_path: Path) -> None:
    page = run_html(many_failures(tmp_path / "r.db"), "many")
    causes = page.split('<div id="causes">')[1].split("<h2>cases</h2>")[0]
    counts = re.findall(r"<tr><td>([^<]*)</td><td>(\d+)</td></tr>", causes)
    assert counts == [("assertion failed", "60"), ("agent error", "1")]
    assert '<div class="cause-group" data-cause="agent error"><h3>agent error (1)</h3>' in causes
    # Each trial linked to its <details> below.
    links = re.findall(r'<a class="to-trial" href="#([^"]+)">([^<]*)</a>', causes)
    assert len(links) == 61 and links[-1][1] == "d#0"
    for anchor, _ in links:
        assert page.count(f'id="{anchor}"') == 1
    assert "d#0</a> agent: agent raised RuntimeError: boom" in causes
    assert page.index('<div id="causes">') < page.index('id="cases"')
    store = Store(tmp_path / "r.db")
    store.start_run("fine", {}, {})
    store.add_trial("fine", TrialRecord(case_id="c", idx=0, verdict=Verdict.PASS))
    assert '<p class="meta" id="causes">no trial failed</p>' in run_html(store, "fine")


@pytest.mark.slow
def test_a_cause_link_opens_its_trial_in_chromium(tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian package `chromium`)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    out = tmp_path / "many.html"
    out.write_text(run_html(many_failures(tmp_path / "r.db"), "many"))
    with offline_browser(sync_api) as (context, errors, blocked):
        page = watched_page(context, errors)
        page.goto(out.as_uri())
        groups = page.locator("#causes .cause-group h3").all_inner_texts()
        assert groups == ["assertion failed (60)", "agent error (1)"]
        assert page.locator("#cases tbody tr td:first-child").all_inner_texts() == ["c", "d"]
        # Trial c#59 is past the 50 that start open: its link opens it and renders its body.
        late = page.locator("details.trial-fail", has_text=re.compile(r"^c trial 59 "))
        assert late.get_attribute("open") is None and late.locator("table.grades").count() == 0
        page.locator("#causes .cause-group summary", has_text="50 more").click()  # (folded)
        page.locator("#causes a.to-trial", has_text="c#59").click()
        assert late.get_attribute("open") is not None
        assert "no 59" in late.locator("table.grades").inner_text()
        assert late.evaluate("d => d.getBoundingClientRect().top") < 900  # scrolled to it
        assert errors == [] and blocked == []
