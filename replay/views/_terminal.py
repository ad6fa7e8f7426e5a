"""The terminal renderers (rich): a run's report, diffs (a cassette's: ``_terminal_show``).

Beside the HTML viewer (``_html``): the CLI parses its options, calls a public
function of ``replay``, and renders what it returns with one of these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..results import CaseReport, Interval, RunReport, ShareSummary, worst_first

if TYPE_CHECKING:
    from ..results import CassetteDiff, RunComparison

_SIGN_STYLE = {"+": "green", "-": "red", "~": "yellow"}

CASES_TABLED = 100
"""Cases, worst first, in the terminal report's table (a line says how many more)."""
TRIALS_LISTED = 20
"""Trials the terminal report lists under each failure cause: those of the worst cases
(``report --json`` and ``replay view`` list every one)."""
CASES_LISTED = 20
"""Cases, worst first, whose evidence (and partial credit, and the simulated user's
failures) the terminal report prints; a line says how many more and where they are."""


def _middle(value: str, limit: int) -> str:
    """``value`` in ``limit`` characters, its middle left out.

    (A miss names the request at its start and the differing values at its end.)
    """
    value = " ".join(value.split())
    if len(value) <= limit:
        return value
    head = limit // 3
    return f"{value[:head]} … {value[len(value) - (limit - head - 3) :]}"


def render_report(result: RunReport, out: Console) -> None:
    """A run's report: the per-case table, the suite's pass^k, tool use, why trials failed.

    Cases come worst first (``worst_first``); the trials that did not pass are listed by
    their primary cause, with counts, before each case's evidence.
    """
    run = result.name
    cases = worst_first(result.cases)
    kmax = max((c.metrics.counts.n for c in cases), default=0)
    columns = [
        "case",
        "suite",
        "n",
        "c",
        "pass^1",
        "95% CI" if result.suite.confidence == 0.95 else f"{result.suite.confidence:.0%} CI",
        *([f"pass^{kmax}"] if kmax > 1 else []),
        "verdicts",
    ]
    table = Table(title=f"run {run}", title_justify="left")
    for column in columns:
        # On a narrow terminal other columns wrap first: a case id and an interval never do.
        table.add_column(
            column,
            justify="left" if column in ("case", "suite", "verdicts") else "right",
            no_wrap=column == "case" or column.endswith("CI"),
        )
    for case in cases[:CASES_TABLED]:
        counts, metrics = case.metrics.counts, case.metrics
        verdicts = ", ".join(f"{v} {n}" for v, n in counts.verdicts.items() if n)
        table.add_row(
            escape(case.case_id),
            case.suite,
            str(counts.n),
            str(counts.c),
            _num(metrics.pass_hat.get(1)),
            "-" if metrics.pass1_ci is None else "{:.2f}-{:.2f}".format(*metrics.pass1_ci),
            *([_num(metrics.pass_hat.get(kmax))] if kmax > 1 else []),
            verdicts,
        )
    out.print(table)
    if len(cases) > CASES_TABLED:
        out.print(
            f"… {len(cases) - CASES_TABLED} more cases, none worse than those above: every "
            f"case in `replay report {escape(run)} --json` or `--html FILE`, or `replay view`"
        )
    suite = result.suite
    graded = len(result.cases) - len(suite.excluded)
    # Only the k every graded case reaches: past it, means over fewer cases could rise with k.
    ks = [k for k in sorted(suite.pass_hat) if suite.cases_used.get(k, 0) == graded]
    if ks:
        level = f"{suite.confidence:.0%}"
        for name, values, intervals in (
            ("pass^k", suite.pass_hat, suite.pass_hat_ci),
            ("pass@k", suite.pass_at, suite.pass_at_ci),
        ):
            figures = [f"k={k} {_num(values[k])} {_interval(intervals.get(k))}" for k in ks]
            out.print(f"suite {name} ({level} interval): " + "  ".join(figures))
        if suite.pass1_se is not None and suite.pass1_se_naive is not None:
            out.print(
                f"pass^1 standard error {suite.pass1_se:.3f} clustered by case "
                f"({suite.pass1_se_naive:.3f} if every trial were independent)"
            )
        out.print(f"[dim]intervals: {escape(suite.method)}[/]")
        _render_directions(result, out)
    else:
        out.print("no trial passed or failed: every one was unknown, unsupported or error")
    _render_partial(result, out)
    totals = ", ".join(f"{v} {n}" for v, n in suite.totals.items() if n)
    out.print(f"trials: {totals}")
    use = result.tool_use
    accuracy = [
        f"{label} {_num(value)}"
        for label, value in (
            ("tool selection", use.selection),
            ("arguments", use.arguments),
            ("abstention", use.abstention),
        )
        if value is not None
    ]
    spread = ", ".join(
        f"{name.replace('_', ' ')} p50 {_round(p50)} p95 {_round(p95)}"
        for name, (p50, p95) in use.percentiles.items()
        if p50 is not None
    )
    if use.unmeasured == use.trials and use.trials:
        out.print("tool use: unknown (trials stored before tool use was stored with them)")
    else:
        described = ", ".join(accuracy) or "no reference solution"
        out.print(f"tool use: {described}; loops {use.loops}")
    if spread:
        out.print(f"per trial: {spread}")
    if use.unknown_usage:
        out.print(f"tokens unknown in {use.unknown_usage} trials (calls that reported no usage)")
    if result.guards:
        fired = ", ".join(f"{guard} {n}" for guard, n in result.guards.items())
        out.print(f"limits hit (error trials, cause limit): {fired}")
    _render_causes(result, cases, out)
    failing = [case for case in cases if case.failures]
    lines = []
    for case in failing[:CASES_LISTED]:
        lines.append(f"\n[bold]{escape(case.case_id)}[/] failed because:")
        lines += [f"  {times} x {escape(line)}" for line, times in case.failures]
        if case.failing_cassette:
            lines.append(f"  read: replay show {escape(case.failing_cassette)}")
    _more(lines, len(failing), "cases' evidence", "failures", run)
    user = [case for case in cases if case.user_failures]
    for case in user[:CASES_LISTED]:
        lines.append(
            f"\n[bold]{escape(case.case_id)}[/]: the simulated user failed "
            "(error trials, not counted against the agent):"
        )
        lines += [f"  {times} x {escape(line)}" for line, times in case.user_failures]
    _more(lines, len(user), "cases' simulated user failures", "user_failures", run)
    for line in lines:  # (one by one: each line's own control characters are escaped)
        out.print(line)


