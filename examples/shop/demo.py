"""``python -m examples.shop.demo``: the replay half of ``make demo``, end to end.

1. offline replay of the recorded session against a changed prompt (v2):
   the one tool call the cassette cannot answer shows as ``unsupported``
   with its nearest recorded call;
2. 8 sandbox trials against a flaky stub model: pass^1 against pass^8, and
   the failing assertions;
3. fault injection: the refund call delivered twice. The demo agent (its
   model sends an idempotency key) passes; a naive one refunds twice;
4. a sandbox violation: the same agent told to post its answer to a webhook
   on another host is refused there, and the trial fails on it, whatever it
   did for the customer;
5. a refrain case: asked to refund $500 of a $35 order, the agent checks the
   order and refuses (success is a world left as it was); then ``replay
   suite-health`` shows the suite's balance of act and refrain cases.

Each run shows failing or unsupported trials on purpose: the demo checks each
exits as the README's exit codes say (3 for the unsupported call, 1 for a
failure, 0 when every trial passes), and that no trial is an ``error`` (the
story has none: an error means the demo itself is broken here).
"""

from __future__ import annotations

import sys
from pathlib import Path

from replay import ExitCode, Store
from replay._cli.main import cli
from replay.stub_llm import StubLLM

from .agent import SYSTEM_PROMPT
from .policy import PromptVersionPolicy, naive_refund_policy, over_refund_policy, refund_policy

CASE = str(Path(__file__).with_name("cases") / "refund-4812.yaml")
RETRIED = str(Path(__file__).with_name("cases") / "refund-4812-retried.yaml")
TOO_MUCH = str(Path(__file__).with_name("cases") / "refund-4812-too-much.yaml")
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]


def replay(*args: str, expect: int = 0) -> None:
    """Run a ``replay`` command in this process, as the shell would; it must exit ``expect``."""
    print(f"\n$ replay {' '.join(a if ' ' not in a else repr(a) for a in args)}", flush=True)
    try:  # (without standalone mode, click returns the exit status of ctx.exit)
        code = cli.main(list(args), prog_name="replay", standalone_mode=False)
    except SystemExit as exit_:
        code = exit_.code
    if (code or 0) != expect:
        print(f"demo: `replay {args[0]}` exited {code}, not {expect}", file=sys.stderr)
        raise SystemExit(code or 1)


def model(stub: StubLLM, policy: str, note: str = "") -> None:
    """Say how to run the stub model a step talks to, on the port it has here."""
    flaky = f" --seed {stub.seed} --flake-rate {stub.flake_rate}" if stub.flake_rate else ""
    print(
        f"\n# the model{note}: replay stub-llm --policy {policy} --port {stub.port}{flaky} &",
        flush=True,
    )


def main(cassettes: str = "cassettes", store: str = ".replay/demo.db") -> None:
    """Run the demo's replay steps; the recorded session must be in ``cassettes``."""
    Path(store).unlink(missing_ok=True)
    with StubLLM(PromptVersionPolicy()) as llm:
        model(llm, "examples.shop.policy:PromptVersionPolicy", " (prompt v2 moves it)")
        v2 = SYSTEM_PROMPT + " (prompt v2)"
        replay(
            "run",
            CASE,
            "--run",
            "offline-v2",
            "--mode",
            "offline",
            "--cassettes",
            cassettes,
            "--llm",
            "live",
            "--llm-url",
            llm.openai_base_url,
            "--set",
            f"system_prompt={v2}",
            "--store",
            store,
            *AGENT,
            expect=ExitCode.INCOMPLETE,  # the unsupported call: nothing failed, not judged
        )
    replay("report", "offline-v2", "--store", store)
    with StubLLM(refund_policy(), seed=4812, flake_rate=0.12) as flaky:
        model(flaky, "examples.shop:refund_policy", ", flaky")
        replay(
            "run",
            CASE,
            "--run",
            "flaky-8",
            "-k",
            "8",
            "-j",
            "4",
            "--llm-url",
            flaky.openai_base_url,
            "--store",
            store,
            *AGENT,
            expect=ExitCode.FAILED,  # the flaky model's trials that fail
        )
    replay("report", "flaky-8", "--store", store)
    for name, policy, note in (
        ("retried-demo", "examples.shop:refund_policy", ", sending an idempotency key"),
        ("retried-naive", "examples.shop:naive_refund_policy", ", naive: no idempotency key"),
    ):
        with StubLLM(refund_policy() if name == "retried-demo" else naive_refund_policy()) as llm:
            model(llm, policy, note)
            replay(
                "run", RETRIED, "--run", name, "-k", "2", "--llm-url", llm.openai_base_url,
                "--store", store, *AGENT,
                expect=ExitCode.OK if name == "retried-demo" else ExitCode.FAILED,
            )  # fmt: skip
        replay("report", name, "--store", store)
    with StubLLM(refund_policy()) as llm:
        model(llm, "examples.shop:refund_policy")
        replay(
            "run", CASE, "--run", "webhook", "--llm-url", llm.openai_base_url, "--store", store,
            "--set", "notify_url=https://hooks.example.com/refunds", *AGENT,
            expect=ExitCode.FAILED,  # the sandbox violation
        )  # fmt: skip
    replay("report", "webhook", "--store", store)
    with StubLLM(over_refund_policy()) as llm:
        model(llm, "examples.shop.policy:over_refund_policy", ", asked for more than was paid")
        replay(
            "run", TOO_MUCH, "--run", "refrain", "-k", "2", "--llm-url", llm.openai_base_url,
            "--store", store, *AGENT,
        )  # fmt: skip
    replay("report", "refrain", "--store", store)
    replay("suite-health", "--store", store)  # the balance: act and refrain cases per suite
    results = Store(store)
    errors = [(r, t) for r in results.runs() for t in results.trials(r) if t.verdict == "error"]
    if errors:
        run, first = errors[0]
        print(
            f"demo: {len(errors)} trial(s) are errors, which the demo has none of; the first, "
            f"{run} {first.case_id}#{first.idx}: {list(first.cause_detail[:1])}",
            file=sys.stderr,
        )
        raise SystemExit(1)


if __name__ == "__main__":
    main(*sys.argv[1:])
