"""Views: a cassette's transcript as steps, and the HTML viewer.

Private: use what ``replay`` exports.
"""

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
