"""The stub LLM's OpenAI Responses API, driven through the official SDK and openai-agents."""

from __future__ import annotations

import asyncio
import http.client
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from replay.stub_llm import (
    ChatRequest,
    EchoPolicy,
    Fail,
    JudgePolicy,
    Reply,
    ScriptedPolicy,
    StubLLM,
    ToolCall,
)

WEATHER_ARGS = {"city": "Paris", "unit": "celsius"}
ARGUMENTS = json.dumps(WEATHER_ARGS)
SUNNY = "It is sunny in Paris today."
FINAL = "Bye."
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
        "strict": True,
    },
    {"type": "web_search"},  # not a function: the policies never see it
]
USER: dict[str, Any] = {"role": "user", "content": "Weather in Paris?"}
EVENTS = TypeAdapter(ResponseStreamEvent)


def text_events(words: int) -> list[str]:
    """The event types streaming a text of ``words`` words."""
    return [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * words,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]


TEXT_EVENTS = text_events(len(SUNNY.split()))
TOOL_EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    *["response.function_call_arguments.delta"] * 3,
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.completed",
]


def weather_script() -> ScriptedPolicy:
    return ScriptedPolicy(
        [Reply(tool_calls=(ToolCall("get_weather", WEATHER_ARGS),)), Reply(content=SUNNY)],
        final=FINAL,
    )


@contextmanager
def client_of(stub: StubLLM, **options: Any) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=stub.openai_base_url, api_key="test", max_retries=0, **options
    ) as client:
        yield client


def tool_turn(call_id: str = "call_x") -> list[Any]:
    """The input after the model called get_weather and the tool answered."""
    return [
        USER,
        {
            "type": "function_call",
            "id": "fc_x",
            "call_id": call_id,
            "name": "get_weather",
            "arguments": ARGUMENTS,
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": call_id, "output": "sunny, 24C"},
    ]


def raw_events(stub: StubLLM, **body: Any) -> list[tuple[str, dict[str, Any]]]:
    """The (event name, data) pairs of a streamed response, read off the wire."""
    with (
        client_of(stub) as client,
        client.responses.with_streaming_response.create(**body, stream=True) as response,
    ):
        lines = [line for line in response.iter_lines() if line]
    names = [line.removeprefix("event: ") for line in lines[0::2]]
    data = [json.loads(line.removeprefix("data: ")) for line in lines[1::2]]
    assert all(line.startswith("event: ") for line in lines[0::2])
    return list(zip(names, data, strict=True))


# --------------------------------------------------------------------------- plain responses


def test_text_response_validates_in_the_sdk_types(stub_llm: StubLLM) -> None:
    with client_of(stub_llm) as client:
        raw = client.responses.with_raw_response.create(
            model="gpt-test",
            instructions="You are terse.",
            input="hello world",
            temperature=0.2,
            tools=TOOLS,
        )
    response = Response.model_validate(json.loads(raw.text))  # validated; the SDK only constructs
    assert response.id == "resp_stub_1"
    assert response.object == "response"
    assert response.status == "completed"
    assert response.model == "gpt-test"
    assert response.instructions == "You are terse."
    assert response.temperature == 0.2
    assert response.output_text == "echo: hello world"
    [item] = response.output
    assert item.type == "message"
    assert item.id == "msg_stub_1"
    assert item.role == "assistant"
    assert [tool.type for tool in response.tools] == ["function"]
    assert response.usage is not None
    assert response.usage.input_tokens == 7  # "You are terse." + "hello world": 25 chars
    assert response.usage.output_tokens == 5  # "echo: hello world": 17 chars
    assert response.usage.total_tokens == 12
    assert response.usage.input_tokens_details.cached_tokens == 0
    assert response.usage.output_tokens_details.reasoning_tokens == 0
    assert raw.parse() == response


def test_tool_turn_then_final_text_turn() -> None:
    with StubLLM(weather_script()) as stub, client_of(stub) as client:
        first = client.responses.create(model="m", input=[USER], tools=TOOLS)
        [call] = first.output
        assert call.type == "function_call"
        assert (call.id, call.call_id) == ("fc_stub_1", "call_stub_1")
        assert (call.name, json.loads(call.arguments)) == ("get_weather", WEATHER_ARGS)
        assert call.status == "completed"
        assert first.output_text == ""
        # The client sends the output back with the tool's answer, as agents do (store=False).
        conversation: list[Any] = [
            USER,
            *(item.model_dump(exclude_none=True) for item in first.output),
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 24C"},
        ]
        second = client.responses.create(model="m", input=conversation, tools=TOOLS)
        assert second.output_text == SUNNY
        assert second.id == "resp_stub_2"
        conversation += [item.model_dump(exclude_none=True) for item in second.output]
        conversation.append({"role": "user", "content": "thanks"})
        third = client.responses.create(model="m", input=conversation, tools=TOOLS, store=False)
        assert third.output_text == FINAL


def test_text_and_calls_in_one_response_are_one_assistant_turn() -> None:
    policy = ScriptedPolicy(
        [
            Reply(
                content="Checking two cities.",
                tool_calls=(
                    ToolCall("get_weather", {"city": "Paris"}),
                    ToolCall("get_weather", {"city": "Rome"}),
                ),
            ),
            Reply(content=SUNNY),
        ]
    )
    with StubLLM(policy) as stub, client_of(stub) as client:
        first = client.responses.create(model="m", input="Paris and Rome?", tools=TOOLS)
        assert [item.type for item in first.output] == ["message", "function_call", "function_call"]
        assert [item.id for item in first.output] == ["msg_stub_1", "fc_stub_1", "fc_stub_2"]
        outputs = [
            {"type": "function_call_output", "call_id": item.call_id, "output": "sunny"}
            for item in first.output
            if item.type == "function_call"
        ]
        second = client.responses.create(
            model="m",
            input=[
                {"role": "user", "content": "Paris and Rome?"},
                *(item.model_dump() for item in first.output),
                *outputs,
            ],
            tools=TOOLS,
        )
    assert first.output_text == "Checking two cities."
    assert second.output_text == SUNNY


def input_text(text: str) -> dict[str, str]:
    return {"type": "input_text", "text": text}


class RecordingPolicy:
    def __init__(self) -> None:
        self.seen: list[ChatRequest] = []

    def __call__(self, request: ChatRequest) -> Reply:
        self.seen.append(request)
        return Reply(content="ok")


def test_function_call_output_round_trip_normalizes_like_chat_completions() -> None:
    policy = RecordingPolicy()
    with StubLLM(policy) as stub, client_of(stub) as client:
        client.responses.create(
            model="m",
            instructions="sys",
            tools=TOOLS,
            input=[
                {"role": "developer", "content": "be brief"},
                {"type": "message", "role": "user", "content": [input_text("weather?")]},
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "get_weather",
                    "arguments": ARGUMENTS,
                },
                {"type": "function_call_output", "call_id": "c1", "output": [input_text("sunny")]},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"role": "assistant", "content": [{"type": "output_text", "text": "It is sunny."}]},
                {"role": "user", "content": "thanks"},
            ],
        )
        client.chat.completions.create(
            model="m",
            tools=[{"type": "function", "function": {"name": "get_weather"}}],
            messages=[
                {"role": "system", "content": "sys"},
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "weather?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ARGUMENTS},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "assistant", "content": "It is sunny."},
                {"role": "user", "content": "thanks"},
            ],
        )
    from_responses, from_chat = policy.seen
    assert from_responses.api == "responses"
    assert from_chat.api == "openai"
    assert from_responses.tools == from_chat.tools == ["get_weather"]
    assert from_responses.messages == from_chat.messages
    assert [m["role"] for m in from_responses.messages] == [
        "system",
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]