def _more(lines: list[str], count: int, what: str, key: str, run: str) -> None:
    """The line saying how many more cases there are past ``CASES_LISTED``, and where."""
    if count > CASES_LISTED:
        lines.append(
            f"\n… {count - CASES_LISTED} more {what}: every case's in "
            f"`replay report {escape(run)} --json` (cases' {key}), or `replay view`"
        )


def _render_directions(result: RunReport, out: Console) -> None:
    """pass^k over the act, refrain and undeclared cases apart, when the run has two kinds."""
    if len(result.directions) < 2:
        return
    level = f"{result.suite.confidence:.0%}"
    for name, cases, metrics, ks in result.by_direction():
        figures = "  ".join(
            f"k={k} {_num(metrics.pass_hat[k])} {_interval(metrics.pass_hat_ci.get(k))}" for k in ks
        )
        out.print(
            f"{name} pass^k ({cases} case{'' if cases == 1 else 's'}, {level} interval): "
            + (figures or "no graded trial")
        )


def _shares(summary: ShareSummary) -> str:
    quartiles = f"{summary.q1:.2f} / {summary.median:.2f} / {summary.q3:.2f}"
    return (
        f"mean {summary.mean:.2f}, min {summary.low:.2f}, quartiles {quartiles}, "
        f"max {summary.high:.2f} over {summary.trials} trial{'' if summary.trials == 1 else 's'}"
    )


def _render_partial(result: RunReport, out: Console) -> None:
    """The share of assertions held, over the cases that record it (weighted, hybrid)."""
    if result.partial is None:
        return
    whole = result.partial
    out.print(
        f"partial credit (assertions held; pass^k stays the verdict): {_shares(whole)}"
        + (
            f", {whole.cases} cases (mean of case means {whole.case_mean:.2f})"
            if whole.case_mean is not None and whole.cases > 1
            else ""
        )
    )
    credited = [case for case in worst_first(result.cases) if case.partial is not None]
    lines = [
        f"  {escape(case.case_id)}: {_shares(case.partial)}"
        for case in credited[:CASES_LISTED]
        if case.partial is not None
    ]
    _more(lines, len(credited), "cases' partial credit", "partial_credit", result.name)
    for line in lines:  # (one by one: each line's own control characters are escaped)
        out.print(line)


