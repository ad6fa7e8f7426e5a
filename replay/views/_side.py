"""The trial pages of ``replay view``: one trial, and any two trials side by side.

Side by side, the two trials (of one run or of two, of one case or of two) are aligned
call by call: each of the agent's tool calls beside the other's, with the rows each call
changed in its world, the first divergence marked; then the world each left (its state
diff) row by row, their answers, and the two transcripts in two columns.
"""

from __future__ import annotations

from recorder import Cassette, ToolEvent, WorldDelta

from ..results import Store, TrialRecord, diff_cassettes, step_numbers
from ._html import _SIGNS, _badge, _e, _load, _pre, transcript_html
from ._run_page import cause_html, grades_html
from ._transcript import delta_lines
from ._web import Page, _a, _href, _known_run, _Missing, _nav, _ok

_WIDE = "<style>body{max-width:1800px}</style>"
"""Two columns need the width of the window."""


def _trials(store: Store, name: str, case: str) -> list[TrialRecord]:
    """The run's trials of ``case``, or a 404 listing the run's cases."""
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
    return by_case[case]


def _trial(trials: list[TrialRecord], name: str, case: str, idx: str) -> TrialRecord:
    """Trial ``idx`` of ``trials``, or a 404 listing the case's trials."""
    row = next((t for t in trials if str(t.idx) == idx), None)
    if row is None:
        raise _Missing(
            f"case {case!r} of run {name!r} has no trial {idx!r}",
            exists=[
                (f"trial {t.idx} ({t.verdict.value})", _href("runs", name, "trials", case, t.idx))
                for t in trials
            ],
        )
    return row


def _transcript(cassette: Cassette | str) -> str:
    if isinstance(cassette, Cassette):
        return transcript_html(cassette)
    return f'<p class="note" id="no-transcript"><b>no transcript</b>: {_e(cassette)}</p>'


BESIDE_HERE, BESIDE_RUNS = 10, 5
"""Trials offered to set beside one: of its case in its run (those of another verdict
first), and of its case in the newest other runs."""


def _beside(store: Store, name: str, case: str, row: TrialRecord, trials: list[TrialRecord]) -> str:
    """Links setting this trial beside another: its case's other trials, here and in other runs."""
    others = sorted(
        (t for t in trials if t is not row), key=lambda t: (t.verdict == row.verdict, t.idx)
    )
    here = [(name, t) for t in others[:BESIDE_HERE]]
    runs = 0
    for other in (r for r in reversed(store.runs()) if r != name):  # newest first
        theirs = store.trials(other, case=case)
        same = [t for t in theirs if t.idx == row.idx] or theirs
        here += [(other, same[0])] if same else []
        runs += bool(same)
        if runs == BESIDE_RUNS:
            break
    links = [
        _a(
            _href("side", name, case, row.idx, run, case, t.idx),
            f"{'' if run == name else run + ': '}trial {t.idx} ({t.verdict.value})",
            **{"class": "beside"},
        )
        for run, t in here
    ]
    more = len(others) - BESIDE_HERE
    rest = f" (and {more} more of this run: pick any two on its page)" if more > 0 else ""
    return f'<p id="beside">side by side with: {", ".join(links)}{rest}</p>' if links else ""


def trial_page(store: Store, query: dict[str, list[str]], name: str, case: str, idx: str) -> Page:
    """One trial: its verdict, cause and grades, then its cassette's transcript."""
    trials = _trials(store, name, case)
    row = _trial(trials, name, case, idx)
    siblings = " ".join(
        _a(_href("runs", name, "trials", case, t.idx), f"{t.idx} ({t.verdict.value})")
        if t is not row
        else f"<b>{_e(t.idx)}</b>"
        for t in trials
    )
    transcript = _transcript(_load(row.cassette, store))
    body = (
        _nav(
            (f"run {name}", _href("runs", name)),
            (f"{case} trial {idx}", _href("runs", name, "trials", case, idx)),
        )
        + f"<h1>run {_e(name)}: case {_e(case)}, trial {_e(row.idx)} "
        + f"{_badge(row.verdict)}</h1><p>trials of this case in the run "
        + f"({len(trials)}): {siblings}</p>{_beside(store, name, case, row, trials)}"
        + cause_html(row)
        + grades_html(row, "-")
        + f'<h2>transcript</h2><div id="transcript">{transcript}</div>'
    )
    return _ok(f"run {name}: {case} trial {idx}", body)


def _changes(delta: WorldDelta | None) -> str:
    lines = delta_lines(delta or {})
    return "<br>".join(_signed(sign, text) for sign, text in lines)


def _signed(sign: str, text: str) -> str:
    """A changed row's line, coloured by its change (inserted, deleted, updated)."""
    return f'<span class="s-{_SIGNS[sign]}">{_e(sign)} {_e(text)}</span>'


def _call(pair: tuple[ToolEvent, int] | None) -> list[str]:
    """A call's two cells: the call with its step, and the rows it changed."""
    if pair is None:
        return ["&mdash;", ""]
    event, step = pair
    args = ", ".join(f"{k}={v!r}" for k, v in event.args.items())
    failed = f' <span class="note">raised {_e(event.error.type)}</span>' if event.error else ""
    call = f'<span class="meta">step {step}</span> {_e(f"{event.name}({args})")}{failed}'
    return [call, _changes(event.delta)]


