"""The HTML viewer's parts: a page, its tables and curves, a cassette's transcript and page.

Every piece of recorded text goes through `_e` (``html.escape``): cassettes hold
arbitrary model output. A run's page is ``_run_page``'s.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from recorder import (
    Cassette,
    ErrorEvent,
    HttpEvent,
    ToolEvent,
    UserEvent,
    ViolationEvent,
    WarningEvent,
    read_cassette,
)

from ..graders import Verdict
from ..results import Interval, Store, diff_cassettes, step_numbers
from ._transcript import (
    Step,
    delta_lines,
    message_role,
    message_text,
    steps,
    tokens_text,
    usage_text,
)

_SIGNS = {"+": "inserted", "-": "deleted", "~": "updated"}

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.4em 0}
td,th{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}table.sortable th{cursor:pointer;user-select:none}
th[data-dir=asc]::after{content:" \\25B2"}th[data-dir=desc]::after{content:" \\25BC"}
pre{white-space:pre-wrap;word-break:break-word;margin:.2em 0;background:#f8f8f8;padding:3px 6px}
.v{font-weight:bold;padding:0 6px;border-radius:3px;color:#fff}.v-pass{background:#2a7d2a}
.v-fail{background:#c0392b}.v-unsupported{background:#8e44ad}.v-error{background:#d35400}
.v-unknown{background:#7f8c8d}
details{border:1px solid #ccc;border-radius:4px;margin:.6em 0;padding:.3em .8em}
summary{cursor:pointer;font-weight:bold}
.step{margin:.6em 0;padding-left:.6em;border-left:3px solid #ccc}.step-llm{border-color:#2980b9}
.step-tool{border-color:#27ae60}.step-error{border-color:#c0392b}
.step-warning{border-color:#e67e22}.step-violation{border-color:#8e44ad}.meta{color:#666}
.s-inserted{color:#1e7b1e}.s-deleted{color:#b03a2e}.s-updated{color:#9a6700}
.miss{border:1px solid #8e44ad;background:#f7effa;padding:.3em .6em;margin:.4em 0}
.cause{border:1px solid #c0392b;background:#fdecea;padding:.3em .6em;margin:.4em 0}
.guard{color:#c0392b;font-weight:bold}.when{white-space:nowrap}
tr.diverge td{background:#fdecea;font-weight:bold}.note{color:#b03a2e}.legend-at{color:#2471a3}
.legend-hat{color:#d35400}.flex{display:flex;gap:2em;flex-wrap:wrap;align-items:flex-start}
.scroll{max-height:70vh;overflow:auto;margin:.4em 0}.scroll table{margin:0}
#trials th{position:sticky;top:0}#trials td{white-space:nowrap}
#aligned,#states{table-layout:fixed;width:100%}#aligned th:first-child{width:2em}
#states th:first-child{width:11em}#states th:last-child{width:4.5em}#trials tr[hidden]{display:none}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1.5em}.side>div{min-width:0}
@media (max-width:700px){table{display:block;overflow-x:auto}body{margin:.5em auto}
.side{grid-template-columns:1fr}}
"""