def _render_causes(result: RunReport, cases: list[CaseReport], out: Console) -> None:
    """The trials that did not pass by primary cause: the counts, then each cause's trials.

    A cause with more than ``TRIALS_LISTED`` trials lists those of its worst cases (in
    ``cases``' order), and says how many more there are and where to read them.
    """
    groups = [g for g in result.causes if g.count]
    if not groups:
        return
    out.print("\n[bold]Failures by cause[/]: " + ", ".join(f"{g.name} {g.count}" for g in groups))
    rank = {case.case_id: i for i, case in enumerate(cases)}
    lines = []
    for group in groups:
        lines.append(f"  {escape(group.name)} ({group.count}):")
        listed = list(group.trials)
        if len(listed) > TRIALS_LISTED:
            listed.sort(key=lambda t: (rank.get(t.case_id, len(rank)), t.idx))
            listed = listed[:TRIALS_LISTED]
        for t in listed:
            detail = f"  {escape(_middle(t.detail, 240))}" if t.detail else ""
            held = f"  [dim]({escape(t.credit.describe())})[/]" if t.credit is not None else ""
            lines.append(f"    {escape(t.case_id)}#{t.idx}{detail}{held}")
        if group.count > len(listed):
            lines.append(
                f"    … {group.count - len(listed)} more (those above are the worst cases'): "
                f"every one in `replay report {escape(result.name)} --json` (causes), or "
                "`replay view`"
            )
    for line in lines:
        out.print(line)


def render_cassette_diff(result: CassetteDiff, out: Console) -> None:
    """Two trials compared: the first divergence, the rows, the answers."""
    if result.same:
        out.print("same decisions, same world changes, same answer")
        return
    out.print(
        f"[bold]first divergence[/] {escape(result.divergence.describe())}"
        if result.divergence
        else "same tool calls"
    )
    for line in result.state:
        out.print(f"  [yellow]~[/] {escape(line)}")
    if result.answers:
        out.print(f"answer A: {escape(str(result.answers[0]))}")
        out.print(f"answer B: {escape(str(result.answers[1]))}")


def render_run_diff(comparison: RunComparison, out: Console) -> None:
    """Two runs compared, paired by case: each case, then the suite's paired change."""
    a, b = comparison.a, comparison.b
    table = Table(
        "case",
        f"{a} pass^1",
        f"{b} pass^1",
        "change",
        "p",
        "q",
        "pass^k A -> B",
        title=f"{a} -> {b}",
        title_justify="left",
    )
    for c in comparison.changes:
        k = f"k={c.pass_k[0]}: {_num(c.pass_k[1])} -> {_num(c.pass_k[2])}" if c.pass_k else "-"
        mark = {"worse": " [red]worse[/]", "better": " [green]better[/]", None: ""}[c.direction]
        change = "-" if c.change is None else f"{c.change:+.3f}"
        table.add_row(
            escape(c.case_id),
            _num(c.pass1_a),
            _num(c.pass1_b),
            change + mark,
            _num(c.p_value),
            _num(c.q_value),
            k,
        )
    out.print(table)
    level, power = f"{comparison.confidence:.0%}", f"{comparison.power:.0%}"
    for figure in comparison.figures:
        out.print(
            f"suite {figure.name} {figure.a:.3f} -> {figure.b:.3f}: change {figure.change:+.3f}, "
            f"{level} interval {_interval(figure.interval, signed=True)}, paired over "
            f"{figure.cases} case{'' if figure.cases == 1 else 's'}; the smallest change these "
            f"runs detect ({power} power): "
            f"{figure.detectable:.3f}"
        )
    if not comparison.figures:
        out.print("fewer than two cases graded in both runs: no paired suite figures")
    marked = [c for c in comparison.changes if c.direction]
    if marked:
        listed = ", ".join(f"{escape(c.case_id)} ({c.direction})" for c in marked)
        out.print(f"cases changed beyond noise (FDR {comparison.fdr}): {listed}")
    else:
        out.print(f"no case changed beyond noise (Fisher's exact test, FDR {comparison.fdr})")
    for name, only in ((a, comparison.only_a), (b, comparison.only_b)):
        if only:
            out.print(f"in {escape(name)} only (not paired): {escape(', '.join(only))}")
    newly = [c for c in comparison.changes if c.newly_failing]
    for c in newly:
        out.print(f"newly failing: {escape(c.case_id)}  read: replay show {c.failing_cassette}")
    if not newly:
        out.print("no case newly fails")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _interval(interval: Interval | None, *, signed: bool = False) -> str:
    if interval is None:
        return "-"
    sign = "+" if signed else ""
    return f"[{interval.low:{sign}.3f}, {interval.high:{sign}.3f}]"


def _round(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"