def _calls(a: Cassette, b: Cassette, mark: int) -> str:
    """The agent's tool calls aligned by their order, each beside the rows it changed."""
    calls_a, calls_b = step_numbers(a), step_numbers(b)
    rows = []
    for i in range(1, max(len(calls_a), len(calls_b)) + 1):
        cells = [str(i), *_call(calls_a[i - 1] if i <= len(calls_a) else None)]
        cells += _call(calls_b[i - 1] if i <= len(calls_b) else None)
        tds = "".join(f"<td>{c}</td>" for c in cells)
        rows.append(f"<tr{' class=diverge' if i == mark else ''}>{tds}</tr>")
    heads = ["#", "A called", "A's world changed", "B called", "B's world changed"]
    ths = "".join(f"<th>{h}</th>" for h in heads)
    return (
        f'<div class="scroll"><table id="aligned"><thead><tr>{ths}</tr></thead>'
        f"<tbody>{''.join(rows) or '<tr><td colspan=5>neither called a tool</td></tr>'}"
        "</tbody></table></div>"
    )


def _rows(delta: WorldDelta | None) -> dict[tuple[str, str], tuple[str, str]]:
    """Each changed row of a state diff by (table, key): its sign and its line."""
    out = {}
    for table, changes in (delta or {}).items():
        for change in changes:
            key = change.key[0] if len(change.key) == 1 else tuple(change.key)
            for sign, text in delta_lines({table: [change]}):
                out[(table, f"{table}[{key!r}]")] = (sign, text)
    return out


def _states(a: Cassette, b: Cassette) -> str:
    """The worlds the two trials left, row by row: a row changed in one only, or differently."""
    rows_a, rows_b = _rows(a.summary().state_diff), _rows(b.summary().state_diff)
    rows = []
    for key in sorted(rows_a.keys() | rows_b.keys()):
        x, y = rows_a.get(key), rows_b.get(key)
        cells = [_signed(*side) if side else "-" for side in (x, y)]
        same = x == y
        rows.append(
            f"<tr{'' if same else ' class=diverge'}><td>{_e(key[1])}</td>"
            f"<td>{cells[0]}</td><td>{cells[1]}</td><td>{'same' if same else 'differs'}</td></tr>"
        )
    if not rows:
        return '<p class="meta" id="states">neither changed its world</p>'
    return (
        '<div class="scroll"><table id="states"><thead><tr><th>row</th><th>A left</th>'
        f"<th>B left</th><th></th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def side_page(
    store: Store,
    query: dict[str, list[str]],
    run_a: str,
    case_a: str,
    idx_a: str,
    run_b: str,
    case_b: str,
    idx_b: str,
) -> Page:
    """Two trials side by side: first divergence, calls and world changes aligned, transcripts."""
    a = _trial(_trials(store, run_a, case_a), run_a, case_a, idx_a)
    b = _trial(_trials(store, run_b, case_b), run_b, case_b, idx_b)
    sides = []
    for label, run, t in (("A", run_a, a), ("B", run_b, b)):
        link = _a(_href("runs", run, "trials", t.case_id, t.idx), f"{t.case_id} trial {t.idx}")
        sides.append(
            f"<div><h2>{label}: run {_e(run)}, {link} {_badge(t.verdict)}</h2>"
            f"{cause_html(t)}{grades_html(t, '-')}</div>"
        )
    cassette_a, cassette_b = _load(a.cassette, store), _load(b.cassette, store)
    if isinstance(cassette_a, Cassette) and isinstance(cassette_b, Cassette):
        diff = diff_cassettes(cassette_a, cassette_b)
        what = diff.divergence.describe() if diff.divergence else "the same tool calls"
        mark = diff.divergence.call if diff.divergence else 0
        aligned = (
            f'<p id="divergence"><b>first divergence:</b> {_e(what)}</p>'
            f"<h2>tool calls, aligned</h2>{_calls(cassette_a, cassette_b, mark)}"
            f"<h2>the world each left</h2>{_states(cassette_a, cassette_b)}"
        )
        if diff.answers:
            answers = "".join(
                f"<div>{_pre(f'{s} answered', x or '(none)')}</div>"
                for s, x in zip("AB", diff.answers, strict=True)
            )
            aligned += f'<h2>answers</h2><div class="side" id="answers">{answers}</div>'
    else:
        unread = cassette_a if isinstance(cassette_a, str) else cassette_b
        aligned = f'<p class="note" id="divergence">not compared: {_e(unread)}</p>'
    transcripts = "".join(
        f'<div><h2>{label}: transcript</h2><div class="transcript">{_transcript(c)}</div></div>'
        for label, c in (("A", cassette_a), ("B", cassette_b))
    )
    title = f"{run_a}: {case_a} trial {idx_a} | {run_b}: {case_b} trial {idx_b}"
    body = (
        _WIDE
        + _nav(
            (f"run {run_a}", _href("runs", run_a)),
            ("side by side", _href("side", run_a, case_a, idx_a, run_b, case_b, idx_b)),
        )
        + f'<h1>two trials side by side</h1><div class="side" id="sides">{"".join(sides)}</div>'
        + aligned
        + f'<div class="side" id="transcripts">{transcripts}</div>'
    )
    return _ok(title, body)