_JS = r"""
document.addEventListener("toggle", function (e) {
  var d = e.target, s = d.open && d.querySelector(":scope > script.lazy");
  if (!s) return;
  s.insertAdjacentHTML("afterend", s.textContent.replace(/<\\([\/!])/g, "<$1"));
  s.remove();
}, true);
document.addEventListener("click", function (e) {
  var a = e.target.closest && e.target.closest("a.to-trial");
  var s = a && document.getElementById(a.getAttribute("href").slice(1));
  if (s && s.parentNode.tagName === "DETAILS") s.parentNode.open = true;
});
(function () {
  var bar = document.getElementById("filter");
  if (!bar) return;
  function val(id) { var el = document.getElementById(id); return el ? el.value : ""; }
  var rows = {};
  document.querySelectorAll("#trials tbody tr").forEach(function (r) {
    rows[r.dataset.anchor] = r;
  });
  function apply() {
    var v = val("f-verdict"), c = val("f-cause"), k = val("f-case");
    var q = val("f-text").trim().toLowerCase(), shown = 0, all = 0;
    document.querySelectorAll("details.trial").forEach(function (d) {
      var ok = (!v || (v === "!pass" ? d.dataset.verdict !== "pass" : d.dataset.verdict === v))
        && (!c || d.dataset.cause === c) && (!k || d.dataset.case === k)
        && (!q || d.textContent.toLowerCase().indexOf(q) >= 0);
      d.hidden = !ok; all += 1; shown += ok ? 1 : 0;
      var row = rows[d.querySelector(":scope > summary").id];
      if (row) row.hidden = !ok;
    });
    document.getElementById("f-count").textContent = shown + " of " + all + " trials";
  }
  bar.querySelectorAll("select").forEach(function (s) { s.addEventListener("change", apply); });
  document.getElementById("f-text").addEventListener("input", apply);
  apply();
  var go = document.getElementById("side-go");
  if (!go) return;
  // (picked first is A, the left; a third pick drops the oldest; boxes a browser kept
  // ticked across a reload count, in the page's order)
  var order = Array.from(document.querySelectorAll("#trials input.pick:checked"));
  go.disabled = order.length !== 2;
  document.getElementById("trials").addEventListener("change", function (e) {
    var box = e.target;
    if (!box.classList.contains("pick")) return;
    order = order.filter(function (b) { return b !== box; });
    if (box.checked) order.push(box);
    if (order.length > 2) order.shift().checked = false;
    go.disabled = order.length !== 2;
  });
  go.addEventListener("click", function () {
    if (order.length === 2) location.href = "/side/" + order[0].value + "/" + order[1].value;
  });
})();
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () {
    var col = th.cellIndex, asc = th.dataset.dir !== "asc", body = th.closest("table").tBodies[0];
    th.parentNode.querySelectorAll("th").forEach(function (h) { delete h.dataset.dir; });
    th.dataset.dir = asc ? "asc" : "desc";
    Array.from(body.rows).sort(function (a, b) {
      var x = a.cells[col].dataset.v, y = b.cells[col].dataset.v, r = Number(x) - Number(y);
      return (asc ? 1 : -1) * (isNaN(r) ? x.localeCompare(y) : r);
    }).forEach(function (row) { body.appendChild(row); });
  });
});
"""


def _e(value: object) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape(str(value))


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _badge(verdict: Verdict | str) -> str:
    """A verdict as a coloured label."""
    word = Verdict(verdict).value
    return f'<span class="v v-{_e(word)}">{_e(word)}</span>'


def _table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    """A table whose cells are already HTML; header names are escaped here."""
    ths = "".join(f"<th>{_e(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{ths}</tr></thead><tbody>{trs}</tbody></table>'


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f"<body>{body}<script>{_JS}</script></body></html>\n"
    )


def _inert(body: str) -> str:
    r"""HTML kept as text until the JS inserts it: nothing in it may end the script element.

    Recorded text is escaped (no raw ``<``), so every ``</`` and ``<!--`` is our own markup;
    they become ``<\/`` and ``<\!--``, which the JS turns back.
    """
    payload = body.replace("</", "<\\/").replace("<!--", "<\\!--")
    return f'<script type="text/html" class="lazy">{payload}</script>'


def _delta_table(delta: Any) -> str:
    lines = delta_lines(delta or {})
    if not lines:
        return '<p class="meta">no rows changed</p>'
    rows = [[f'<span class="s-{_SIGNS[s]}">{_SIGNS[s]}</span>', _e(text)] for s, text in lines]
    return _table(["change", "row"], rows, "delta")


def _span(interval: Interval | None) -> str:
    """An interval as ``[0.321, 0.526]`` (``-`` without one)."""
    return "-" if interval is None else f"[{interval.low:.3f}, {interval.high:.3f}]"


