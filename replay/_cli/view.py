"""``replay view``: serve the results store as pages (``replay.view``) until Ctrl-C."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import click

from replay import view as serve

from ..results import DEFAULT_PATH


def serve_until_stopped(
    store: Path, *, host: str, port: int, page: str = "", err: bool = False
) -> None:
    """Serve ``store`` and print its address (and ``page``'s, a path on it) until Ctrl-C.

    Ctrl-C is how ``replay view`` and ``replay sample --view`` end: it stops the server
    and exits OK. ``err``: print to stderr (stdout holds JSON).
    """
    with contextlib.suppress(KeyboardInterrupt), serve(store, host=host, port=port) as server:
        click.echo(f"serving {server.store} at {server.url} (Ctrl-C stops)", err=err)
        if page:
            click.echo(f"review queue: {server.url.rstrip('/')}{page}", err=err)
        threading.Event().wait()


@click.command()
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind (other machines can read the store if it is not a loopback one).",
)
@click.option(
    "--port",
    default=0,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="0 picks a free one.",
)
def view(store: Path, host: str, port: int) -> None:
    """Serve the results store as pages: the runs, one run, a trial, two runs compared.

    Open the printed address; Ctrl-C stops the server (exit 0). The pages: /
    (every run, newest first, and a form to compare two), /runs/NAME,
    /runs/NAME/trials/CASE/INDEX, /compare/A/B (newly failing cases first,
    each linked to a failing trial's transcript) and /runs/NAME/review (the
    trials `replay sample` picks, each with a form to label it). The server
    only reads, but for those labels, which it takes from its own page alone
    (bound to a loopback address).
    """
    serve_until_stopped(store, host=host, port=port)
