"""What every page of ``replay view`` shares: the answer, links, the 404, a run's name checked.

Names come from users: every one goes through ``_e`` in text and through ``_href``
(percent-encoded, a ``/`` in a case id included) in a link.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from recorder import ReplayError

from ..graders import Verdict
from ..results import Store
from ._html import _badge, _e, _page

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
    """An address from path segments, each percent-encoded whole (``.`` and ``..`` too)."""
    return "/" + "/".join(_DOTS.get(str(s)) or quote(str(s), safe="") for s in segments)


_DOTS = {".": "%2E", "..": "%2E%2E"}


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