def _pre(label: str, value: Any) -> str:
    return f"<div><b>{_e(label)}</b><pre>{_e(_json(value))}</pre></div>"


def _err(info: Any, prefix: str = "") -> str:
    return f'<p class="note">{prefix}{_e(info.type)}: {_e(info.message)}</p>' if info else ""


def _step(step: Step) -> str:
    event, timing = step.event, f"+{step.t:.3f}s, {step.duration * 1000:.1f} ms"
    body: list[str] = []
    if step.llm is not None:
        call = step.llm
        head = (
            f"{step.index}. LLM {_e(call.api)} {_e(call.model or '?')} "
            f'<span class="meta">{timing}, {_e(tokens_text(call))}'
            f"{', streamed' if call.stream else ''}</span>"
        )
        body += [_pre(message_role(m), message_text(m)) for m in step.new_messages]
        body += [_pre("assistant", call.reply_text)] if call.reply_text else []
        body += [_pre(f"assistant calls {tc.name}", tc.arguments) for tc in call.reply_tool_calls]
    elif isinstance(event, HttpEvent):
        status = event.response.status if event.response else "no response"
        head = (
            f"{step.index}. HTTP {_e(event.request.method)} {_e(event.request.url)} "
            f'&rarr; {_e(status)} <span class="meta">{timing}</span>'
        )
        body.append(_err(event.error))
    elif isinstance(event, ToolEvent):
        head = (
            f"{step.index}. tool <code>{_e(event.name)}</code> "
            f'<span class="meta">{_e(event.effect)}, {timing}</span>'
        )
        body.append(_pre("arguments", event.args))
        body.append(_err(event.error, "raised ") if event.error else _pre("result", event.result))
        body += [_delta_table(event.delta)] if event.delta else []
    elif isinstance(event, UserEvent):
        head = (
            f'{step.index}. user <span class="meta">{_e(event.source)}'
            f"{', ' + _e(event.model) if event.model else ''}, {timing}</span>"
        )
        if event.said is not None:
            body.append(f"<p><b>agent:</b> {_e(event.said)}</p>")
        if event.error is not None:
            body.append(_err(event.error, "the simulated user failed: "))
        else:
            stop = " <i>(ends the conversation)</i>" if event.stop else ""
            body.append(f"<p><b>user:</b> {_e(event.reply or '')}{stop}</p>")
    elif isinstance(event, ErrorEvent):
        head = f"{step.index}. error"
        body.append(_err(event.error))
        if event.error.traceback:
            body.append(
                f"<details><summary>traceback</summary><pre>{_e(event.error.traceback)}</pre></details>"
            )
    elif isinstance(event, ViolationEvent):
        head = f"{step.index}. sandbox violation"
        body.append(
            f"<p><b>{_e(event.action)}</b> <code>{_e(event.target)}</code>: refused by the "
            f"{_e(event.via)} check</p>"
        )
    else:
        assert isinstance(event, WarningEvent)
        head = f"{step.index}. warning"
        body.append(f"<p>{_e(event.message)}</p>")
        body += [_delta_table(event.delta)] if event.delta else []
    return f'<div class="step step-{step.kind}"><div>{head}</div>{"".join(body)}</div>'