def test_echo_and_judge_policies_answer_responses() -> None:
    with StubLLM(EchoPolicy()) as stub, client_of(stub) as client:
        echoed = client.responses.create(model="m", input=[{"role": "user", "content": "hi"}])
    assert echoed.output_text == "echo: hi"
    judge = JudgePolicy(rules=(("apolog", "pass"),), default="fail")
    with StubLLM(judge) as stub, client_of(stub) as client:
        verdict = client.responses.create(model="judge", input="The agent apologised.")
    assert json.loads(verdict.output_text)["verdict"] == "pass"


# --------------------------------------------------------------------------- streaming


def test_streamed_text_matches_non_streamed(stub_llm: StubLLM) -> None:
    with client_of(stub_llm) as client:
        plain = client.responses.create(model="m", input="Weather in Paris?")
        stream = client.responses.create(model="m", input="Weather in Paris?", stream=True)
        with stream:
            events = list(stream)
    text = "echo: Weather in Paris?"
    assert [e.type for e in events] == text_events(4)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == text
    created, final = events[0], events[-1]
    assert created.type == "response.created"
    assert created.response.status == "in_progress"
    assert created.response.output == []
    assert created.response.usage is None
    assert final.type == "response.completed"
    assert final.response.output_text == text
    expected = plain.model_dump()
    expected["id"], expected["output"][0]["id"] = "resp_stub_2", "msg_stub_2"
    assert final.response.model_dump() == expected


