"""What the stub model does for the demo: the refund of order 4812, step by step."""

from __future__ import annotations

from replay.stub_llm import ChatRequest, Reply, ScriptedPolicy, ToolCall

INSTRUCTION = "Refund order 4812 and notify the customer."


def refund_policy() -> ScriptedPolicy:
    """Return the scripted model for the refund of order 4812."""
    return ScriptedPolicy(
        [
            Reply(tool_calls=(ToolCall("lookup_order", {"order_id": 4812}),)),
            Reply(
                tool_calls=(
                    ToolCall(
                        "issue_refund",
                        {
                            "order_id": 4812,
                            "amount": 35.0,
                            "reason": "customer request",
                            "idempotency_key": "refund-4812",
                        },
                    ),
                )
            ),
            Reply(
                tool_calls=(
                    ToolCall("update_order_status", {"order_id": 4812, "status": "refunded"}),
                )
            ),
            Reply(
                tool_calls=(
                    ToolCall(
                        "write_ledger_entry",
                        {"order_id": 4812, "amount": -35.0, "memo": "refund order 4812"},
                    ),
                )
            ),
            Reply(
                tool_calls=(
                    ToolCall(
                        "send_email",
                        {
                            "customer_id": 17,
                            "template": "refund",
                            "subject": "Your refund for order 4812",
                            "body": "Hi Mia, we refunded $35.00 for order 4812.",
                        },
                    ),
                )
            ),
        ],
        final="I refunded $35.00 for order 4812 and emailed Mia Li to let her know.",
    )


def naive_refund_policy() -> ScriptedPolicy:
    """The same refund by a model that never sends an idempotency key.

    It does the right thing on a good day; when the refund call is delivered
    twice (the ``duplicate`` fault: a retried request whose first response was
    lost) the shop pays twice.
    """
    policy = refund_policy()
    turns = list(policy.turns)
    (call,) = turns[1].tool_calls
    args = {k: v for k, v in call.arguments.items() if k != "idempotency_key"}
    turns[1] = Reply(tool_calls=(ToolCall(call.name, args),))
    return ScriptedPolicy(turns, final=policy.final)


OVER_REFUND_ANSWER = (
    "I cannot refund $500.00 for order 4812: only $35.00 was paid, so I changed nothing. "
    "I can refund the $35.00 if you want."
)
"""What the model answers when asked to refund more than the order was paid."""


def over_refund_policy() -> ScriptedPolicy:
    """The scripted model asked to refund $500 of a $35 order: it checks the order, refuses.

    The refrain case ``refund-4812-too-much``: success is what the agent does not do.
    """
    return ScriptedPolicy(
        [Reply(tool_calls=(ToolCall("lookup_order", {"order_id": 4812}),))],
        final=OVER_REFUND_ANSWER,
    )


class PromptVersionPolicy:
    """The stub model as a prompt change would move it: with a "v2" system prompt
    it looks up the wrong order (4813) first — a regression offline replay catches.
    """

    def __init__(self) -> None:
        self.v1 = refund_policy()
        turns = list(self.v1.turns)
        turns[0] = Reply(tool_calls=(ToolCall("lookup_order", {"order_id": 4813}),))
        self.v2 = ScriptedPolicy(turns, final=self.v1.final)

    def __call__(self, request: ChatRequest) -> Reply:
        system = next((m["content"] for m in request.messages if m["role"] == "system"), "")
        return (self.v2 if "v2" in system else self.v1)(request)


CHAT_USER_TURNS = (
    "Hi, I'd like a refund for my order, it was the wrong size.",
    "It's order 4812.",
    "Thank you, that's all. ###STOP###",
)
"""What the simulated customer of the chat case says, turn by turn."""


class RefundChatPolicy:
    """The stub model for the multi-turn refund: it plays both the agent and the customer.

    Requests whose system prompt casts the model as the customer (the
    simulated user's) get the customer's script; the others get the agent's:
    ask for the order number, then the refund of ``refund_policy``, then the
    answer. ``ask`` is the agent's question (an agent-only change varies it).
    """

    def __init__(self, ask: str = "Sure, which order number is it?") -> None:
        refund = refund_policy()
        self.agent = ScriptedPolicy([Reply(content=ask), *refund.turns], final=refund.final)
        self.user = ScriptedPolicy([Reply(content=text) for text in CHAT_USER_TURNS])

    def __call__(self, request: ChatRequest) -> Reply:
        system = next((m["content"] for m in request.messages if m["role"] == "system"), "")
        return (self.user if "You play a customer" in system else self.agent)(request)
