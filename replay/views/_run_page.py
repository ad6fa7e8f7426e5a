"""The HTML viewer's page of a run: its summary, failures by cause, cases, then each trial.

One self-contained page (no network, no templates), read from the store's records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from recorder import Cassette

from ..graders import Verdict
from ..results import (
    CaseReport,
    CauseGroup,
    PartialCredit,
    RunReport,
    Store,
    TrialRecord,
    build_report,
    worst_first,
)
from ._curves import curves_svg
from ._html import (
    _badge,
    _e,
    _inert,
    _json,
    _load,
    _num,
    _page,
    _span,
    _table,
    compare_html,
    transcript_html,
)
from ._trials import Link, filter_bar, trials_table

_EAGER = 50
"""How many failing trials a run's page shows open; every other trial's body stays inert
text (a ``<script type="text/html">``) until its ``<details>`` is first opened, so that a
page of 1,000 trials loads without building every transcript's DOM."""

_ORDER = {
    Verdict.FAIL: 0,
    Verdict.UNSUPPORTED: 1,
    Verdict.ERROR: 2,
    Verdict.UNKNOWN: 3,
    Verdict.PASS: 4,
}
"""The order a case's trials are shown in: those that did not pass first."""


def _shown(trial: TrialRecord) -> tuple[int, int]:
    """Where a trial is shown among its case's: those that did not pass first."""
    return (_ORDER[trial.verdict], trial.idx)


def _anchor(case: int, idx: int) -> str:
    """The id of the ``case``-th case section's trial ``idx`` (on its ``<summary>``)."""
    return f"case-{case}-trial-{idx}"


def _trial(trial: TrialRecord, view: str, compare: str, eager: bool, anchor: str) -> str:
    """One trial as ``<details>``: open with its body if ``eager``, else closed and inert."""
    usage = trial.usage
    given, taken = usage.input_tokens, usage.output_tokens
    known = given is not None and taken is not None
    tokens = f"{(given or 0) + (taken or 0)} tokens" if known else "tokens unknown"
    guards = ", ".join(guard.value for guard in trial.guards)
    hit = f' <span class="guard">limit hit: {_e(guards)}</span>' if guards else ""
    head = (
        f"{_e(trial.case_id)} trial {_e(trial.idx)} {_badge(trial.verdict)}{hit} "
        f'<span class="meta">{_e(usage.steps or 0)} steps, {tokens}, '
        f"{_num(usage.latency)} s</span>"
    )
    body = cause_html(trial) + grades_html(trial, '<span class="meta">-</span>')
    body += "".join(
        f'<div class="miss"><b>unsupported: nearest recorded call</b><pre>{_e(line)}</pre></div>'
        for g in trial.grades
        if g.grader == "replay"
        for line in g.evidence
    )
    body += compare + view
    cause = trial.failure.value if trial.failure else ""
    return (
        f'<details class="trial trial-{_e(trial.verdict.value)}" '
        f'data-verdict="{_e(trial.verdict.value)}" data-cause="{_e(cause)}" '
        f'data-case="{_e(trial.case_id)}"'
        f"{' open' if eager else ''}>"
        f'<summary id="{_e(anchor)}">{head}</summary>'
        f"{body if eager else _inert(body)}</details>"
    )


def cause_html(trial: TrialRecord) -> str:
    """Why an ``error`` trial is one when no grade is to blame (its cause), one line each."""
    if trial.cause is None:
        return ""
    return "".join(
        f'<div class="cause"><b>{_e(trial.cause.value)}</b>: {_e(line)}</div>'
        for line in trial.cause_detail
    )


def grades_html(trial: TrialRecord, no_evidence: str) -> str:
    """A trial's grades as a table (``no_evidence`` in a grade's empty evidence cell).

    A grade that records partial credit (a state grade of a case scored ``weighted``)
    says which assertions held and which failed, before its evidence.
    """
    rows = [
        [
            _e(g.grader),
            _badge(g.verdict),
            _num(g.score) + (" (veto)" if g.veto else ""),
            _credit(g.partial_credit)
            + ("<br>".join(_e(line) for line in g.evidence) or no_evidence),
        ]
        for g in trial.grades
    ]
    return _table(["grader", "verdict", "score", "evidence"], rows, "grades")


def _credit(credit: PartialCredit | None) -> str:
    if credit is None:
        return ""
    total = len(credit.held) + len(credit.failed)
    held = "".join(f"<li>{_e(a)}</li>" for a in credit.held)
    failed = "".join(f"<li>{_e(a)}</li>" for a in credit.failed)
    return (
        f'<div class="credit"><b>{len(credit.held)}/{total} assertions held</b>'
        + (f"<div>held:</div><ul>{held}</ul>" if held else "")
        + (f"<div>failed:</div><ul>{failed}</ul>" if failed else "")
        + "</div>"
    )