def test_streamed_events_are_the_real_sequence_and_validate() -> None:
    with StubLLM(weather_script()) as stub:
        tool_events = raw_events(stub, model="m", input=[USER], tools=TOOLS)
        reply_events = raw_events(stub, model="m", input=tool_turn(), tools=TOOLS)
    assert [name for name, _ in tool_events] == TOOL_EVENTS
    assert [name for name, _ in reply_events] == TEXT_EVENTS
    for events in (tool_events, reply_events):
        for number, (name, data) in enumerate(events):
            event = EVENTS.validate_python(data)  # validated; the SDK only constructs
            assert event.type == data["type"] == name
            assert event.sequence_number == number
    added = EVENTS.validate_python(tool_events[2][1])
    assert added.type == "response.output_item.added"
    assert added.item.type == "function_call"
    assert (added.item.id, added.item.call_id, added.item.arguments) == (
        "fc_stub_1",
        "call_stub_1",
        "",
    )
    deltas = "".join(d["delta"] for n, d in tool_events if n.endswith("arguments.delta"))
    done = tool_events[-3][1]
    assert deltas == done["arguments"] == ARGUMENTS
    assert done["item_id"] == "fc_stub_1"
    completed = Response.model_validate(reply_events[-1][1]["response"])
    assert completed.output_text == SUNNY
    assert completed.usage is not None
    assert completed.usage.total_tokens == (
        completed.usage.input_tokens + completed.usage.output_tokens
    )


def test_stream_helper_and_final_response() -> None:
    with StubLLM(weather_script()) as stub, client_of(stub) as client:
        with client.responses.stream(model="m", input=[USER], tools=TOOLS[:1]) as stream:
            events = [event.type for event in stream]
            first = stream.get_final_response()
        with client.responses.stream(model="m", input=tool_turn(), tools=TOOLS[:1]) as stream:
            texts = [event.delta for event in stream if event.type == "response.output_text.delta"]
            second = stream.get_final_response()
    assert events == TOOL_EVENTS
    [call] = first.output
    assert call.type == "function_call"
    assert call.parsed_arguments == WEATHER_ARGS  # strict tool: the helper parses the arguments
    assert "".join(texts) == second.output_text == SUNNY


def test_async_client() -> None:
    async def run(stub: StubLLM) -> None:
        async with openai.AsyncOpenAI(
            base_url=stub.openai_base_url, api_key="test", max_retries=0
        ) as client:
            first = await client.responses.create(model="m", input=[USER], tools=TOOLS)
            assert first.output[0].type == "function_call"
            stream = await client.responses.create(
                model="m", input=tool_turn(), tools=TOOLS, stream=True
            )
            async with stream:
                events = [event async for event in stream]
            assert [event.type for event in events] == TEXT_EVENTS
            async with client.responses.stream(model="m", input=tool_turn()) as helper:
                async for _ in helper:
                    pass
                final = await helper.get_final_response()
            assert final.output_text == SUNNY

    with StubLLM(weather_script()) as stub:
        asyncio.run(run(stub))


# --------------------------------------------------------------------------- errors, flakes


@pytest.mark.parametrize("stream", [False, True])
def test_fail_answers_its_http_status(stream: bool) -> None:
    with (
        StubLLM(lambda request: Fail(429, "slow down")) as stub,
        client_of(stub) as client,
        pytest.raises(openai.RateLimitError) as error,
    ):
        client.responses.create(model="m", input="hi", stream=stream)
    assert error.value.status_code == 429
    assert error.value.body == {"message": "slow down", "type": "stub_failure"}


def test_reply_delay_trips_the_client_timeout() -> None:
    with (
        StubLLM(ScriptedPolicy([Reply(content="late", delay=1.0)])) as stub,
        client_of(stub, timeout=0.1) as client,
        pytest.raises(openai.APITimeoutError),
    ):
        client.responses.create(model="m", input="hi")


def test_flakes_repeat_the_previous_turn_with_fresh_ids() -> None:
    with StubLLM(weather_script(), flake_rate=1.0) as stub, client_of(stub) as client:
        stopped = client.responses.create(model="m", input=[USER])
        repeated = client.responses.create(model="m", input=tool_turn())
    assert stopped.output_text == FINAL  # a flake at turn 0 stops early
    [call] = repeated.output  # later, the previous turn's tool call again
    assert call.type == "function_call"
    assert (call.call_id, json.loads(call.arguments)) == ("call_stub_1", WEATHER_ARGS)


