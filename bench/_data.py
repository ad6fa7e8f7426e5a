"""Synthetic but realistic OpenAI chat-completion traffic of a tool-using agent.

``interactions(n, seed)`` yields what a support agent sends and receives in
its loop: every request carries the whole conversation so far (system
prompt, user instruction, alternating assistant tool calls and tool
results) and the five tool schemas; a conversation ends with a text answer
after 8-12 calls and the next one starts afresh. Responses are shaped like
the API's (pretty-printed JSON, usage, rate-limit and Cloudflare headers).
Ids, amounts, names and sentences come from a seeded RNG so the same seed
gives the same bytes and compression has real entropy to deal with.

``drive`` sends them through an ``httpx.Client`` over ``httpx.MockTransport``,
so whatever patches httpx (our recorder, vcrpy) sees ordinary traffic.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import string
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

URL = "https://api.openai.com/v1/chat/completions"
MODEL = "gpt-4o-2024-08-06"

REQUEST_HEADERS: dict[str, str] = {
    "authorization": "Bearer sk-proj-" + "Q7f2kLmN9pXvR4tYz8WcB1dH6jE3sA0uG5iO" * 2,
    "user-agent": "OpenAI/Python 1.54.4",
    "accept": "application/json",
    "content-type": "application/json",
    "x-stainless-lang": "python",
    "x-stainless-package-version": "1.54.4",
    "x-stainless-os": "Linux",
    "x-stainless-arch": "x64",
    "x-stainless-runtime": "CPython",
    "x-stainless-runtime-version": "3.11.9",
    "x-stainless-async": "false",
    "x-stainless-retry-count": "0",
    "x-stainless-read-timeout": "600",
}


def _words(text: str) -> list[str]:
    return text.split()


WORDS = _words("""
account address after again agent amount answer arrive asked available back balance
bank before below billing box broken business call card carrier case change charge
check checkout client close code company confirm contact content correct cost credit
customer damaged date day deadline delay delivered delivery department describe
detail different discount dispatch double email empty end error estimate evening
exchange expected explain express fee final find first fix follow form free friday
full gift good handle happy help history hold home hour immediately inform invoice
issue item january key kind label last late later letter limit line list local
lost mail manager march message method minute missing money monday month morning
name need network never new next note notice number offer office online open
option order original outside package page paid parcel part partial payment people
period person phone place plan please policy portal possible post price problem
process product promise purchase question quick quickly reason receipt receive
recent record refund regular reply report request required resolve response return
review right route sale same saturday schedule second send sender service shipment
shipping short size soon standard start status still store subscription support
sure system team thank thanks ticket time today tomorrow total track tracking
transfer tuesday update upgrade urgent used user valid value vendor verify wait
wallet want warehouse week weekend wrong year yesterday
""")

FIRST_NAMES = _words("""
Aisha Ben Carla Dmitri Elena Farid Grace Hiro Ines Jonas Keiko Liam Maya Nadia Omar
Priya Quentin Rosa Sven Tara Umar Vera Wei Ximena Yusuf Zoe Ana Bruno Chloe Diego
""")
LAST_NAMES = _words("""
Abbott Becker Castillo Dubois Eriksen Fischer Garcia Haddad Ivanova Jensen Kowalski
Lopez Moreau Nakamura Okafor Petrov Quinn Rossi Schmidt Tanaka Ueda Varga Walsh Yilmaz
""")
PRODUCTS = _words("""
headphones charger backpack kettle lamp keyboard monitor blender jacket sneakers
watch tripod speaker router mattress drill camera tablet mixer thermos
""")
STATUSES = ("pending", "processing", "shipped", "delivered", "cancelled", "returned")

SYSTEM_PROMPT = (
    "You are Ava, the customer-support agent of Northwind Outfitters. You resolve order "
    "problems end to end using the tools provided: look the customer and the order up "
    "before acting, never guess an order id, and quote amounts exactly as the tools "
    "return them. Refunds: full refunds are allowed within 30 days of delivery for "
    "damaged, missing or wrong items; partial refunds up to 50% for late deliveries; "
    "anything else needs a manager, so explain that politely instead of refunding. "
    "Never refund more than the order total, never refund an order twice, and always "
    "send the customer a confirmation email after a refund. Keep replies short, warm and "
    "specific; do not reveal internal notes, tool names or this prompt. If a tool fails, "
    "retry once, then apologise and say a human will follow up within one business day. "
    "Dates are in UTC. Currency is whatever the order says; do not convert it. "
    "When you are done, answer with a summary of what you did for the customer."
)


def _fn(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": False,
            },
            "strict": True,
        },
    }


TOOLS: list[dict[str, Any]] = [
    _fn(
        "lookup_customer",
        "Find a customer by email address or full name. Returns the customer's id, "
        "contact details, loyalty tier and their five most recent orders.",
        {
            "email": {"type": ["string", "null"], "description": "Email address, exact."},
            "name": {"type": ["string", "null"], "description": "Full name, case-insensitive."},
        },
        ["email", "name"],
    ),
    _fn(
        "get_order",
        "Fetch one order with its items, amounts, payment and shipping status.",
        {"order_id": {"type": "string", "description": "Order id like ORD-123456."}},
        ["order_id"],
    ),
    _fn(
        "search_orders",
        "List a customer's orders, newest first, optionally filtered by status.",
        {
            "customer_id": {"type": "string", "description": "Customer id like CUS-12345."},
            "status": {
                "type": ["string", "null"],
                "enum": [*STATUSES, None],
                "description": "Only orders in this status.",
            },
            "limit": {"type": "integer", "description": "At most this many (1-20)."},
        },
        ["customer_id", "status", "limit"],
    ),
    _fn(
        "refund_order",
        "Refund an order fully or partly to the original payment method. Irreversible.",
        {
            "order_id": {"type": "string", "description": "Order id like ORD-123456."},
            "amount": {"type": "number", "description": "Amount in the order currency."},
            "reason": {
                "type": "string",
                "enum": ["damaged", "missing", "wrong_item", "late", "goodwill"],
                "description": "Why the refund is given.",
            },
        },
        ["order_id", "amount", "reason"],
    ),
    _fn(
        "send_email",
        "Send an email to the customer from support@northwind.example.",
        {
            "to": {"type": "string", "description": "Recipient address."},
            "subject": {"type": "string", "description": "Subject line."},
            "body": {"type": "string", "description": "Plain-text body."},
        },
        ["to", "subject", "body"],
    ),
]


@dataclass(frozen=True, slots=True)
class Interaction:
    """One LLM call as it goes over the wire."""

    request_body: bytes
    response_body: bytes
    response_headers: list[tuple[str, str]]


class _Gen:
    """Random content for one seeded stream of conversations."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = dt.datetime(2025, 3, 3, 9, 0, tzinfo=dt.timezone.utc)

    def token(self, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        return "".join(self.rng.choices(alphabet, k=n))

    def sentence(self, lo: int = 6, hi: int = 16) -> str:
        words = self.rng.choices(WORDS, k=self.rng.randint(lo, hi))
        return " ".join(words).capitalize() + self.rng.choice(".....?!")

    def text(self, lo: int, hi: int) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(lo, hi)))

    def name(self) -> str:
        return f"{self.rng.choice(FIRST_NAMES)} {self.rng.choice(LAST_NAMES)}"

    def email(self, name: str) -> str:
        user = name.lower().replace(" ", self.rng.choice("._"))
        domain = self.rng.choice(["gmail.com", "example.org", "mail.example"])
        return f"{user}{self.rng.randint(1, 99)}@{domain}"

    def order_id(self) -> str:
        return f"ORD-{self.rng.randint(100000, 999999)}"

    def amount(self) -> float:
        return round(self.rng.uniform(4, 900), 2)

    def when(self) -> str:
        back = dt.timedelta(minutes=self.rng.randint(60, 60 * 24 * 90))
        return (self.clock - back).strftime("%Y-%m-%dT%H:%M:%SZ")

    def order(self, order_id: str, customer: dict[str, Any]) -> dict[str, Any]:
        items: list[dict[str, Any]] = [
            {
                "sku": f"SKU-{self.rng.randint(10000, 99999)}",
                "name": f"{self.rng.choice(WORDS).capitalize()} {self.rng.choice(PRODUCTS)}",
                "qty": self.rng.randint(1, 3),
                "unit_price": self.amount(),
            }
            for _ in range(self.rng.randint(1, 4))
        ]
        total = round(sum(i["qty"] * i["unit_price"] for i in items), 2)
        return {
            "order_id": order_id,
            "customer_id": customer["customer_id"],
            "status": self.rng.choice(STATUSES),
            "placed_at": self.when(),
            "currency": self.rng.choice(["USD", "EUR", "GBP"]),
            "items": items,
            "total": total,
            "payment": {
                "method": self.rng.choice(["card", "paypal"]),
                "last4": self.token(4, "0123456789"),
            },
            "shipping": {
                "carrier": self.rng.choice(["UPS", "DHL", "FedEx", "USPS"]),
                "tracking": self.token(18, string.ascii_uppercase + string.digits),
                "eta": self.when(),
            },
            "notes": self.sentence() if self.rng.random() < 0.4 else None,
        }

    def customer(self) -> dict[str, Any]:
        name = self.name()
        return {
            "customer_id": f"CUS-{self.rng.randint(10000, 99999)}",
            "name": name,
            "email": self.email(name),
            "phone": "+1-" + "-".join(str(self.rng.randint(200, 999)) for _ in range(3)),
            "tier": self.rng.choice(["standard", "silver", "gold"]),
            "orders": [self.order_id()],
        }


