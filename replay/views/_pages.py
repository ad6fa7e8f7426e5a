"""The pages ``replay view`` serves: the runs, one run, one trial, two trials, two runs.

Each address is an entry of ``ROUTES`` (its path segments, ``*`` for a name); a page
reads the store and never writes it (the review queue's forms are POSTed to the
server, ``_server``, which writes their labels). Names come from users: every one goes through
``_e`` in text and through ``_href`` (percent-encoded, a ``/`` in a case id included)
in a link. An address naming no run, case or trial is a 404 page listing what exists.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from recorder import ReplayError

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
from ._html import _e, _num, _page, _table
from ._review import numbers, queue_html
from ._run_page import page_html
from ._side import side_page, trial_page
from ._web import _CSS, Page, _a, _href, _known_run, _Missing, _nav, _ok, _run_names, _verdicts


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
    """One run's viewer page (``run_html``), each trial's row with a link to its own page.

    Any two trials can be picked there and set side by side (``side_page``).
    """
    _known_run(store, name)
    runs = store.runs()  # oldest first: compare with the run before, or else the one after,
    at = runs.index(name)  # of the same cases (a run of others is no comparison)
    ours = _case_ids(store, name)
    same = [r for r in runs if r != name and ours & _case_ids(store, r)]
    before = [r for r in same if runs.index(r) < at]
    after = [r for r in same if runs.index(r) > at]
    pair = (before[-1], name) if before else (name, after[0]) if after else None
    compare = ""
    if pair is not None:
        compare = f" &middot; compare {_a(_href('compare', *pair), ' → '.join(pair))}"
    top = (
        _CSS
        + _nav((f"run {name}", _href("runs", name)))
        + f"<p>{_a('#trials', 'every trial, with its page')}{compare} &middot; "
        + f"{_a(_href('runs', name, 'review'), 'review queue', id='to-review')}</p>"
    )
    page = page_html(
        store,
        name,
        page=lambda t: _href("runs", name, "trials", t.case_id, t.idx),
        pick=lambda t: _href(name, t.case_id, t.idx)[1:],
        start=_number(query.get("from", ["0"])[-1]),
        more=lambda start: f"{_href('runs', name)}?from={start}#trials",
    )
    start, body, end = page.partition("<body>")
    return Page(200, start + body + top + end)


def _case_ids(store: Store, run: str) -> set[str]:
    """The cases a run has trials of (as the store counts them: no trial is read)."""
    return {case.case_id for case in store.case_summaries(run)}


def _number(text: str) -> int:
    """A window's first case from the address (anything else: the first)."""
    return int(text) if text.isdecimal() and len(text) < 10 else 0


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

    trials_a: dict[str, list[TrialRecord]] = {}
    for t in store.trials(a):
        trials_a.setdefault(t.case_id, []).append(t)

    def side_link(c: CaseChange) -> str:
        """A's trial that passed (else its first) beside B's failing one."""
        theirs, ours = trials_a.get(c.case_id, []), _failing_trial(c, trials_b.get(c.case_id, []))
        was = next((t for t in theirs if t.passed), theirs[0] if theirs else None)
        if was is None or ours is None:
            return ""
        where = _href("side", a, c.case_id, was.idx, b, c.case_id, ours.idx)
        return " &middot; " + _a(where, "side by side", **{"class": "side-link"})

    newly = [c for c in changes if c.newly_failing]
    items = "".join(
        f"<li>{trial_link(c, c.case_id)}: pass^1 {_num(c.pass1_a)} &rarr; {_num(c.pass1_b)}"
        f" (p {_num(c.p_value)}, q {_num(c.q_value)}){side_link(c)}</li>"
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
    (("side", "*", "*", "*", "*", "*", "*"), side_page),
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