def _summary_extras(report: RunReport) -> str:
    """pass^k by direction (act, refrain, undeclared) if the run mixes them; partial credit."""
    out = []
    if len(report.directions) > 1:
        rows = []
        for name, cases, metrics, ks in report.by_direction():
            figures = "  ".join(
                f"k={k} {_num(metrics.pass_hat[k])} {_span(metrics.pass_hat_ci.get(k))}" for k in ks
            )
            rows.append([_e(name), str(cases), _e(figures or "no graded trial")])
        out.append(_table(["expects", "cases", "pass^k (interval)"], rows, "directions"))
    summaries = [("all", report.partial)] + [(c.case_id, c.partial) for c in report.cases]
    rows = [
        [
            _e(name),
            str(s.trials),
            *(f"{x:.2f}" for x in (s.mean, s.low, s.q1, s.median, s.q3, s.high)),
        ]
        for name, s in summaries
        if s is not None
    ]
    if rows:
        out.append("<h3>partial credit: the share of assertions held</h3>")
        heads = ["case", "trials", "mean", "min", "q1", "median", "q3", "max"]
        out.append(_table(heads, rows, "partial-credit"))
    return "".join(out)


def _case_table(cases: list[CaseReport]) -> str:
    """The sortable per-case table: each cell carries its sort key in ``data-v``.

    A pass^k column for the largest k a case reaches, when some case reaches k > 1 (none
    when no case has two graded trials: every one error or unsupported, or k = 1).
    """
    kmax = max((c.metrics.counts.n for c in cases), default=0)
    heads = [
        "case",
        "suite",
        "n",
        "c",
        "pass^1",
        "interval",
        *([f"pass^{kmax}"] if kmax > 1 else []),
    ]
    ths = "".join(f"<th>{_e(h)}</th>" for h in heads)
    rows = []
    for i, case in enumerate(cases):
        counts, hat = case.metrics.counts, case.metrics.pass_hat
        cells = [
            (case.case_id, f'<a href="#case-{i}">{_e(case.case_id)}</a>'),
            (case.suite, _e(case.suite)),
            (counts.n, str(counts.n)),
            (counts.c, str(counts.c)),
            (hat.get(1, -1), _num(hat.get(1))),
            (
                case.metrics.pass1_ci[0] if case.metrics.pass1_ci else -1,
                _span(case.metrics.pass1_ci),
            ),
            *([(hat.get(kmax, -1), _num(hat.get(kmax)))] if kmax > 1 else []),
            (
                sum(counts.verdicts.values()) - counts.c,
                " ".join(f"{_badge(v)} {n}" for v, n in counts.verdicts.items() if n),
            ),
        ]
        rows.append("".join(f'<td data-v="{_e(k)}">{c}</td>' for k, c in cells))
    return (
        f'<table class="sortable" id="cases"><thead><tr>{ths}<th>verdicts</th></tr></thead>'
        f"<tbody><tr>{'</tr><tr>'.join(rows)}</tr></tbody></table>"
    )


@dataclass
class _Pages:
    """What one run's page shares across its cases.

    Each distinct cassette is read and rendered once; ``eager`` counts down the failing
    trials that may still be shown open.
    """

    store: Store
    eager: int = _EAGER
    closed: int = 0
    """Failing trials shown closed, past the first ``_EAGER``."""
    cassettes: dict[str, Cassette | str] = field(default_factory=dict)
    transcripts: dict[str, str] = field(default_factory=dict)

    def load(self, path: str | None) -> Cassette | str:
        if not path:
            return _load(path, self.store)
        if path not in self.cassettes:
            self.cassettes[path] = _load(path, self.store)
        return self.cassettes[path]

    def view(self, path: str | None) -> str:
        key = path or ""
        if key not in self.transcripts:
            cassette = self.load(path)
            self.transcripts[key] = (
                transcript_html(cassette)
                if isinstance(cassette, Cassette)
                else f'<p class="note">{_e(cassette)}</p>'
            )
        return self.transcripts[key]