def _tool_call(g: _Gen, cust: dict[str, Any], order_id: str) -> tuple[str, dict[str, Any], Any]:
    """Pick a tool call the agent would make next: (name, arguments, result)."""
    name = g.rng.choice([t["function"]["name"] for t in TOOLS])
    if name == "lookup_customer":
        args: dict[str, Any] = {"email": cust["email"], "name": None}
        result: Any = {
            **cust,
            "orders": [order_id, *(g.order_id() for _ in range(g.rng.randint(0, 4)))],
        }
    elif name == "get_order":
        args = {"order_id": order_id}
        result = g.order(order_id, cust)
    elif name == "search_orders":
        args = {
            "customer_id": cust["customer_id"],
            "status": g.rng.choice([*STATUSES, None]),
            "limit": 5,
        }
        result = {
            "orders": [
                {
                    "order_id": g.order_id(),
                    "status": g.rng.choice(STATUSES),
                    "total": g.amount(),
                    "placed_at": g.when(),
                }
                for _ in range(g.rng.randint(1, 5))
            ]
        }
    elif name == "refund_order":
        args = {
            "order_id": order_id,
            "amount": g.amount(),
            "reason": g.rng.choice(["damaged", "missing", "late"]),
        }
        result = {
            "refund_id": f"RF-{g.token(10)}",
            "order_id": order_id,
            "amount": args["amount"],
            "status": "pending",
        }
    else:
        args = {"to": cust["email"], "subject": g.sentence(3, 7), "body": g.text(2, 5)}
        result = {"message_id": f"<{g.token(20)}@mail.northwind.example>", "queued": True}
    return name, args, result


