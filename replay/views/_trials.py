"""A run page's list of trials: one sortable row each, filtered with the trials below it.

Each row links its trial further down the page (opened when followed); ``replay view``
adds a link to the trial's own page and a box to pick two trials to set side by side.
The filters (verdict, cause, case, text) hide a row and its trial together; the text is
searched in the trial's body, its unopened transcript included.
"""

from __future__ import annotations

from collections.abc import Callable

from ..graders import Verdict
from ..results import TrialRecord
from ._html import _badge, _e, _num

Link = Callable[[TrialRecord], str]
"""A trial's address on the viewer (its own page, and its id for the side-by-side view)."""

_RANK = {
    Verdict.FAIL: 0,
    Verdict.UNSUPPORTED: 1,
    Verdict.ERROR: 2,
    Verdict.UNKNOWN: 3,
    Verdict.PASS: 4,
}
"""A verdict's sort key, in the order the page shows a case's trials (``_run_page``)."""

_UNKNOWN = -1
"""The sort key of a figure a trial did not report: it sorts before every known one."""


def _select(label: str, key: str, choices: list[tuple[str, str]]) -> str:
    """A ``<select id="f-KEY">`` of (value, text) choices."""
    options = "".join(f'<option value="{_e(v)}">{_e(text)}</option>' for v, text in choices)
    return f'<label>{label} <select id="f-{key}">{options}</select></label> '


def filter_bar(trials: list[TrialRecord]) -> str:
    """The filters over every trial of the page: verdict, cause, case, and a text search."""
    causes = sorted({t.failure.value for t in trials if t.failure is not None})
    cases = sorted({t.case_id for t in trials})
    verdicts = [("", "every trial"), ("!pass", "all but passes")]
    verdicts += [(v.value, v.value) for v in _RANK]
    out = ['<p id="filter">', _select("verdict", "verdict", verdicts)]
    if causes:
        out.append(_select("cause", "cause", [("", "any cause"), *((c, c) for c in causes)]))
    if len(cases) > 1:
        out.append(_select("case", "case", [("", "every case"), *((c, c) for c in cases)]))
    out.append(
        '<input id="f-text" type="search" placeholder="search the trials (transcripts too)"'
        ' size="32"> <span id="f-count" class="meta"></span></p>'
    )
    return "".join(out)


def trials_table(
    trials: list[tuple[TrialRecord, str]], page: Link | None = None, pick: Link | None = None
) -> str:
    """Every trial as a row (each with the anchor of its ``<details>`` on the page).

    Sortable by any column (unknown steps, tokens or cost sort first); ``page`` links
    each trial's own page, ``pick`` gives each a box naming it for the side-by-side view.
    """
    heads = ["trial", "verdict", "cause", "steps", "tokens", "cost", "seconds"]
    heads = (["pick"] if pick else []) + heads + (["page"] if page else [])
    rows = []
    for trial, anchor in trials:
        usage, cause = trial.usage, trial.failure.value if trial.failure else ""
        given, taken = usage.input_tokens, usage.output_tokens
        tokens = None if given is None or taken is None else given + taken
        cells: list[tuple[object, str]] = [
            (
                f"{trial.case_id}#{trial.idx:06d}",
                f'<a class="to-trial" href="#{_e(anchor)}">{_e(trial.case_id)}#{trial.idx}</a>',
            ),
            (_RANK[trial.verdict], _badge(trial.verdict)),
            (cause, _e(cause or "-")),
            (_known(usage.steps), _e(usage.steps if usage.steps is not None else "-")),
            (_known(tokens), _e(tokens if tokens is not None else "-")),
            (_known(usage.cost), "-" if usage.cost is None else f"{usage.cost:.4f}"),
            (_known(usage.duration), _num(usage.duration)),
        ]
        if pick:
            named = _e(pick(trial))
            box = f'<input type="checkbox" class="pick" autocomplete="off" value="{named}">'
            cells.insert(0, ("", box))
        if page:
            cells.append(("", f'<a class="page" href="{_e(page(trial))}">page</a>'))
        tds = "".join(f'<td data-v="{_e(key)}">{html}</td>' for key, html in cells)
        rows.append(
            f'<tr data-anchor="{_e(anchor)}" data-verdict="{_e(trial.verdict.value)}" '
            f'data-cause="{_e(cause)}" data-case="{_e(trial.case_id)}">{tds}</tr>'
        )
    ths = "".join(f"<th>{_e(h)}</th>" for h in heads)
    side = (
        '<p id="side-pick" class="meta">pick two trials, then '
        '<button id="side-go" type="button" disabled>set them side by side</button></p>'
        if pick
        else ""
    )
    return (
        f'{side}<div class="scroll"><table class="sortable" id="trials"><thead><tr>{ths}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _known(value: float | None) -> float:
    return _UNKNOWN if value is None else value
