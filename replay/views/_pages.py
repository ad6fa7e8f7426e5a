"""The pages ``replay view`` serves: the run list, one run, one trial, two runs compared.

Each address is an entry of ``ROUTES`` (its path segments, ``*`` for a name); a page
reads the store and never writes it (the review queue's forms are POSTed to the
server, ``_server``, which writes their labels). Names come from users: every one goes through
``_e`` in text and through ``_href`` (percent-encoded, a ``/`` in a case id included)
in a link. An address naming no run, case or trial is a 404 page listing what exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

from recorder import Cassette, ReplayError

from ..graders import Verdict
from ..results import (
    CaseChange,
    CaseCounts,
    RunComparison,
    Store,
    TrialRecord,
    compare_runs,
    sample,
    suite_metrics,
)
from ._html import _badge, _e, _load, _num, _page, _table, transcript_html
from ._review import numbers, queue_html
from ._run_page import cause_html, grades_html, run_html

_WORST = {
    Verdict.FAIL: 0,
    Verdict.ERROR: 1,
    Verdict.UNSUPPORTED: 2,
    Verdict.UNKNOWN: 3,
    Verdict.PASS: 4,
}
"""Trials that did not pass come first in a run's list of trial pages."""

_CSS = (
    "<style>nav{margin:.2em 0 1em;color:#666}nav a{margin-right:.4em}"
    "tr.newly td{background:#fdecea}form#pick{margin:.8em 0}form#pick label{margin-right:1em}"
    "</style>"
)


@dataclass(frozen=True, slots=True)
class Page:
    """What the server answers: an HTTP status and an HTML page, or a redirect."""

    status: int
    body: str
    location: str | None = None
    type: str = "text/html; charset=utf-8"


