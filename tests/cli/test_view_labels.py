"""The review queue of `replay view`: `replay sample`'s picks, labelled in the browser.

A label given in the queue is the label `replay label` gives; a POST that does not come
from the server's own page (another origin, no token, another host) or is no label form
is refused and writes nothing.
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
from pathlib import Path

import httpx
import pytest

from replay import LabelRecord, Store, ViewServer, sample, view
from tests.cli.test_sample import RUN, skewed_store
from tests.cli.test_view import browser_on
from tests.helpers import REPO, replay

QUEUE = f"/runs/{RUN}/review?pass=3&fail=4&seed=2"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    skewed_store(tmp_path / "results.db").db.conn.close()
    return tmp_path / "results.db"


@pytest.fixture
def server(store: Path) -> Iterator[ViewServer]:
    with view(store) as running:
        yield running


def token(server: ViewServer) -> str:
    page = httpx.get(server.url.rstrip("/") + QUEUE)
    tokens = set(re.findall(r'<input type="hidden" name="token" value="([^"]+)">', page.text))
    assert len(tokens) == 1
    return tokens.pop()


def post(server: ViewServer, fields: dict[str, str], **headers: str) -> httpx.Response:
    origin = server.url.rstrip("/")
    return httpx.post(origin + QUEUE, data=fields, headers={"Origin": origin, **headers})


def copy(store: Path, to: Path) -> Path:
    """A consistent copy of the store (its last pages may still be in the -wal file)."""
    with contextlib.closing(sqlite3.connect(store)) as source:
        with contextlib.closing(sqlite3.connect(to)) as target:
            source.backup(target)
    return to


def but_when(labels: list[LabelRecord]) -> list[tuple[object, ...]]:
    return [(x.run, x.case_id, x.idx, x.dimension, x.verdict, x.note, x.labeller) for x in labels]


def test_the_queue_lists_the_samples_picks_with_their_labels(store: Path) -> None:
    first = sample(Store(store), RUN, passed=3, failed=4, seed=2).trials[0]
    Store(store).add_label(
        RUN, first.case_id, first.idx, "fail", "refunded <b>twice</b>", labeller="<i>bob"
    )
    with view(store) as server:
        page = httpx.get(server.url.rstrip("/") + QUEUE)
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "form-action 'self'" in csp and "default-src 'none'" in csp
    picked = sample(Store(store), RUN, passed=3, failed=4, seed=2)
    shown = re.findall(r'<section class="pick" id="pick-\d+" data-trial="([^"]+)">', page.text)
    assert shown == [f"{t.case_id}#{t.idx}" for t in picked.trials]
    for t in picked.trials:
        assert f'<a href="/runs/{RUN}/trials/{t.case_id}/{t.idx}">' in page.text
    assert page.text.count('<form class="label" method="post"') == 7
    assert f'action="{QUEUE.replace("&", "&amp;")}#pick-1"' in page.text
    assert "by &lt;i&gt;bob: refunded &lt;b&gt;twice&lt;/b&gt;" in page.text
    assert "<b>twice" not in page.text and "<i>bob" not in page.text


@pytest.mark.parametrize(
    ("query", "status", "line"),
    [
        ("?pass=x", 400, "pass must be a whole number >= 0, not 'x'\n"),
        ("?fail=-1", 400, "fail must be a whole number >= 0, not '-1'\n"),
        ("?seed=1&seed=2", 400, "seed must be a whole number, not 'given twice'\n"),
    ],
)
def test_a_bad_query_is_a_400_of_one_line(
    server: ViewServer, query: str, status: int, line: str
) -> None:
    page = httpx.get(server.url.rstrip("/") + f"/runs/{RUN}/review{query}")
    assert (page.status_code, page.text) == (status, line)
    assert page.headers["content-type"].startswith("text/plain")
    assert httpx.get(server.url.rstrip("/") + "/runs/nope/review").status_code == 404


@pytest.mark.slow
def test_labelling_in_chromium_stores_what_replay_label_stores(
    store: Path, server: ViewServer, tmp_path: Path
) -> None:
    twin = copy(store, tmp_path / "twin.db")  # labelled by `replay label` below
    with browser_on(server) as (page, errors, blocked):
        page.goto(server.url.rstrip("/") + QUEUE)
        first, second = page.locator("section.pick").nth(0), page.locator("section.pick").nth(5)
        trial1, trial2 = (s.get_attribute("data-trial") for s in (first, second))
        # No name yet: the browser asks for one and sends nothing.
        first.locator("input[value=pass]").check()
        first.locator("button").click()
        assert page.evaluate("document.getElementById('by').validationMessage") != ""
        assert Store(store).labels(RUN) == []

        page.fill("#by", "ann")
        first.locator("button").click()
        page.wait_for_url(re.compile(re.escape(QUEUE) + "#pick-1$"))
        assert "pass by ann" in page.locator("section.pick").nth(0).inner_text()
        second = page.locator("section.pick").nth(5)
        second.locator("input[value=unsure]").check()
        second.locator("input[name=note]").fill('cannot tell: the refund & "email" <both>?')
        second.locator("button").click()
        page.wait_for_url(re.compile(re.escape(QUEUE) + "#pick-6$"))
        said = page.locator("section.pick").nth(5).locator("ul.labels").inner_text()
        assert said.startswith('unsure by ann: cannot tell: the refund & "email" <both>? ')
        assert page.locator("#progress").inner_text() == "2 of 7 with a label"

        page.goto(server.url.rstrip("/") + QUEUE)  # the name is remembered
        assert page.input_value("#by") == "ann"
        page.screenshot(path=str(tmp_path / "queue.png"), full_page=True)
        page.locator("section.pick a").first.click()
        assert "trial" in page.locator("h1").inner_text()
        assert errors == [] and blocked == []

    note = 'cannot tell: the refund & "email" <both>?'
    for trial, verdict, more in ((trial1, "pass", []), (trial2, "unsure", ["--note", note])):
        assert trial is not None
        code, _, err = replay(
            "label", RUN, trial, verdict, "--by", "ann", *more, "--store", str(twin)
        )
        assert code == 0, err
    labelled = Store(store).labels(RUN)
    assert len(labelled) == 2
    assert but_when(labelled) == but_when(Store(twin).labels(RUN))


@pytest.mark.parametrize(
    ("change", "status", "line"),
    [
        ({"Origin": "http://evil.example"}, 403, "refused: a form from 'http://evil.example', *"),
        ({"Origin": "null"}, 403, "refused: a form from 'null', not from this server's page"),
        ({"Origin": ""}, 403, "refused: a form without an Origin, not from this server's page"),
        ({"token": ""}, 403, "refused: the form's token is not this server's; reload the page"),
        ({"token": "forged"}, 403, "refused: the form's token is not this server's; *"),
        (
            {"Host": "evil.example:{port}"},
            421,
            "<p>not served to host &#x27;evil.example&#x27;: open * instead</p>",
        ),
        ({"Host": "localhost:1"}, 403, "refused: Host 'localhost:1' is not this server's (port *)"),
    ],
)
def test_a_forged_post_is_refused_and_writes_nothing(
    store: Path, server: ViewServer, change: dict[str, str], status: int, line: str
) -> None:
    port = server.url.rsplit(":", 1)[1].strip("/")
    fields = {"token": token(server), "case": "often", "idx": "0", "verdict": "pass", "by": "x"}
    headers = {"Origin": server.url.rstrip("/")}
    for key, value in change.items():
        (fields if key == "token" else headers)[key] = value.format(port=port)
    if change.get("Origin") == "":
        del headers["Origin"]
    gc.collect()
    before = store.read_bytes()
    answer = httpx.post(server.url.rstrip("/") + QUEUE, data=fields, headers=headers)
    assert answer.status_code == status
    assert re.fullmatch(re.escape(line).replace(r"\*", ".*") + "\n", answer.text), answer.text
    assert Store(store).labels(RUN) == [] and store.read_bytes() == before
    assert post(server, {**fields, "token": token(server)}).status_code == 303  # the real one


def form(**fields: str) -> dict[str, str]:
    return {"case": "often", "idx": "0", "verdict": "pass", "note": "", "by": "x", **fields}


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        (form(idx="x"), "a label names a case, a trial index and one of pass, fail, unsure"),
        (form(idx="٣"), "a label names a case, a trial index and one of pass, fail, unsure"),
        (form(verdict="maybe"), "a label names a case, a trial index and one of pass, *"),
        (form(case=""), "a label names a case, a trial index and one of pass, fail, unsure"),
        (form(colour="red"), "a label form has case, idx, verdict, note and by once each: *"),
        (form(case="nope"), f"run '{RUN}' has no trial nope#0; see `replay report {RUN}`"),
        (form(idx="99"), f"run '{RUN}' has no trial often#99; see `replay report {RUN}`"),
        (form(by=" "), "a label from the review queue says who gave it: fill in your name"),
    ],
)
def test_a_malformed_form_is_a_400_of_one_line(
    store: Path, server: ViewServer, fields: dict[str, str], line: str
) -> None:
    answer = post(server, {"token": token(server), **fields})
    assert answer.status_code == 400 and answer.text.count("\n") == 1, answer.text
    assert re.fullmatch(re.escape(line).replace(r"\*", ".*") + "\n", answer.text), answer.text
    assert Store(store).labels(RUN) == []


def test_a_body_that_is_no_form_is_a_400_and_other_posts_a_501(
    store: Path, server: ViewServer
) -> None:
    url, origin = server.url.rstrip("/") + QUEUE, {"Origin": server.url.rstrip("/")}
    secret = token(server)
    for body, kind in (
        (f"token={secret}&case=often&idx=0&verdict=pass".encode(), "application/json"),
        (f"token={secret}&case=%FF&idx=0&verdict=pass".encode(), None),
        (f"token={secret}&case=often&case=rarely&idx=0&verdict=pass".encode(), None),
        (b"x" * (64 * 1024 + 1), None),
    ):
        headers = {**origin, "Content-Type": kind or "application/x-www-form-urlencoded"}
        answer = httpx.post(url, content=body, headers=headers)
        assert answer.status_code == 400 and answer.text.count("\n") == 1, answer.text
    answer = httpx.post(server.url.rstrip("/") + f"/runs/{RUN}", data=form(), headers=origin)
    assert answer.status_code == 501
    assert answer.text == f"no POST at /runs/{RUN}: only a run's review queue takes one\n"
    assert Store(store).labels(RUN) == []


def test_a_server_on_another_address_takes_no_label(store: Path) -> None:
    with view(store, host="0.0.0.0") as server:
        port = server.url.rsplit(":", 1)[1].strip("/")
        url = f"http://127.0.0.1:{port}"
        page = httpx.get(url + QUEUE)
        secret = re.search(r'name="token" value="([^"]+)"', page.text)
        assert secret is not None
        fields = form(token=secret.group(1))
        answer = httpx.post(url + QUEUE, data=fields, headers={"Origin": url})
    assert answer.status_code == 403
    assert answer.text == "labels are taken only by a server bound to a loopback address\n"
    assert Store(store).labels(RUN) == []


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_a_store_that_cannot_be_written_is_a_page_that_says_so(tmp_path: Path) -> None:
    """The server runs with the store's folder mounted read-only (bubblewrap)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    skewed_store(folder / "results.db").db.conn.close()
    code = (
        "import sys; from replay import view\n"
        f"with view({str(folder / 'results.db')!r}) as s:\n"
        "    print(s.url, flush=True); sys.stdin.read()\n"
    )
    walls = ["bwrap", "--bind", "/", "/", "--ro-bind", str(folder), str(folder), "--"]
    with subprocess.Popen(
        [*walls, sys.executable, "-c", code],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdin is not None
            url = proc.stdout.readline().strip().rstrip("/")
            assert url.startswith("http://127.0.0.1:"), proc.stderr and proc.stderr.read()
            page = httpx.get(url + QUEUE)
            secret = re.search(r'name="token" value="([^"]+)"', page.text)
            assert secret is not None
            answer = httpx.post(
                url + QUEUE, data=form(token=secret.group(1)), headers={"Origin": url}
            )
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert answer.status_code == 503 and "Traceback" not in answer.text
    assert answer.headers["content-type"].startswith("text/html")
    message = re.search(r'<p class="note" id="unwritable">(.*?)</p>', answer.text)
    assert message, answer.text
    assert message.group(1).startswith(
        f"the label was not stored: the results store {folder / 'results.db'} cannot be written ("
    )
    assert "make the file and its folder writable" in message.group(1)
    assert f'<a href="{QUEUE.replace("&", "&amp;")}">back to the review queue</a>' in answer.text
    assert err == "" and Store(folder / "results.db").labels(RUN) == []


def test_sample_view_serves_the_queue_and_ctrl_c_exits_0(store: Path) -> None:
    binary = str(Path(sys.executable).with_name("replay"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [binary, "sample", RUN, "--store", str(store), "--pass", "3", "--fail", "4"]
    with subprocess.Popen(
        [*args, "--seed", "2", "--view"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            lines: list[str] = []
            while not lines or not lines[-1].startswith("review queue: "):
                line = proc.stdout.readline()
                assert line, lines
                lines.append(line)
            assert lines[-2].startswith(f"serving {store} at http://127.0.0.1:")
            assert lines[-3].startswith(f"label: replay label {RUN} CASE#INDEX ")
            url = lines[-1].removeprefix("review queue: ").strip()
            assert url.endswith(QUEUE)
            page = httpx.get(url)
            picked = sample(Store(store), RUN, passed=3, failed=4, seed=2)
            assert page.status_code == 200
            assert f'data-trial="{picked.failed[0].case_id}#{picked.failed[0].idx}"' in page.text
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0 and err == "", err