def transcript_html(cassette: Cassette) -> str:
    """Render a cassette's transcript: its steps, then the outcome, state diff, usage and pins."""
    head, summary = cassette.header, cassette.summary()
    trial = "-" if head.trial is None else head.trial
    out = [
        f'<p class="meta">{_e(cassette.path)}: case {_e(head.case_id or "-")}, trial '
        f"{_e(trial)}, recorded {_e(head.started_at)} by agent-replay "
        f"{_e(head.recorder_version)}</p>"
    ]
    if cassette.truncation:
        out.append(f'<p class="note">cut short: {_e(cassette.truncation)}</p>')
    if cassette.footer is not None and cassette.footer.stopped is not None:
        out.append(f'<p class="note">{_e(cassette.footer.stopped.describe())}</p>')
    out += [_step(step) for step in steps(cassette)]
    ended = "raised (an exception escaped it)" if summary.status == "error" else "ended"
    out.append(f"<h4>the agent's run: {ended}</h4>")  # (its verdict is the grades')
    if summary.final_answer is not None:
        out.append(_pre("final answer", summary.final_answer))
    out.append("<div><b>state diff</b></div>" + _delta_table(summary.state_diff))
    captured = "".join(f"<li>{_e(line.describe())}</li>" for line in cassette.manifest())
    out.append(f'<div><b>captured</b></div><ul class="manifest">{captured}</ul>')
    u, t = summary.usage, summary.timings
    out.append(
        f"<p>usage: {_e(usage_text(u))}; time: "
        f"{t.total:.3f} s total, {t.llm:.3f} s LLM, {t.tools:.3f} s tools</p>"
    )
    pins = summary.pins.model_dump(exclude_defaults=True).items()
    out.append(_table(["pin", "value"], [[_e(k), _e(_json(v))] for k, v in pins]))
    return "".join(out)


def cassette_html(cassette: Cassette) -> str:
    """The whole page for one cassette (``replay show --html``)."""
    body = f"<h1>cassette {_e(cassette.path.name)}</h1>{transcript_html(cassette)}"
    return _page(f"cassette {cassette.path.name}", body)


def _load(path: str | None, store: Store) -> Cassette | str:
    """Read a trial's cassette, or say in one line why it cannot be shown."""
    if not path:
        return "no cassette was recorded for this trial"
    where = Path(path)
    if not where.is_absolute() and (store.path.parent / where).exists():
        where = store.path.parent / where
    try:
        return read_cassette(where)
    except Exception as exc:  # a viewer shows what it can: one bad file must not sink the page
        return f"cassette {path} cannot be read: {exc}"


def _calls(cassette: Cassette) -> list[str]:
    """The agent's tool calls, each after its step number in the transcript."""
    return [
        f'<span class="meta">step {n}</span> '
        + _e(f"{e.name}({', '.join(f'{k}={v!r}' for k, v in e.args.items())})")
        for e, n in step_numbers(cassette)
    ]


def compare_html(a: Cassette, b: Cassette, label_a: str, label_b: str) -> str:
    """Two trials' tool calls side by side, the first divergence marked, then state differences.

    Row ``#`` is the agent's n-th tool call; each call shows its step in its own transcript.
    """
    diff = diff_cassettes(a, b)
    calls_a, calls_b = _calls(a), _calls(b)
    mark = diff.divergence.call if diff.divergence else 0
    rows = "".join(
        f"<tr{' class=diverge' if i == mark else ''}><td>{i}</td>"
        f"<td>{calls_a[i - 1] if i <= len(calls_a) else '&mdash;'}</td>"
        f"<td>{calls_b[i - 1] if i <= len(calls_b) else '&mdash;'}</td></tr>"
        for i in range(1, max(len(calls_a), len(calls_b)) + 1)
    )
    what = diff.divergence.describe() if diff.divergence else "the same tool calls"
    out = [
        f"<h4>compared with {_e(label_b)}</h4><p><b>first divergence:</b> {_e(what)}</p>",
        f'<table class="compare"><thead><tr><th>#</th><th>A: {_e(label_a)}</th>'
        f"<th>B: {_e(label_b)}</th></tr></thead><tbody>{rows}</tbody></table>",
    ]
    if diff.state:
        lines = "".join(f"<li>{_e(line)}</li>" for line in diff.state)
        out.append(f"<b>state differences</b><ul>{lines}</ul>")
    if diff.answers:
        out.append(
            _table(["A answered", "B answered"], [[_pre("", x or "(none)") for x in diff.answers]])
        )
    return "".join(out)