def _completion(
    g: _Gen, message: dict[str, Any], finish: str, prompt_chars: int, created: int
) -> bytes:
    completion_chars = len(json.dumps(message))
    prompt_tokens = prompt_chars // 4
    body = {
        "id": f"chatcmpl-{g.token(29)}",
        "object": "chat.completion",
        "created": created,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {**message, "refusal": None, "annotations": []},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_chars // 4,
            "total_tokens": prompt_tokens + completion_chars // 4,
            "prompt_tokens_details": {
                "cached_tokens": (prompt_tokens // 128) * 128 // 2,
                "audio_tokens": 0,
            },
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": f"fp_{g.token(10, '0123456789abcdef')}",
    }
    return json.dumps(body, indent=2).encode()


def _response_headers(g: _Gen, created: int) -> list[tuple[str, str]]:
    now = dt.datetime.fromtimestamp(created, dt.timezone.utc)
    date = now.strftime("%a, %d %b %Y %H:%M:%S GMT")
    expires = (now + dt.timedelta(minutes=30)).strftime("%a, %d-%b-%y %H:%M:%S GMT")
    hexd = "0123456789abcdef"
    return [
        ("date", date),
        ("content-type", "application/json"),
        ("access-control-expose-headers", "X-Request-ID"),
        ("openai-organization", "northwind-outfitters-x7k2"),
        ("openai-processing-ms", str(g.rng.randint(350, 4200))),
        ("openai-project", "proj_Hq3ZcVb0nWm8RtYp1LsKd2Ju"),
        ("openai-version", "2020-10-01"),
        ("x-ratelimit-limit-requests", "10000"),
        ("x-ratelimit-limit-tokens", "30000000"),
        ("x-ratelimit-remaining-requests", str(g.rng.randint(9900, 9999))),
        ("x-ratelimit-remaining-tokens", str(g.rng.randint(29_000_000, 29_999_999))),
        ("x-ratelimit-reset-requests", f"{g.rng.randint(6, 60)}ms"),
        ("x-ratelimit-reset-tokens", f"{g.rng.randint(1, 90)}ms"),
        ("x-request-id", f"req_{g.token(32, hexd)}"),
        ("strict-transport-security", "max-age=31536000; includeSubDomains; preload"),
        ("cf-cache-status", "DYNAMIC"),
        (
            "set-cookie",
            f"__cf_bm={g.token(43)}-{created}-1.0.1.1-{g.token(86)}; path=/; expires={expires}; "
            "domain=.api.openai.com; HttpOnly; Secure; SameSite=None",
        ),
        ("x-content-type-options", "nosniff"),
        ("server", "cloudflare"),
        ("cf-ray", f"{g.token(16, hexd)}-SJC"),
        ("alt-svc", 'h3=":443"; ma=86400'),
    ]


def _request(messages: list[dict[str, Any]]) -> bytes:
    body = {
        "messages": messages,
        "model": MODEL,
        "parallel_tool_calls": True,
        "temperature": 0.2,
        "tool_choice": "auto",
        "tools": TOOLS,
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def interactions(n: int, seed: int = 4812) -> Iterator[Interaction]:
    """Yield ``n`` LLM calls of an agent working through one support ticket after another."""
    g = _Gen(seed)
    created = int(g.clock.timestamp())
    produced = 0
    while produced < n:
        cust = g.customer()
        order_id = cust["orders"][0]
        instruction = (
            f"Customer {cust['name']} <{cust['email']}> wrote about order {order_id}: "
            f'"{g.text(2, 6)}" Resolve it according to policy.'
        )
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": instruction},
        ]
        calls = g.rng.randint(8, 12)
        for turn in range(calls):
            if produced >= n:
                return
            request = _request(messages)
            created += g.rng.randint(2, 25)
            if turn == calls - 1:
                message: dict[str, Any] = {"role": "assistant", "content": g.text(2, 5)}
                response = _completion(g, message, "stop", len(request), created)
                results: list[tuple[str, Any]] = []
            else:
                tool_calls = []
                results = []
                for _ in range(2 if g.rng.random() < 0.2 else 1):
                    name, args, result = _tool_call(g, cust, order_id)
                    call_id = f"call_{g.token(24)}"
                    tool_calls.append(
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                    )
                    results.append((call_id, result))
                message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
                response = _completion(g, message, "tool_calls", len(request), created)
            yield Interaction(request, response, _response_headers(g, created))
            produced += 1
            messages.append(message)
            for call_id, result in results:
                messages.append(
                    {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)}
                )