def _case_section(i: int, case: CaseReport, trials: list[TrialRecord], pages: _Pages) -> str:
    out = [f'<h2 id="case-{i}">case {_e(case.case_id)}</h2>']
    if case.failures:
        lines = "".join(f"<li>{n} &times; {_e(line)}</li>" for line, n in case.failures)
        out.append(f"<p>failed because:</p><ul>{lines}</ul>")
    if case.guards:
        fired = ", ".join(f"{_e(guard)} in {n}" for guard, n in case.guards.items())
        out.append(f'<p class="guard">limits hit: {fired} (error trials)</p>')
    trials = sorted(trials, key=_shown)
    passing = [(t.idx, pages.load(t.cassette)) for t in trials if t.passed]
    good = [(idx, c) for idx, c in passing if isinstance(c, Cassette)][:1]
    for t in trials:
        cassette, compare = pages.load(t.cassette), ""
        if isinstance(cassette, Cassette) and good and not t.passed:
            label = f"trial {t.idx} ({t.verdict.value})"
            compare = compare_html(cassette, good[0][1], label, f"trial {good[0][0]} (pass)")
        eager = not t.passed and pages.eager > 0
        pages.eager -= eager
        pages.closed += not t.passed and not eager
        view = pages.view(t.cassette)
        out.append(_trial(t, view, compare, eager, _anchor(i, t.idx)))
    return "".join(out)


CAUSE_LISTED = 10
"""Trials listed under each cause before the rest is folded."""


def _paging(
    report: RunReport,
    first: int,
    stop: int,
    cases: list[CaseReport],
    more: Callable[[int], str] | None,
) -> str:
    """Which cases' trials a paged page shows, and where the others are (else nothing)."""
    if (first, stop) == (0, len(cases)):
        return ""
    shown = sum(sum(c.metrics.counts.verdicts.values()) for c in cases[first:stop])
    text = (
        f"{shown} of the run's {sum(report.suite.totals.values())} trials: those of cases "
        f"{first + 1} to "
        f"{stop} of {len(cases)}, worst first"
    )
    if more is None:
        where = (
            f"; every case's trials: <code>replay view --store STORE</code> (run "
            f"{_e(report.name)}), or <code>replay report {_e(report.name)} --json</code>"
        )
    else:
        step = stop - first
        links = [("previous cases", max(0, first - step))] if first else []
        links += [("next cases", stop)] if stop < len(cases) else []
        where = "".join(f' &middot; <a href="{_e(more(at))}">{label}</a>' for label, at in links)
    return f'<p class="meta" id="paged">{text}{where}</p>'


def _causes(groups: list[CauseGroup], sections: dict[str, int], paged: bool = False) -> str:
    """The trials that did not pass by primary cause: counts, then each cause's trials linked.

    On a paged page (a large run), a trial whose case is on another page is named, not
    linked, and each cause lists ``CAUSE_LISTED`` trials only.
    """
    groups = [g for g in groups if g.count]
    if not groups:
        return '<h2>failures by cause</h2><p class="meta" id="causes">no trial failed</p>'
    rows = [[_e(g.name), str(g.count)] for g in groups]
    out = ["<h2>failures by cause</h2>", _table(["cause", "trials"], rows, "causes")]
    for group in groups:
        listed = group.trials[:CAUSE_LISTED] if paged else group.trials
        items = [
            f'<li><a class="to-trial" href="#{_anchor(sections[t.case_id], t.idx)}">'
            f"{_e(t.case_id)}#{t.idx}</a> {_e(t.detail)}</li>"
            if t.case_id in sections
            else f"<li>{_e(t.case_id)}#{t.idx} {_e(t.detail)}</li>"
            for t in listed
        ]
        shown, rest = items[:CAUSE_LISTED], items[CAUSE_LISTED:]
        more = (  # (a long list folded: the first screen is the causes, not one of them)
            f"<details><summary>{len(rest)} more</summary><ul>{''.join(rest)}</ul></details>"
            if rest
            else f'<p class="meta">{group.count - len(listed)} more</p>'
            if len(listed) < group.count
            else ""
        )
        out.append(
            f'<div class="cause-group" data-cause="{_e(group.name)}">'
            f"<h3>{_e(group.name)} ({group.count})</h3><ul>{''.join(shown)}</ul>{more}</div>"
        )
    return f'<div id="causes">{"".join(out)}</div>'


def run_html(store: Store, name: str, *, confidence: float = 0.95) -> str:
    """The whole page for a stored run (``replay report RUN --html``), intervals at ``confidence``.

    Its summary, the trials that did not pass by primary cause (each linked to the trial),
    the per-case table worst first, every trial as a sortable row, then each case's trials
    (the rows and the trials filtered together: by verdict, cause, case and text).

    Raises:
        ConfigError: No such run in the store.
    """
    return page_html(store, name, confidence=confidence)


PAGE_TRIALS = 2_000
"""The most trials a run's page shows (rows and sections): a larger run's page shows the
trials of its worst cases up to this many (at least one case's), and says where the rest
are (``replay view`` pages them by case), so that its first page stays a few MB."""


