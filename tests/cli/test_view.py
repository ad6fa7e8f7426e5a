"""`replay view` (``replay.view``): the store served as pages, read over HTTP and in Chromium.

Two runs of two cases: in ``before`` both pass; in ``after <i>&`` the model never emails
the customer, so the demo case newly fails while the other case (which asks for no
email, and whose id sorts first and is full of markup and URL syntax) still passes.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from examples.shop import refund_policy
from replay import Store, ViewServer, view
from replay.stub_llm import ScriptedPolicy, StubLLM
from tests.cli.test_html import CHROMIUM, CHROMIUM_ARGS
from tests.helpers import REPO, replay

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]
STEADY = 'a <b>&"steady"?#50%'
"""The case that passes in both runs: its id is markup, quotes and URL syntax."""
BEFORE, AFTER = "before", "after <i>&"


def href(*segments: object) -> str:
    return "/" + "/".join(quote(str(s), safe="") for s in segments)


@dataclass(frozen=True)
class Served:
    store: Path
    damaged: str
    """The cassette of ``before``'s steady trial 1, overwritten with garbage."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Served:
    tmp = tmp_path_factory.mktemp("view")
    steady = tmp / "steady.yaml"
    text = CASE.read_text().replace("id: refund-4812", f"id: '{STEADY}'")
    text = text.replace("../fixture.sql", str(CASE.parent.parent / "fixture.sql"))
    email = '  - emails.count(customer_id=17, template="refund") == 1\n'
    assert email in text
    steady.write_text(text.replace(email, ""))
    store = tmp / "results.db"
    silent = ScriptedPolicy(refund_policy().turns[:4], final=refund_policy().final)
    for name, policy in ((BEFORE, refund_policy()), (AFTER, silent)):
        with StubLLM(policy) as llm:
            code, _, err = replay(
                "run",
                *(str(CASE), str(steady)),
                *("--run", name, "-k", "2", "--store", str(store), "--isolation", "none"),
                *("--llm-url", llm.openai_base_url, *AGENT, "--measure"),
            )
        assert code == 0, err  # --measure: the second run fails a case, by design
    verdicts = {(t.case_id, t.verdict) for t in Store(store).trials(AFTER)}
    assert verdicts == {("refund-4812", "fail"), (STEADY, "pass")}
    rows = Store(store).trials(BEFORE)
    damaged = next(t.cassette for t in rows if (t.case_id, t.idx) == (STEADY, 1))
    assert damaged is not None
    Path(damaged).write_bytes(b"not a cassette at all")
    return Served(store, damaged)


@pytest.fixture
def server(served: Served) -> Iterator[ViewServer]:
    with view(served.store) as running:
        yield running


