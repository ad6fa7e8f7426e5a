"""Views: a cassette's transcript as steps, and the HTML viewer.

Private: use what ``replay`` exports.

Each name is imported when first asked for: ``replay report`` prints a table, it reads
no cassette.
"""

import typing as _typing

from ..plugins import lazy_face as _lazy_face

if _typing.TYPE_CHECKING:
    from ._console import console
    from ._html import cassette_html
    from ._judge_check import render_judge_check
    from ._labels import render_judge_agreement, render_label_agreement
    from ._plain import plain_text
    from ._regrade import render_regrade
    from ._review import review_path
    from ._run_page import run_html
    from ._server import ViewServer, view
    from ._terminal import render_cassette_diff, render_report, render_run_diff
    from ._terminal_show import render_cassette
    from ._transcript import to_json

_EXPORTS = {
    "console": "._console",
    "cassette_html": "._html",
    "render_judge_check": "._judge_check",
    "render_judge_agreement": "._labels",
    "render_label_agreement": "._labels",
    "plain_text": "._plain",
    "render_regrade": "._regrade",
    "review_path": "._review",
    "run_html": "._run_page",
    "ViewServer": "._server",
    "view": "._server",
    "render_cassette_diff": "._terminal",
    "render_report": "._terminal",
    "render_run_diff": "._terminal",
    "render_cassette": "._terminal_show",
    "to_json": "._transcript",
}
"""Each name and the module it is in."""

__all__ = [
    "ViewServer",
    "cassette_html",
    "console",
    "plain_text",
    "render_cassette",
    "render_cassette_diff",
    "render_judge_agreement",
    "render_judge_check",
    "render_label_agreement",
    "render_regrade",
    "render_report",
    "render_run_diff",
    "review_path",
    "run_html",
    "to_json",
    "view",
]


__getattr__, __dir__ = _lazy_face(__name__, _EXPORTS)