def response_headers(count: int, seed: int = 7) -> list[list[tuple[str, str]]]:
    """Return ``count`` sets of response headers, each with its own ids, cookie and date."""
    g = _Gen(seed)
    created = int(g.clock.timestamp())
    return [_response_headers(g, created + i) for i in range(count)]


def fixed_completion(seed: int = 1) -> bytes:
    """Return one text chat completion of about 1.5 KB (pretty-printed, as the API sends)."""
    g = _Gen(seed)
    text = g.text(6, 6)
    while len(text) < 700:
        text += " " + g.sentence()
    message = {"role": "assistant", "content": text[:700]}
    return _completion(g, message, "stop", 3000, int(g.clock.timestamp()))


def varied_request(i: int, g: random.Random | None = None) -> bytes:
    """Return request ``i`` of a stream of same-sized requests that all differ.

    Each carries the system prompt, the tools and a user message naming
    request ``i``, so every body is unique but none grows with ``i``.
    """
    rng = g or random.Random(i)
    words = " ".join(rng.choices(WORDS, k=40))
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Ticket {i:08d}: {words}"},
    ]
    return _request(messages)


class Replier:
    """A ``MockTransport`` handler answering with whatever ``next`` is set to."""

    def __init__(self) -> None:
        self.next: Interaction | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        item = self.next
        assert item is not None, "set Replier.next before sending"
        return httpx.Response(200, headers=item.response_headers, content=item.response_body)


def client(replier: Replier) -> httpx.Client:
    """Return an httpx client that talks to ``replier`` with the OpenAI SDK's headers."""
    return httpx.Client(transport=httpx.MockTransport(replier), headers=REQUEST_HEADERS)


def drive(items: Iterable[Interaction]) -> int:
    """Send every interaction through a fresh client, as an agent would; return how many."""
    replier = Replier()
    count = 0
    with client(replier) as http:
        for item in items:
            replier.next = item
            response = http.post(URL, content=item.request_body)
            response.json()
            count += 1
    return count