def get(server: ViewServer, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(server.url.rstrip("/") + path, **kwargs)


def test_the_run_list_holds_every_run_newest_first(server: ViewServer) -> None:
    page = get(server, "/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    text = page.text
    newest, oldest = (f'href="{href("runs", name)}"' for name in (AFTER, BEFORE))
    assert text.index(newest) < text.index(oldest)
    assert "after &lt;i&gt;&amp;" in text and "<i>" not in text
    assert "<td>1.000</td>" in text and "<td>0.500</td>" in text  # suite pass^1 of each
    assert f'href="{href("compare", BEFORE, AFTER)}"' in text
    assert '<form id="pick" method="get" action="/compare">' in text
    picked = get(server, "/compare", params={"a": BEFORE, "b": AFTER})
    assert picked.status_code == 303
    assert picked.headers["location"] == href("compare", BEFORE, AFTER)


def test_a_run_page_is_the_viewer_with_links_to_each_trial(server: ViewServer) -> None:
    page = get(server, href("runs", AFTER))
    assert page.status_code == 200
    assert "<h1>run after &lt;i&gt;&amp;</h1>" in page.text and 'id="totals"' in page.text
    assert '<nav><a href="/">runs</a>' in page.text
    assert f'href="{href("compare", BEFORE, AFTER)}"' in page.text  # with the run before
    assert f'href="{href("compare", BEFORE, AFTER)}"' in get(server, href("runs", BEFORE)).text
    for case in ("refund-4812", STEADY):
        for idx in (0, 1):
            assert f'href="{href("runs", AFTER, "trials", case, idx)}"' in page.text
    trial = get(server, href("runs", AFTER, "trials", "refund-4812", 0))
    assert trial.status_code == 200
    assert "<code>send_email</code>" not in trial.text and "<code>issue_refund</code>" in trial.text
    assert "emails.count(customer_id=17, template=&quot;refund&quot;) == 1" in trial.text
    assert "final answer" in trial.text
    steady = get(server, href("runs", AFTER, "trials", STEADY, 1))
    assert steady.status_code == 200 and "a &lt;b&gt;&amp;&quot;steady&quot;?#50%" in steady.text
    assert "<b>&" not in steady.text


def test_a_damaged_cassette_is_a_page_that_says_so(served: Served, server: ViewServer) -> None:
    page = get(server, href("runs", BEFORE, "trials", STEADY, 1))
    assert page.status_code == 200
    assert '<p class="note" id="no-transcript"><b>no transcript</b>: cassette ' in page.text
    assert "cannot be read" in page.text and "Traceback" not in page.text
    assert get(server, href("runs", BEFORE)).status_code == 200  # the run's page too


@pytest.mark.parametrize(
    ("path", "message", "exists"),
    [
        ("/runs/nope", "no run &#x27;nope&#x27; in ", [href("runs", BEFORE), href("runs", AFTER)]),
        (
            href("runs", BEFORE, "trials", "nope", 0),
            "run &#x27;before&#x27; has no case &#x27;nope&#x27;",
            [href("runs", BEFORE, "trials", STEADY, 0)],
        ),
        (
            href("runs", BEFORE, "trials", "refund-4812", 7),
            "case &#x27;refund-4812&#x27; of run &#x27;before&#x27; has no trial &#x27;7&#x27;",
            [href("runs", BEFORE, "trials", "refund-4812", i) for i in (0, 1)],
        ),
        ("/compare/before/<x>", "no run &#x27;&lt;x&gt;&#x27; in ", [href("runs", AFTER)]),
        ("/elsewhere", "no page at /elsewhere", ["/", href("runs", BEFORE)]),
    ],
)
def test_an_unknown_address_is_a_404_that_says_what_exists(
    server: ViewServer, path: str, message: str, exists: list[str]
) -> None:
    page = get(server, path)
    assert page.status_code == 404
    missing = re.search(r'<p id="missing">(.*?)</p>', page.text)
    assert missing and message in missing.group(1), page.text
    for link in exists:
        assert f'href="{link}"' in page.text


def test_compare_lists_the_newly_failing_case_first(server: ViewServer) -> None:
    page = get(server, href("compare", BEFORE, AFTER))
    assert page.status_code == 200
    newly = re.search(r'<ol id="newly-failing">(.*?)</ol>', page.text)
    assert newly and newly.group(1).count("<li>") == 1
    assert f'href="{href("runs", AFTER, "trials", "refund-4812", 0)}"' in newly.group(1)
    cases = re.findall(r"<tr(?: class=newly)?><td>(?:<a [^>]*>)?([^<]*)", page.text)
    assert cases == ["refund-4812", "a &lt;b&gt;&amp;&quot;steady&quot;?#50%"]
    assert page.text.count("<tr class=newly>") == 1
    # A's passing trial beside B's failing one: B stopped before emailing the customer.
    side = href("side", BEFORE, "refund-4812", 0, AFTER, "refund-4812", 0)
    assert f'href="{side}"' in newly.group(1)
    beside = get(server, side).text
    assert "first divergence:</b> step " in beside and "B stopped" in beside
    assert "send_email" in beside.split('id="aligned"')[1].split("</table>")[0]


def test_compare_lists_a_case_whose_agent_crashes_as_newly_failing(tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    for name, agent in (("good", AGENT[1]), ("crash", "tests.cli.exit_helpers:crash")):
        with StubLLM(refund_policy()) as llm:
            code, _, err = replay(
                "run", str(CASE), "--run", name, "--store", store, "--isolation", "none",
                "--llm-url", llm.openai_base_url, "--agent", agent, *AGENT[2:], "--measure",
            )  # fmt: skip
        assert code == 0, err
    with view(store) as running:
        page = get(running, href("compare", "good", "crash"))
    newly = re.search(r'<ol id="newly-failing">(.*?)</ol>', page.text)
    assert newly and newly.group(1).count("<li>") == 1  # its trial: an error of cause agent
    trial = href("runs", "crash", "trials", "refund-4812", 0)
    assert f'href="{trial}"' in newly.group(1)
    assert page.text.count(f'href="{trial}"') == 2  # and from its row in the table


def test_the_server_only_reads_and_refuses_other_host_names(
    served: Served, server: ViewServer
) -> None:
    gc.collect()  # a Store left over from the fixture closes (and checkpoints) now, not below
    before = served.store.read_bytes()
    for path in ("/", href("runs", AFTER), href("compare", BEFORE, AFTER)):
        assert get(server, path).status_code == 200
    assert served.store.read_bytes() == before
    with pytest.raises(sqlite3.OperationalError, match="readonly"):  # what the pages open
        Store(served.store, read_only=True).delete_run(BEFORE)
    assert httpx.post(server.url, content=b"x").status_code == 501
    rebound = get(server, "/", headers={"Host": "<b>attacker.example:80"})
    assert rebound.status_code == 421 and "before" not in rebound.text
    assert "&lt;b&gt;attacker.example" in rebound.text and "<b>" not in rebound.text
    assert get(server, "/", headers={"Host": "localhost"}).status_code == 200


def test_another_loopback_address_is_served_and_named_in_the_refusal(served: Served) -> None:
    with view(served.store, host="127.0.0.2") as other:
        assert other.url.startswith("http://127.0.0.2:")
        assert get(other, "/").status_code == 200  # its own address is a loopback one
        refused = get(other, "/", headers={"Host": "rebound.example"})
        assert refused.status_code == 421 and f"open {other.url} instead" in refused.text


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_a_store_in_a_folder_that_cannot_be_written_is_read(served: Served, tmp_path: Path) -> None:
    """SQLite cannot make a WAL store's -shm file there: the store is read as it stands."""
    folder = tmp_path / "ro"
    folder.mkdir()
    # A consistent copy: the served store's last pages may still be in its -wal file, which
    # a plain file copy leaves behind (the copy would then hold no runs).
    with contextlib.closing(sqlite3.connect(served.store)) as source:
        with contextlib.closing(sqlite3.connect(folder / "results.db")) as copy:
            source.backup(copy)
            assert copy.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    code = (
        "from replay import Store; "
        f"print(sorted(Store({str(folder / 'results.db')!r}, read_only=True).runs()))"
    )
    walls = ["bwrap", "--bind", "/", "/", "--ro-bind", str(folder), str(folder), "--"]
    done = subprocess.run(
        [*walls, sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(sorted([BEFORE, AFTER]))
    assert sorted(p.name for p in folder.iterdir()) == ["results.db"]


def test_a_missing_store_or_a_taken_port_is_a_one_line_error(
    served: Served, server: ViewServer, tmp_path: Path
) -> None:
    code, _, err = replay("view", "--store", str(tmp_path / "absent.db"))
    assert code == 2 and err.startswith("error: no results store at ") and err.count("\n") == 1
    foreign = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(foreign)) as db:
        db.execute("CREATE TABLE notes (text)")
        db.commit()
    data = foreign.read_bytes()
    code, _, err = replay("view", "--store", str(foreign))
    assert code == 2
    assert err == f"error: {foreign} is not a results store (it has no runs); pass --store\n"
    assert foreign.read_bytes() == data
    older = tmp_path / "older.db"
    made = Store(older)
    made.start_run("old", {}, {})
    made.db.conn.close()
    with contextlib.closing(sqlite3.connect(older)) as db:
        db.execute("PRAGMA user_version = 2")
    data = older.read_bytes()
    code, _, err = replay("view", "--store", str(older))
    assert code == 2 and err.count("\n") == 1
    assert err.endswith(f"bring it up to date with `replay runs --store {older}` first\n")
    assert older.read_bytes() == data
    code, _, err = replay("runs", "--store", str(older))
    assert code == 0, err
    with view(older) as upgraded:
        assert get(upgraded, "/").status_code == 200
    port = server.url.rsplit(":", 1)[1].strip("/")
    code, _, err = replay("view", "--store", str(served.store), "--port", port)
    assert code == 2 and err.startswith("error: cannot serve on 127.0.0.1 port ")
    assert err.count("\n") == 1


def test_the_command_prints_its_address_and_ctrl_c_exits_0(served: Served) -> None:
    binary = str(Path(sys.executable).with_name("replay"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [binary, "view", "--store", str(served.store)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            match = re.fullmatch(
                rf"serving {re.escape(str(served.store))} at (http://127\.0\.0\.1:\d+/) "
                r"\(Ctrl-C stops\)\n",
                line,
            )
            assert match, line
            assert httpx.get(match.group(1)).status_code == 200
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0 and err == "", err


@contextlib.contextmanager
def browser_on(server: ViewServer) -> Iterator[tuple[Any, list[str], list[str]]]:
    """Debian's Chromium allowed to reach the server only: (page, errors, blocked)."""
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian package `chromium`)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    errors: list[str] = []
    blocked: list[str] = []

    def only_the_server(route: Any) -> None:
        if route.request.url.startswith(server.url):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.route("**/*", only_the_server)
            page = context.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            yield page, errors, blocked
        finally:
            browser.close()


@pytest.mark.slow
def test_browsing_runs_and_a_comparison_in_chromium(server: ViewServer) -> None:
    with browser_on(server) as (page, errors, blocked):
        page.goto(server.url)
        assert page.locator("a.run").all_inner_texts() == [AFTER, BEFORE]
        page.locator("a.run", has_text=BEFORE).click()
        page.wait_for_url(server.url.rstrip("/") + href("runs", BEFORE))
        assert page.locator("h1").inner_text() == "run before"
        assert page.locator("#totals").is_visible()

        page.go_back()
        page.select_option("select[name=a]", BEFORE)
        page.select_option("select[name=b]", AFTER)
        page.locator("form#pick button").click()
        page.wait_for_url(server.url.rstrip("/") + href("compare", BEFORE, AFTER))
        assert page.locator("#newly-failing li").all_inner_texts() == [
            "refund-4812: pass^1 1.000 → 0.000 (p 0.333, q 0.667) · side by side"
        ]
        (pass1, *_) = page.locator("#suite-change li").all_inner_texts()
        assert pass1.startswith("pass^1 ") and "95% interval [" in pass1 and "cases paired" in pass1
        first = page.locator("#changes tbody tr").first
        assert first.locator("td").first.inner_text() == "refund-4812"
        assert "newly failing" in first.inner_text()
        assert page.locator("#changes tbody tr").nth(1).locator("td").first.inner_text() == STEADY

        page.locator("#newly-failing a.failing").click()
        page.wait_for_url(server.url.rstrip("/") + href("runs", AFTER, "trials", "refund-4812", 0))
        assert "case refund-4812, trial 0" in page.locator("h1").inner_text()
        transcript = page.locator("#transcript")
        assert transcript.locator(".step").count() >= 4
        assert "issue_refund" in transcript.inner_text()
        assert "send_email" not in transcript.inner_text()
        assert "refund" in transcript.locator("text=final answer").locator("..").inner_text()
        assert errors == [] and blocked == []


def test_an_empty_store_and_a_run_without_trials(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    with view(store) as server:
        page = get(server, "/")
        assert page.status_code == 200
        assert f"no run in {store.path}: `replay run` first" in page.text
        store.start_run("stopped", {}, {"mode": "offline"})
        page = get(server, "/")
        assert "<td>stopped</td>" not in page.text and ">stopped</a>" in page.text
        assert (
            "<td>offline</td>" in page.text
            and '<span class="when">not finished</span>' in page.text
        )
        assert get(server, href("runs", "stopped")).status_code == 200
        assert get(server, href("compare", "stopped", "stopped")).status_code == 200


def test_runs_of_other_cases_are_not_offered_as_a_comparison(tmp_path: Path) -> None:
    """The viewer's small fixes: only runs of the same cases are paired, pins are folded,
    failures come first, a trial page counts its case's trials, the transcript says how
    the agent's run ended (not an "outcome" beside the verdict)."""
    (tmp_path / "empty.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    store = tmp_path / "r.db"
    for name, case in (("first", "ask"), ("second", "other"), ("third", "ask")):
        path = tmp_path / f"{case}.yaml"
        path.write_text(f"id: {case}\ninstruction: Say hello.\nfixture: empty.sql\n")
        code, _, err = replay(
            "run", str(path), "--run", name, "--store", str(store), "--stub-llm", "echo",
            "--agent", "tests.replay.test_ignore_fields:agent",
            "--tools", "tests.replay.test_ignore_fields:no_tools", "--isolation", "none",
        )  # fmt: skip
        assert code == 0, err
    with view(store) as running:
        runs = get(running, "/").text
        assert f'href="{href("compare", "first", "third")}"' in runs  # the same case: paired
        assert href("compare", "second", "third") not in runs
        assert href("compare", "first", "second") not in runs
        second = get(running, href("runs", "second")).text
        assert "compare" not in second.split("review queue")[0]
        assert second.index('id="causes"') < second.index('<details id="pins-fold">')
        assert "<td>null</td>" not in second
        trial = get(running, href("runs", "third", "trials", "ask", 0)).text
        assert "trials of this case in the run (1)" in trial
        assert "<h4>the agent's run: ended</h4>" in trial and "outcome:" not in trial