class _Missing(ReplayError):
    """Nothing at this address: what was asked for, and links to what exists."""

    def __init__(self, message: str, *, exists: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.exists = exists


def _href(*segments: object) -> str:
    """An address from path segments, each percent-encoded whole."""
    return "/" + "/".join(quote(str(s), safe="") for s in segments)


def _a(href: str, text: object, **attrs: str) -> str:
    extra = "".join(f' {k}="{_e(v)}"' for k, v in attrs.items())
    return f'<a href="{_e(href)}"{extra}>{_e(text)}</a>'


def _nav(*crumbs: tuple[str, str]) -> str:
    links = " &rsaquo; ".join(_a(href, text) for text, href in (("runs", "/"), *crumbs))
    return f"<nav>{links}</nav>"


def _verdicts(counts: Mapping[Verdict, int] | Mapping[str, int]) -> str:
    return " ".join(f"{_badge(v)} {n}" for v, n in counts.items() if n) or "-"


def _ok(title: str, body: str) -> Page:
    return Page(200, _page(title, _CSS + body))


def _run_names(store: Store) -> list[str]:
    return list(reversed(store.runs()))


def _known_run(store: Store, name: str) -> None:
    if store.run(name) is None:
        raise _Missing(
            f"no run {name!r} in {store.path}",
            exists=[(f"run {r}", _href("runs", r)) for r in _run_names(store)],
        )


def _suite_pass1(trials: list[TrialRecord]) -> float | None:
    by_case: dict[str, list[Verdict]] = {}
    for t in trials:
        by_case.setdefault(t.case_id, []).append(t.verdict)
    return suite_metrics(CaseCounts.from_trials(c, v) for c, v in by_case.items()).pass_hat.get(1)


def runs_page(store: Store, query: dict[str, list[str]]) -> Page:
    """Every run, newest first, and a form to compare two of them."""
    runs = list(reversed(store.run_summaries()))
    trials = {r.name: store.trials(r.name) for r in runs}
    cases = {name: {t.case_id for t in rows} for name, rows in trials.items()}
    rows = []
    for i, r in enumerate(runs):
        name = r.name
        older = next((o.name for o in runs[i + 1 :] if cases[o.name] & cases[name]), None)
        rows.append(
            [
                _a(_href("runs", name), name, **{"class": "run"}),
                _e(r.mode or "-"),
                f'<span class="when">{_e(r.started or "-")}</span>',
                f'<span class="when">{_e(r.finished or "not finished")}</span>',
                _e(r.trials),
                _verdicts(r.verdicts),
                _num(_suite_pass1(trials[name])),
                _a(_href("compare", older, name), f"{older} → {name}") if older else "-",
            ]
        )
    if not runs:
        return _ok("runs", f"<h1>runs</h1><p>no run in {_e(store.path)}: `replay run` first</p>")
    head = ["run", "mode", "created", "finished", "trials", "verdicts", "suite pass^1"]
    table = _table([*head, "compare with the run before (of the same cases)"], rows, "runs")

    def options(selected: str | None) -> str:
        return "".join(
            f'<option value="{_e(r.name)}"{" selected" if r.name == selected else ""}>'
            f"{_e(r.name)}</option>"
            for r in runs
        )

    a = runs[1].name if len(runs) > 1 else runs[0].name
    form = (
        '<form id="pick" method="get" action="/compare"><b>compare</b> '
        f'<label>A (before) <select name="a">{options(a)}</select></label>'
        f'<label>B (after) <select name="b">{options(runs[0].name)}</select></label>'
        '<button type="submit">compare</button></form>'
    )
    body = f"<h1>runs in {_e(store.path)}</h1>{form}{table}"
    return _ok("runs", body)


def run_page(store: Store, query: dict[str, list[str]], name: str) -> Page:
    """One run's viewer page (``run_html``), with links to its trials' own pages."""
    _known_run(store, name)
    trials = sorted(store.trials(name), key=lambda t: (_WORST[t.verdict], t.case_id, t.idx))
    rows = [
        [
            _e(t.case_id),
            _e(t.idx),
            _badge(t.verdict),
            _a(_href("runs", name, "trials", t.case_id, t.idx), "transcript"),
        ]
        for t in trials
    ]
    runs = store.runs()  # oldest first: compare with the run before, or else the one after,
    at = runs.index(name)  # of the same cases (a run of others is no comparison)
    ours = {t.case_id for t in trials}
    same = [r for r in runs if r != name and ours & {t.case_id for t in store.trials(r)}]
    before = [r for r in same if runs.index(r) < at]
    after = [r for r in same if runs.index(r) > at]
    pair = (before[-1], name) if before else (name, after[0]) if after else None
    compare = ""
    if pair is not None:
        compare = f" &middot; compare {_a(_href('compare', *pair), ' → '.join(pair))}"
    top = (
        _CSS
        + _nav((f"run {name}", _href("runs", name)))
        + f"<p>{_a('#trial-pages', 'one page per trial')}{compare} &middot; "
        + f"{_a(_href('runs', name, 'review'), 'review queue', id='to-review')}</p>"
    )
    bottom = '<h2 id="trial-pages">trial pages</h2>' + _table(
        ["case", "trial", "verdict", "page"], rows, "trial-pages"
    )
    page = run_html(store, name)
    start, body, end = page.partition("<body>")
    if not body:  # the viewer's page changed shape: keep it whole, links after it
        return Page(200, top + page + bottom)
    inner, script, tail = end.rpartition("<script>")
    if not script:
        return Page(200, start + body + top + end + bottom)
    return Page(200, start + body + top + inner + bottom + script + tail)


def trial_page(store: Store, query: dict[str, list[str]], name: str, case: str, idx: str) -> Page:
    """One trial: its verdict, cause and grades, then its cassette's transcript."""
    _known_run(store, name)
    by_case: dict[str, list[TrialRecord]] = {}
    for t in store.trials(name):
        by_case.setdefault(t.case_id, []).append(t)
    if case not in by_case:
        raise _Missing(
            f"run {name!r} has no case {case!r}",
            exists=[
                (f"case {c}", _href("runs", name, "trials", c, rows[0].idx))
                for c, rows in by_case.items()
            ],
        )
    row = next((t for t in by_case[case] if str(t.idx) == idx), None)
    if row is None:
        raise _Missing(
            f"case {case!r} of run {name!r} has no trial {idx!r}",
            exists=[
                (f"trial {t.idx} ({t.verdict.value})", _href("runs", name, "trials", case, t.idx))
                for t in by_case[case]
            ],
        )
    siblings = " ".join(
        _a(_href("runs", name, "trials", case, t.idx), f"{t.idx} ({t.verdict.value})")
        if t is not row
        else f"<b>{_e(t.idx)}</b>"
        for t in by_case[case]
    )
    cassette = _load(row.cassette, store)
    transcript = (
        transcript_html(cassette)
        if isinstance(cassette, Cassette)
        else f'<p class="note" id="no-transcript"><b>no transcript</b>: {_e(cassette)}</p>'
    )
    body = (
        _nav(
            (f"run {name}", _href("runs", name)),
            (f"{case} trial {idx}", _href("runs", name, "trials", case, idx)),
        )
        + f"<h1>run {_e(name)}: case {_e(case)}, trial {_e(row.idx)} "
        + f"{_badge(row.verdict)}</h1><p>trials of this case in the run "
        + f"({len(by_case[case])}): {siblings}</p>{cause_html(row)}"
        + grades_html(row, "-")
        + f'<h2>transcript</h2><div id="transcript">{transcript}</div>'
    )
    return _ok(f"run {name}: {case} trial {idx}", body)


def _failing_trial(change: CaseChange, trials: list[TrialRecord]) -> TrialRecord | None:
    """B's trial behind ``change.failing_cassette`` (else its first that did not pass)."""
    failing = [t for t in trials if not t.passed]
    chosen = [t for t in failing if t.cassette == change.failing_cassette]
    return next(iter(chosen or failing), None)


def compare_page(store: Store, query: dict[str, list[str]], a: str, b: str) -> Page:
    """Two runs paired by case (``compare_runs``): the suite's change, then each case.

    Newly failing cases come first, linked to a failing trial.
    """
    _known_run(store, a)
    _known_run(store, b)
    comparison = compare_runs(store, a, b)
    changes = list(comparison.changes)
    trials_b: dict[str, list[TrialRecord]] = {}
    for t in store.trials(b):
        trials_b.setdefault(t.case_id, []).append(t)
    changes.sort(key=lambda c: (not c.newly_failing, c.change is None, c.change or 0.0, c.case_id))

    def trial_link(c: CaseChange, text: str) -> str:
        t = _failing_trial(c, trials_b.get(c.case_id, []))
        if t is None:
            return _e(text)
        return _a(_href("runs", b, "trials", c.case_id, t.idx), text, **{"class": "failing"})

    newly = [c for c in changes if c.newly_failing]
    items = "".join(
        f"<li>{trial_link(c, c.case_id)}: pass^1 {_num(c.pass1_a)} &rarr; {_num(c.pass1_b)}"
        f" (p {_num(c.p_value)}, q {_num(c.q_value)})</li>"
        for c in newly
    )
    listed = f'<ol id="newly-failing">{items}</ol>' if newly else "<p>no case newly fails</p>"
    rows = []
    for c in changes:
        mark = f" {c.direction}" if c.direction else ""
        k = f"k={c.pass_k[0]}: {_num(c.pass_k[1])} &rarr; {_num(c.pass_k[2])}" if c.pass_k else "-"
        rows.append(
            (
                c.newly_failing,
                [
                    trial_link(c, c.case_id) if c.newly_failing or c.b.c < c.b.n else _e(c.case_id),
                    _num(c.pass1_a),
                    _num(c.pass1_b),
                    ("-" if c.change is None else f"{c.change:+.3f}") + mark,
                    _num(c.p_value),
                    _num(c.q_value),
                    k,
                    _verdicts(dict(c.a.verdicts)),
                    _verdicts(dict(c.b.verdicts)),
                    "newly failing" if c.newly_failing else "",
                ],
            )
        )
    head = ["case", f"{a} pass^1", f"{b} pass^1", "change", "p", "q", "pass^k A → B"]
    ths = "".join(f"<th>{_e(h)}</th>" for h in [*head, "A verdicts", "B verdicts", ""])
    trs = "".join(
        ("<tr class=newly><td>" if is_new else "<tr><td>") + "</td><td>".join(cells) + "</td></tr>"
        for is_new, cells in rows
    )
    body = (
        _nav((f"{a} → {b}", _href("compare", a, b)))
        + f"<h1>{_a(_href('runs', a), a)} &rarr; {_a(_href('runs', b), b)}</h1>"
        + _suite_change(comparison)
        + f"<h2>newly failing in {_e(b)}</h2>{listed}<h2>per case</h2>"
        + f'<table id="changes"><thead><tr>{ths}</tr></thead><tbody>{trs}</tbody></table>'
        + '<p class="meta">change: B minus A; p: Fisher&#39;s exact test of the case&#39;s '
        + "pass rates; q: p adjusted for testing every case (Benjamini-Hochberg); worse or "
        + f"better when q &lt;= {comparison.fdr}</p>"
    )
    return _ok(f"{a} → {b}", body)


def _cases(n: int) -> str:
    return f"{n} case" if n == 1 else f"{n} cases"


def _suite_change(comparison: RunComparison) -> str:
    """The suite's paired figures: each in both runs, the change with its interval."""
    level, power = f"{comparison.confidence:.0%}", f"{comparison.power:.0%}"
    items = "".join(
        f"<li>{_e(f.name)} {f.a:.3f} &rarr; {f.b:.3f}: change {f.change:+.3f}, {level} interval "
        f"[{f.interval.low:+.3f}, {f.interval.high:+.3f}] over {_cases(f.cases)} paired; the "
        f"smallest change these runs detect ({power} power): {f.detectable:.3f}</li>"
        for f in comparison.figures
    )
    unpaired = [
        f"in {_e(name)} only: {_e(', '.join(only))}"
        for name, only in ((comparison.a, comparison.only_a), (comparison.b, comparison.only_b))
        if only
    ]
    notes = f'<p class="meta">not paired: {"; ".join(unpaired)}</p>' if unpaired else ""
    if not items:
        return '<p class="meta">fewer than two cases graded in both runs: no suite change</p>'
    return f'<h2>suite, paired by case</h2><ul id="suite-change">{items}</ul>{notes}'


def review_page(store: Store, query: dict[str, list[str]], name: str, *, token: str = "") -> Page:
    """The review queue (``_review``): the trials ``replay sample`` picks, a form for each.

    ``token`` is the server's, for its forms to send back; a query that is no numbers is
    a 400 of one line.
    """
    _known_run(store, name)
    try:
        passed, failed, seed = numbers(query)
    except ValueError as exc:
        return Page(400, f"{exc}\n", type="text/plain; charset=utf-8")
    picked = sample(store, name, passed=passed, failed=failed, seed=seed)
    nav = _nav((f"run {name}", _href("runs", name)), ("review", _href("runs", name, "review")))
    return _ok(f"review run {name}", nav + queue_html(store, picked, passed, failed, token))


def pick_page(store: Store, query: dict[str, list[str]]) -> Page:
    """The run list's form, ``/compare?a=A&b=B``: sent on to ``/compare/A/B``."""
    a, b = (query.get(key, [""])[0] for key in ("a", "b"))
    if not a or not b:
        raise _Missing("compare which runs? pick A and B on the run list", exists=[])
    return Page(303, "", location=_href("compare", a, b))


Route = Callable[..., Page]
ROUTES: list[tuple[tuple[str, ...], Route]] = [
    ((), runs_page),
    (("runs", "*"), run_page),
    (("runs", "*", "review"), review_page),
    (("runs", "*", "trials", "*", "*"), trial_page),
    (("compare",), pick_page),
    (("compare", "*", "*"), compare_page),
]
"""Each address: its path segments (``*`` matches any one, percent-decoded) and its page."""


def _route(segments: list[str]) -> tuple[Route, list[str]] | None:
    for pattern, page in ROUTES:
        if len(pattern) == len(segments) and all(
            p in ("*", s) for p, s in zip(pattern, segments, strict=True)
        ):
            return page, [s for p, s in zip(pattern, segments, strict=True) if p == "*"]
    return None


def _missing(message: str, exists: list[tuple[str, str]]) -> Page:
    links = "".join(f"<li>{_a(href, text)}</li>" for text, href in exists)
    known = f'<p>what there is:</p><ul id="exists">{links}</ul>' if exists else ""
    body = f'{_nav()}<h1>not found</h1><p id="missing">{_e(message)}</p>{known}'
    return Page(404, _page("not found", _CSS + body))


def render(store_path: Path, target: str, *, token: str = "") -> Page:
    """The page at ``target`` (a request's path and query) of the store at ``store_path``.

    The store is opened read-only for this request alone (a connection is one thread's);
    a store that cannot be opened any more is a page saying why. ``token``: the server's
    own, which the review queue's forms carry back.
    """
    parts = urlsplit(target)
    segments = [unquote(s) for s in parts.path.split("/") if s]
    try:
        store = Store(store_path, read_only=True)
    except ReplayError as exc:
        return Page(503, _page("store unavailable", f'<p class="note">{_e(exc)}</p>'))
    try:
        found = _route(segments)
        if found is None:
            exists = [("the run list", "/")]
            exists += [(f"run {r}", _href("runs", r)) for r in _run_names(store)]
            return _missing(f"no page at {parts.path}", exists)
        page, params = found
        extra = {"token": token} if page is review_page else {}
        try:
            return page(store, parse_qs(parts.query), *params, **extra)
        except _Missing as missing:
            return _missing(str(missing), missing.exists)
    finally:
        store.db.conn.close()
