"""The review queue of ``replay view``: trials picked for reading, each with a labelling form.

``/runs/NAME/review?pass=5&fail=5&seed=0`` recomputes its picks from the address
(``replay.sample``: the same store, run and numbers give the same trials, so the
address ``replay sample`` prints is the queue, and a reload shows the same one). Each
pick links to its trial's page and carries a form (pass, fail or unsure, a note; the
labeller's name is one field for the page, kept in the browser's ``localStorage``)
that POSTs to the queue's own address. The server checks where the form came from
(``_server``); ``store_label`` writes the label as ``replay label`` does.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from urllib.parse import quote, urlencode

from recorder import ConfigError, ReplayError

from ..graders import Verdict
from ..results import LabelRecord, Sample, Store, TrialRecord
from ._html import _badge, _e, _page

LABELS = ("pass", "fail", "unsure")
"""What a form may say (``replay label``'s choices)."""

DEFAULTS = {"pass": 5, "fail": 5, "seed": 0}
"""The queue's numbers when its address leaves them out (``replay sample``'s defaults)."""

_CSS = (
    "<style>.pick{border:1px solid #ddd;border-radius:4px;margin:.8em 0;padding:.4em .9em}"
    ".pick:target{border-color:#2471a3;box-shadow:0 0 0 2px #d6e6f5}.pick h3{margin:.2em 0}"
    ".pick h3 .n,.pick h3 .meta{color:#666;font-weight:normal}.pick h3 .why{margin:0 .3em}"
    ".labels{margin:.3em 0}ul.labels{padding-left:1.2em}"
    "form.label{display:flex;gap:.8em;align-items:center;flex-wrap:wrap;margin:.4em 0}"
    "form.label input[name=note]{flex:1;min-width:16em}"
    "#labeller{background:#f4f8fc;border:1px solid #c9dcee;padding:.5em .9em;margin:.8em 0}"
    "#reseed input{width:4em}#reseed label{margin-right:.8em}</style>"
)

_JS = """<script>
(function () {
  var by = document.getElementById("by"), key = "agent-replay.labeller";
  try { by.value = localStorage.getItem(key) || by.value; } catch (e) {}
  function keep() { try { localStorage.setItem(key, by.value.trim()); } catch (e) {} }
  by.addEventListener("change", keep);
  document.querySelectorAll("form.label").forEach(function (form) {
    form.addEventListener("submit", function (e) {
      if (!by.value.trim()) {
        e.preventDefault();
        by.setCustomValidity("your name first: each person's labels are kept apart");
        by.reportValidity();
        return;
      }
      by.setCustomValidity("");
      form.elements.by.value = by.value.trim();
      keep();
    });
  });
  by.addEventListener("input", function () { by.setCustomValidity(""); });
})();
</script>"""


class StoreUnwritable(ReplayError):
    """The label could not be written: the store is read-only, locked, or gone."""

    def __init__(self, path: Path, reason: object) -> None:
        super().__init__(
            f"the label was not stored: the results store {path} cannot be written ({reason}). "
            "Labels are kept in the store itself: make the file and its folder writable "
            "(or serve a writable copy) and label again."
        )


def unwritable_html(error: StoreUnwritable, back: str) -> str:
    """The page saying a label was not stored, with a link back to the queue at ``back``."""
    return _page(
        "label not stored",
        f'<h1>label not stored</h1><p class="note" id="unwritable">{_e(error)}</p>'
        f'<p><a href="{_e(back)}">back to the review queue</a></p>',
    )


def review_path(run: str, *, passed: int, failed: int, seed: int) -> str:
    """The queue's address on a ``replay view`` server (append it to ``ViewServer.url``)."""
    query = urlencode({"pass": passed, "fail": failed, "seed": seed})
    return f"/runs/{quote(run, safe='')}/review?{query}"


def numbers(query: dict[str, list[str]]) -> tuple[int, int, int]:
    """(pass, fail, seed) from a queue address's query.

    Raises:
        ValueError: One is given twice or is not a whole number (counts: not negative).
    """
    values = []
    for key, default in DEFAULTS.items():
        given = query.get(key, [str(default)])
        text = given[0].strip() if len(given) == 1 else "given twice"
        signed = key == "seed"
        if not re.fullmatch(r"-?\d{1,12}" if signed else r"\d{1,12}", text):
            raise ValueError(
                f"{key} must be a whole number{'' if signed else ' >= 0'}, not {text!r}"
            )
        values.append(int(text))
    return values[0], values[1], values[2]


def _trial_href(run: str, trial: TrialRecord) -> str:
    return "/" + "/".join(quote(str(s), safe="") for s in ("runs", run, "trials", *_key(trial)))


def _key(trial: TrialRecord) -> tuple[str, int]:
    return trial.case_id, trial.idx


def _said(label: LabelRecord) -> str:
    word = "unsure" if label.verdict is Verdict.UNKNOWN else label.verdict.value
    who = _e(label.labeller) if label.labeller else '<span class="meta">unnamed</span>'
    about = f" ({_e(label.dimension)})" if label.dimension else ""
    note = f": {_e(label.note)}" if label.note else ""
    return (
        f'<li><span class="v v-{_e(label.verdict.value)}">{word}</span> by {who}{about}{note} '
        f'<span class="meta">{_e(label.labeled)}</span></li>'
    )


def _pick(
    n: int, run: str, trial: TrialRecord, labels: list[LabelRecord], action: str, token: str
) -> str:
    why = trial.why_not_passed
    detail = f' <span class="meta">{_e(why[1])}</span>' if why and why[1] else ""
    cause = f' <span class="why">{_e(why[0].value)}</span>{detail}' if why else ""
    said = "".join(_said(label) for label in labels)
    shown = f'<ul class="labels">{said}</ul>' if said else '<p class="meta labels">no label yet</p>'
    choices = "".join(
        f'<label><input type="radio" name="verdict" value="{v}" required> {v}</label>'
        for v in LABELS
    )
    anchor = f"pick-{n}"
    return (
        f'<section class="pick" id="{anchor}" data-trial="{_e(trial.case_id)}#{trial.idx}">'
        f'<h3><span class="n">{n}.</span> <a href="{_e(_trial_href(run, trial))}">'
        f"{_e(trial.case_id)}#{trial.idx}</a> {_badge(trial.verdict)}{cause}</h3>{shown}"
        f'<form class="label" method="post" action="{_e(action)}#{anchor}">'
        f'<input type="hidden" name="token" value="{_e(token)}">'
        f'<input type="hidden" name="case" value="{_e(trial.case_id)}">'
        f'<input type="hidden" name="idx" value="{trial.idx}">'
        f'<input type="hidden" name="by" value="">{choices}'
        '<input name="note" placeholder="note (why)" maxlength="2000">'
        "<button>label</button></form></section>"
    )


def queue_html(store: Store, picked: Sample, passed: int, failed: int, token: str) -> str:
    """The queue's body: what was picked, a form to pick again, the name, each pick's form."""
    run, seed = picked.run, picked.seed
    action = review_path(run, passed=passed, failed=failed, seed=seed)
    labels: dict[tuple[str, int], list[LabelRecord]] = {}
    for label in store.labels(run):
        labels.setdefault((label.case_id, label.idx), []).append(label)
    reseed = "".join(
        f'<label>{key} <input name="{key}" type="number" value="{value}"'
        f"{'' if key == 'seed' else ' min=0'}></label>"
        for key, value in (("pass", passed), ("fail", failed), ("seed", seed))
    )
    out = [
        f"<h1>review queue: run {_e(run)}</h1>",
        f'<p id="summary">{len(picked.failed)} of {picked.failing} failed trials, picked '
        f"round-robin by case and failure cause, and {len(picked.passed)} of "
        f"{picked.passing} passing ones, by case (seed {seed}). Read each trial, then say "
        "whether the agent did the task: the label is stored as <code>replay label</code> "
        "stores it, beside your name.</p>",
        f'<form id="reseed" method="get" action="{_e(action.partition("?")[0])}">{reseed}'
        "<button>pick again</button></form>",
        '<div id="labeller"><label>your name <input id="by" autocomplete="name" '
        'maxlength="200" required></label> <span class="meta">kept in this browser; '
        "each person's labels are kept apart (<code>replay label-agreement</code> "
        "compares them)</span></div>",
    ]
    done = sum(_key(t) in labels for t in picked.trials)
    out.append(f'<p class="meta" id="progress">{done} of {len(picked.trials)} with a label</p>')
    n = 0
    for title, trials in (("failed", picked.failed), ("passed", picked.passed)):
        total = picked.failing if title == "failed" else picked.passing
        out.append(f'<h2 id="{title}">{title}: {len(trials)} of {total}</h2>')
        if not trials:
            out.append(f'<p class="meta">no trial of run {_e(run)} {title}</p>')
        for trial in trials:
            n += 1
            out.append(_pick(n, run, trial, labels.get(_key(trial), []), action, token))
    return _CSS + "".join(out) + _JS


def store_label(
    path: Path, run: str, case_id: str, idx: int, verdict: str, note: str, labeller: str
) -> None:
    """Write one label as ``replay label RUN CASE#IDX VERDICT --note NOTE --by NAME`` does.

    Raises:
        ConfigError: The run has no such trial (or the verdict is not a label's).
        StoreUnwritable: The store cannot be opened to write, or the write failed.
    """
    try:
        store = Store(path, create=False)
    except ConfigError as exc:  # it was a store when the server started: SQLite says why
        cause = exc.__context__
        raise StoreUnwritable(path, cause if isinstance(cause, sqlite3.Error) else exc) from None
    try:
        store.add_label(run, case_id, idx, verdict, note, dimension="", labeller=labeller)
    except sqlite3.Error as exc:
        raise StoreUnwritable(path, exc) from None
    finally:
        store.db.conn.close()