def post(stub: StubLLM, body: bytes) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", stub.port, timeout=5)
    try:
        conn.request("POST", "/v1/responses", body=body, headers={"Content-Type": "x/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": 3, "input": "hi"}, "'model' must be a string"),
        ({"model": "m"}, "'input' is required"),
        ({"model": "m", "input": 3}, "'input' must be a string or a list of input items"),
        ({"model": "m", "input": ["hi"]}, "input[0] must be an object"),
        ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0]: 'role'"),
        ({"model": "m", "input": [{"role": "user", "content": 3}]}, "content must be a string"),
        ({"model": "m", "input": [{"type": "item_reference", "id": "x"}]}, "unsupported item"),
        (
            {"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
            "input[0]: function_call item needs a string 'call_id'",
        ),
        (
            {"model": "m", "input": [{"type": "function_call_output", "output": "x"}]},
            "function_call_output item needs a string 'call_id'",
        ),
        (
            {"model": "m", "input": [{**tool_turn()[1], "arguments": WEATHER_ARGS}]},
            "'arguments' must be a JSON string",
        ),
        ({"model": "m", "input": "hi", "instructions": ["x"]}, "'instructions' must be a string"),
        ({"model": "m", "input": "hi", "tools": {"type": "function"}}, "'tools' must be a list"),
        ({"model": "m", "input": "hi", "tools": [{"type": "function"}]}, "tools[0]: a function"),
        ({"model": "m", "input": "hi", "previous_response_id": "resp_1"}, "full conversation"),
        ({"model": "m", "input": "hi", "conversation": "conv_1"}, "no conversation state"),
    ],
)
def test_malformed_request_is_a_400(stub_llm: StubLLM, body: dict[str, Any], message: str) -> None:
    status, answer = post(stub_llm, json.dumps(body).encode())
    assert status == 400
    assert answer["error"]["type"] == "invalid_request_error"
    assert message in answer["error"]["message"]


def test_malformed_json_is_a_400(stub_llm: StubLLM) -> None:
    status, answer = post(stub_llm, b"{not json")
    assert status == 400
    assert answer["error"]["message"].startswith("malformed JSON body")


def test_previous_response_id_is_refused_through_the_sdk(stub_llm: StubLLM) -> None:
    with client_of(stub_llm) as client, pytest.raises(openai.BadRequestError) as error:
        client.responses.create(model="m", input="and then?", previous_response_id="resp_stub_1")
    assert "send the full conversation in 'input' (as with store=False)" in error.value.message


# --------------------------------------------------------------------------- openai-agents


def weather_agent(client: openai.AsyncOpenAI, seen: list[str]) -> Any:
    from agents import Agent, OpenAIResponsesModel, function_tool

    @function_tool
    def get_weather(city: str, unit: str) -> str:
        """Current weather in a city."""
        seen.append(f"{city}/{unit}")
        return f"sunny, 24 degrees {unit}"

    model = OpenAIResponsesModel(model="gpt-test", openai_client=client)
    return Agent(name="weather", instructions="Tell the weather.", tools=[get_weather], model=model)


def async_client(stub: StubLLM) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=stub.openai_base_url, api_key="test", max_retries=0)


@pytest.fixture
def event_loop_of_run_sync() -> Iterator[asyncio.AbstractEventLoop]:
    """The loop `Runner.run_sync` will use (it takes the thread's), closed afterwards."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@pytest.fixture
def no_tracing() -> None:
    """Turn off openai-agents tracing, which would try to reach api.openai.com.

    It stays off: turning it back on would let later agent runs in this process try too.
    """
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)


@pytest.mark.usefixtures("no_tracing")
def test_openai_agents_runs_a_tool_loop_on_the_responses_api(
    event_loop_of_run_sync: asyncio.AbstractEventLoop,
) -> None:
    from agents import Runner

    seen: list[str] = []
    with StubLLM(weather_script()) as stub:
        client = async_client(stub)
        try:
            result = Runner.run_sync(weather_agent(client, seen), "Weather in Paris?")
        finally:
            event_loop_of_run_sync.run_until_complete(client.close())
        requests = stub.requests
    assert result.final_output == SUNNY
    assert seen == ["Paris/celsius"]
    assert len(requests) == 2
    assert requests[0]["instructions"] == "Tell the weather."
    assert [tool["name"] for tool in requests[0]["tools"]] == ["get_weather"]
    assert [item.get("type") for item in requests[1]["input"]] == [
        None,
        "function_call",
        "function_call_output",
    ]
    assert requests[1]["input"][2] == {
        "type": "function_call_output",
        "call_id": "call_stub_1",
        "output": "sunny, 24 degrees celsius",
    }


@pytest.mark.usefixtures("no_tracing")
def test_openai_agents_streams_a_tool_loop_on_the_responses_api() -> None:
    from agents import Runner

    async def run(stub: StubLLM, seen: list[str]) -> Any:
        async with async_client(stub) as client:
            result = Runner.run_streamed(weather_agent(client, seen), "Weather in Paris?")
            kinds = {event.type async for event in result.stream_events()}
        assert "raw_response_event" in kinds
        return result.final_output

    seen: list[str] = []
    with StubLLM(weather_script()) as stub:
        assert asyncio.run(run(stub, seen)) == SUNNY
        assert all(body["stream"] is True for body in stub.requests)
    assert seen == ["Paris/celsius"]