def _window(cases: list[CaseReport], start: int) -> tuple[int, int]:
    """The cases ``[start, stop)`` whose trials a page shows: ``PAGE_TRIALS`` at most."""
    start = max(0, min(start, len(cases) - 1)) if cases else 0
    stop, shown = start, 0
    while stop < len(cases):
        counts = cases[stop].metrics.counts
        size = sum(counts.verdicts.values())
        if stop > start and shown + size > PAGE_TRIALS:
            break
        shown += size
        stop += 1
    return start, stop


def page_html(
    store: Store,
    name: str,
    *,
    confidence: float = 0.95,
    page: Link | None = None,
    pick: Link | None = None,
    start: int = 0,
    more: Callable[[int], str] | None = None,
) -> str:
    """``run_html``; on ``replay view``, each trial's row links its ``page`` and has a ``pick``.

    A run of more than ``PAGE_TRIALS`` trials shows those of the cases from the ``start``-th
    (worst first) up to that many; ``more(start)`` is the link to another window of cases
    (none: the page names the ``replay view`` command that pages them).
    """
    report = build_report(store, name, confidence=confidence)
    suite = report.suite
    graded = len(report.cases) - len(suite.excluded)
    ks = [k for k in sorted(suite.pass_hat) if suite.cases_used.get(k, 0) == graded]
    totals = ", ".join(f"{_e(v)} {n}" for v, n in suite.totals.items() if n) or "no trials"
    if ks:
        top = ks[-1]
        totals += f"; pass^1 {_num(suite.pass_hat[1])} {_span(suite.pass_hat_ci.get(1))}, "
        totals += f"pass^{top} {_num(suite.pass_hat[top])} {_span(suite.pass_hat_ci.get(top))}, "
        totals += f"pass@{top} {_num(suite.pass_at[top])} {_span(suite.pass_at_ci.get(top))}"
        if suite.pass1_se is not None and suite.pass1_se_naive is not None:
            totals += (
                f'</p><p class="meta" id="intervals">{suite.confidence:.0%} intervals: '
                f"{_e(suite.method)}; pass^1 standard error {suite.pass1_se:.3f} clustered by "
                f"case ({suite.pass1_se_naive:.3f} if every trial were independent)"
            )
    pins = [[_e(k), _e(_json(v))] for k, v in report.pins.items() if v not in (None, "", [], {})]
    folded = (  # (what the run was pinned to: there when asked, not the first screen)
        f'<details id="pins-fold"><summary>pins ({len(pins)})</summary>'
        f"{_table(['pin', 'value'], pins, 'pins')}</details>"
    )
    cases = worst_first(report.cases)
    first, stop = _window(cases, start)
    sections = {c.case_id: i for i, c in enumerate(cases) if first <= i < stop}
    paged = (first, stop) != (0, len(cases))
    out = [
        f'<h1>run {_e(name)}</h1><h2>summary</h2><p id="totals"><b>trials:</b> {totals}</p>',
        _causes(report.causes, sections, paged),  # failures and their causes first
        f'<div class="flex">{folded}<div id="curves">',
        curves_svg(
            {k: suite.pass_at[k] for k in ks},
            {k: suite.pass_hat[k] for k in ks},
            {"pass@k": suite.pass_at_ci, "pass^k": suite.pass_hat_ci},
        ),
        f"</div></div>{_summary_extras(report)}",
        f"<h2>cases</h2>{_case_table(cases)}",
    ]
    trials: dict[str, list[TrialRecord]] = {}
    if paged:  # (the window's cases' trials alone are read: a large run's are many)
        for case_id in sections:
            trials[case_id] = store.trials(name, case=case_id)
    else:
        for trial in report.trials:
            trials.setdefault(trial.case_id, []).append(trial)
    pages = _Pages(store)
    shown = [
        (t, _anchor(i, t.idx))
        for i, c in enumerate(cases[first:stop], first)
        for t in sorted(trials.get(c.case_id, []), key=_shown)
    ]
    listed = report.trials if not paged else [t for t, _ in shown]
    out.append(f"<h2>trials</h2>{_paging(report, first, stop, cases, more)}{filter_bar(listed)}")
    out.append(trials_table(shown, page, pick))
    for i, c in enumerate(cases[first:stop], first):
        out.append(_case_section(i, c, trials.get(c.case_id, []), pages))
    if pages.closed:
        out.insert(
            1,
            f'<p class="meta">{pages.closed} more trials that did not pass start closed: '
            f"only the first {_EAGER} start open</p>",
        )
    return _page(f"run {name}", "".join(out))
