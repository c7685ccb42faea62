"""GeminiChatModel against the recorded ``generateContent`` traffic: what we send and what we make of it.

Every file of ``provider-traffic/gemini`` is replayed: the prompt of each interaction is rebuilt from
the recorded request, the request we send must mean what the recorded one meant (same URL, same
turns, parts, signatures and settings), and the recorded reply must map to the expected text, calls,
usage, finish reason or error. Non-streamed files run through ``call`` and ``acall``, streamed ones
through ``stream`` and ``astream``. The recordings were made through Google's SDK, which writes
bytes (``thoughtSignature``, ``inlineData.data``) in URL-safe base64 and keeps a stream's pieces
as separate parts; both are compared by meaning (the decoded bytes, the joined text).
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

from chatclient import (
    AssistantMessage,
    ChatClient,
    ChatResponse,
    FilePart,
    FinishReason,
    ImagePart,
    Message,
    Prompt,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from chatclient.errors import AuthenticationError, NotFoundError, ProviderError
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools.callback import ToolCallback
from chatclient.tools.resolve import resolve_tools
from providers._retry import RetryPolicy
from providers.gemini import GeminiChatModel, GeminiChatOptions
from providers.gemini._mapping import PARTS_METADATA_KEY
from tests.providers.fixtures import Replay, fixture_files, interactions
from tests.providers.model_events import Delta, assemble, chunks, deltas

PROVIDER = "gemini"
KEY = "AIza-test-0123456789-secret"
TOKEN = "ya29.test-access-token-secret"

SECRETS = {"mellon": "Welcome to Moria!", "radiance": "Life before Death"}


@tool(description="A tool that requires a password to retrieve a secret.")
def secret_retrieval_tool(password: str) -> str:
    return SECRETS[password]


TOOLS: dict[str, ToolCallback] = {cb.name: cb for cb in resolve_tools([secret_retrieval_tool])}

# ---------------------------------------------------------------------------------------- expected


@dataclass(frozen=True)
class Reply:
    text: str | None
    usage: tuple[int, int, int]
    """prompt, completion (candidates + thoughts), reasoning (thoughts)."""
    finish: FinishReason
    raw_finish: str
    id: str
    model: str
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    exact_text: bool = False
    keeps_parts: bool = False
    """Whether the message metadata keeps the reply's parts (thoughts or signatures)."""


@dataclass(frozen=True)
class Failure:
    error: type[ProviderError]
    status: int
    error_type: str
    code: str | None
    message_part: str


FLASH = "gemini-2.5-flash"
MELLON = ("secret_retrieval_tool", {"password": "mellon"})
RADIANCE = ("secret_retrieval_tool", {"password": "radiance"})
BAD_KEY = Failure(AuthenticationError, 400, "API_KEY_INVALID", "API_KEY_INVALID", "API key not valid")

EXPECTED: dict[str, list[Reply | Failure]] = {
    "a_plain_text": [
        Reply("To calculate 4200 + 42:", (13, 102, 25), FinishReason.STOP, "STOP", "SJfyaMbrNJKlqtsPvNOW8Ao", FLASH)
    ],
    "c_parallel_function_calls_roundtrip": [
        Reply(
            None,
            (70, 116, 76),
            FinishReason.TOOL_CALLS,
            "STOP",
            "AJnyaJv6GPulqtsP5Z6fgAs",
            FLASH,
            (MELLON, RADIANCE),
            keeps_parts=True,
        ),
        Reply(
            "The secrets have been retrieved.",
            (152, 37, 0),
            FinishReason.STOP,
            "STOP",
            "AZnyaNDpA8mcqtsP7cWI8Qo",
            FLASH,
        ),
    ],
    "d_stream_parallel_function_calls_roundtrip": [
        Reply(
            None,
            (70, 101, 61),
            FinishReason.TOOL_CALLS,
            "STOP",
            "G5nyaJuGE-yrqtsPmJHUoAs",
            FLASH,
            (MELLON, RADIANCE),
            keeps_parts=True,
        ),
        Reply(
            'The secrets associated with the passwords "mellon"',
            (211, 30, 0),
            FinishReason.STOP,
            "STOP",
            "HJnyaMGYMrKyqtsPvNjS0AY",
            FLASH,
        ),
    ],
    "d_stream_text": [
        Reply(
            "To find the sum of 4200 + 42", (13, 138, 75), FinishReason.STOP, "STOP", "VJfyaP7eE_6zmtkP4qLV6Ao", FLASH
        )
    ],
    "e_structured_output_json_schema": [
        Reply(
            '{\n  "city": "Mexico City",\n  "country": "Mexico"\n}',
            (8, 20, 0),
            FinishReason.STOP,
            "STOP",
            "EfsgaZT5JPbXz7IPqtGJkQ8",
            "gemini-2.0-flash",
            exact_text=True,
        ),
    ],
    "f_error_400_api_key_invalid": [BAD_KEY],
    "f_error_400_api_key_invalid_stream": [BAD_KEY],
    "f_error_404_model_not_found": [
        Failure(NotFoundError, 404, "NOT_FOUND", None, "models/this-model-does-not-exist-12345 is not found")
    ],
    "g_max_tokens": [
        Reply(
            "Here is a list of all 50 U",
            (9, 48, 38),
            FinishReason.LENGTH,
            "MAX_TOKENS",
            "NpnyaM_eI_iqqtsPybL8oAs",
            FLASH,
            exact_text=True,
        ),
    ],
    "h_thinking_stream": [
        Reply(
            "3",
            (30, 1947, 1947),
            FinishReason.STOP,
            "STOP",
            "g6RgaZHQOv-_qtsP9sujiAw",
            FLASH,
            exact_text=True,
            keeps_parts=True,
        ),
        Reply(
            "I don't remember.",
            (365, 83, 77),
            FinishReason.STOP,
            "STOP",
            "jKRgacW8KtGnqtsPq5PK2A8",
            FLASH,
            exact_text=True,
        ),
    ],
    "h_thinking_thought_parts": [
        Reply(
            'The primes below 400 that contain "79"',
            (30, 1890, 1754),
            FinishReason.STOP,
            "STOP",
            "gaRgacOXM6znqtsPy9_AmQY",
            FLASH,
            keeps_parts=True,
        ),
        Reply(
            "I do remember. They were:\n\n79\n179\n379",
            (881, 64, 46),
            FinishReason.STOP,
            "STOP",
            "gqRgaf37MNSQmtkPxNaniAw",
            FLASH,
            exact_text=True,
        ),
    ],
    "i_document_pdf_inline_data": [
        Reply(
            'The document contains the text "Hello, world!".',
            (273, 49, 39),
            FinishReason.STOP,
            "STOP",
            "mPaGadeFCr24qtsP6YPB0Qs",
            FLASH,
            exact_text=True,
        ),
    ],
    "i_image_inline_data": [
        Reply(
            "The image displays a three-dimensional jigsaw puzzle globe",
            (266, 179, 145),
            FinishReason.STOP,
            "STOP",
            "MGz5aOm0N87Qz7IP5OjdoAs",
            FLASH,
        ),
    ],
    "vertex_a_plain_text": [
        Reply(
            "The capital of France is Paris.\n",
            (13, 8, 0),
            FinishReason.STOP,
            "STOP",
            "1VpeaKq4CfH_2PgPh_z--AY",
            "gemini-2.0-flash",
            exact_text=True,
        ),
    ],
}


def test_every_recorded_file_is_covered() -> None:
    assert set(EXPECTED) == set(fixture_files(PROVIDER))
    for name, expected in EXPECTED.items():
        assert len(expected) == len(interactions(PROVIDER, name)), name


# ------------------------------------------------------------------ prompt from a recorded request


def _model_of(path: str) -> str:
    return path.split("/models/", 1)[1].split(":", 1)[0]


def _b64(data: str) -> str:
    """Standard base64 of data the SDK wrote in either alphabet."""
    return base64.b64encode(base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))).decode()


def _media(inline: dict[str, Any]) -> ImagePart | FilePart:
    kind = ImagePart if inline["mimeType"].startswith("image/") else FilePart
    return kind(data=_b64(inline["data"]), media_type=inline["mimeType"])


def prompt_from_recorded(request: dict[str, Any]) -> Prompt:
    """Our ``Prompt`` for a recorded request: the conversation, tools and settings it carries. A model
    turn keeps its recorded parts in the metadata, as our reply to it would have."""
    body = request["body"]
    messages: list[Message] = []
    for part in (body.get("systemInstruction") or {}).get("parts", []):
        messages.append(SystemMessage(part["text"]))
    calls: list[ToolCall] = []
    for turn in body["contents"]:
        parts = turn["parts"]
        if turn["role"] == "model":
            text = "".join(p["text"] for p in parts if "text" in p and not p.get("thought")) or None
            found = [p["functionCall"] for p in parts if "functionCall" in p]
            wanted = [ToolCall(id=c.get("id", ""), name=c["name"], arguments=json.dumps(c["args"])) for c in found]
            kept = [
                {**p, "thoughtSignature": _b64(p["thoughtSignature"])} if "thoughtSignature" in p else p for p in parts
            ]
            message = AssistantMessage(text, tool_calls=wanted, metadata={PARTS_METADATA_KEY: kept})
            calls = list(message.tool_calls)
            messages.append(message)
            continue
        results = [p["functionResponse"] for p in parts if "functionResponse" in p]
        if results:
            responses = [
                ToolResponse(id=call.id, name=r["name"], response_data=r["response"]["output"])
                for call, r in zip(calls, results, strict=True)
            ]
            messages.append(ToolResponseMessage(responses))
        texts = [p["text"] for p in parts if "text" in p]
        media = [_media(p["inlineData"]) for p in parts if "inlineData" in p]
        if texts or media:
            messages.append(UserMessage("".join(texts), media=media))
    config = body.get("generationConfig") or {}
    options: dict[str, Any] = {"model": _model_of(request["path"])}
    if "maxOutputTokens" in config:
        options["max_tokens"] = config["maxOutputTokens"]
    if "responseJsonSchema" in config:
        options["output_schema"] = config["responseJsonSchema"]
    thinking = config.get("thinkingConfig") or {}
    if "thinking_budget" in thinking:
        options["thinking_budget"] = thinking["thinking_budget"]
    if "include_thoughts" in thinking:
        options["include_thoughts"] = thinking["include_thoughts"]
    if "tools" in body:
        names = [d["name"] for t in body["tools"] for d in t["functionDeclarations"]]
        options["tool_callbacks"] = tuple(TOOLS[name] for name in names)
    return Prompt(messages, GeminiChatOptions(**options))


# ------------------------------------------------------------------ request semantics


def _snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def _normal_part(part: dict[str, Any]) -> dict[str, Any]:
    out = dict(part)
    if "thoughtSignature" in out:
        out["thoughtSignature"] = _b64(out["thoughtSignature"])
    if "inlineData" in out:
        out["inlineData"] = {**out["inlineData"], "data": _b64(out["inlineData"]["data"])}
    return out


def _normal_parts(parts: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    """Unsigned text pieces of one kind joined (the SDK keeps a stream's pieces apart); a user turn's
    parts in a fixed order (we send media before the text, as Google advises; the SDK sent it after)."""
    joined: list[dict[str, Any]] = []
    for part in map(_normal_part, parts):
        last = joined[-1] if joined else None
        if (
            last is not None
            and set(part) <= {"text", "thought"}
            and set(last) <= {"text", "thought"}
            and bool(last.get("thought")) == bool(part.get("thought"))
        ):
            joined[-1] = {**last, "text": last["text"] + part["text"]}
        else:
            joined.append(part)
    return sorted(joined, key=json.dumps) if role == "user" else joined


def semantics(body: dict[str, Any]) -> dict[str, Any]:
    """The parts of a request body that carry meaning, in one normal form."""
    config = {k: v for k, v in (body.get("generationConfig") or {}).items() if k != "responseModalities"}
    if "thinkingConfig" in config:
        config["thinkingConfig"] = {_snake_to_camel(k): v for k, v in config["thinkingConfig"].items()}
    tools = []
    for group in body.get("tools", []):
        for d in group["functionDeclarations"]:
            schema = d.get("parametersJsonSchema") or d.get("parameters") or {}
            tools.append((d["name"], d["description"], sorted(schema.get("properties", {})), schema.get("required")))
    return {
        "system": [p["text"] for p in (body.get("systemInstruction") or {}).get("parts", [])],
        "contents": [{"role": t["role"], "parts": _normal_parts(t["parts"], t["role"])} for t in body["contents"]],
        "generationConfig": config,
        "tools": tools,
    }


def assert_sent_like_recorded(replay: Replay, index: int, *, vertex: bool = False) -> None:
    sent = replay.sent[index]
    recorded = replay.recorded_request(index)
    assert sent.method == "POST"
    assert str(sent.url) == recorded["url"], "the same endpoint, model and mode"
    if vertex:
        assert sent.headers["authorization"] == f"Bearer {TOKEN}" and "x-goog-api-key" not in sent.headers
    else:
        assert sent.headers["x-goog-api-key"] == KEY and "key=" not in str(sent.url)
    assert sent.headers["content-type"] == "application/json"
    assert semantics(replay.sent_json(index)) == semantics(recorded["body"])


# ------------------------------------------------------------------ response mapping


def assert_reply(response: ChatResponse, expected: Reply) -> None:
    if expected.text is None:
        assert not response.text
    elif expected.exact_text:
        assert response.text == expected.text
    else:
        assert response.text is not None and response.text.startswith(expected.text)
    assert [(c.name, json.loads(c.arguments)) for c in response.tool_calls] == list(expected.calls)
    assert [c.id for c in response.tool_calls] == [f"call_{i}" for i in range(1, len(expected.calls) + 1)], (
        "calls without a wire id get ids of their own"
    )
    assert all(c.wire_id == "" for c in response.tool_calls)
    usage = response.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.reasoning_tokens) == expected.usage
    assert response.result is not None
    assert response.result.finish_reason is expected.finish
    assert response.result.metadata.extra["raw_finish_reason"] == expected.raw_finish
    assert response.metadata.id == expected.id
    assert response.metadata.model == expected.model
    assert (PARTS_METADATA_KEY in response.result.output.metadata) is expected.keeps_parts


def assert_failure(error: ProviderError, expected: Failure) -> None:
    assert type(error) is expected.error
    assert error.status == expected.status
    assert error.error_type == expected.error_type
    assert error.retryable is False
    assert error.provider == "gemini"
    assert expected.message_part in str(error)
    assert KEY not in str(error) and KEY not in repr(error)


def recorded_deltas(sse: str) -> list[Delta]:
    """The delta events the recorded stream says, read off the wire: text and thought text as they
    come, each functionCall a start and one delta with all its arguments (ids as the loop gives them)."""
    expected: list[Delta] = []
    position = 0
    for line in sse.splitlines():
        if not line.startswith("data: "):
            continue
        for part in json.loads(line[6:])["candidates"][0]["content"].get("parts", []):
            if "functionCall" in part:
                position += 1
                call = part["functionCall"]
                expected.append(ToolCallStarted(f"call_{position}", call["name"], wire_id=""))
                expected.append(ToolCallDelta(f"call_{position}", json.dumps(call["args"], separators=(",", ":"))))
            elif part.get("text"):
                expected.append((ReasoningDelta if part.get("thought") else TextDelta)(part["text"]))
    return expected


# ------------------------------------------------------------------ running a model


def make_model(replay: Replay, *, vertex: bool = False, **kwargs: Any) -> GeminiChatModel:
    transport = replay.transport()
    clients: dict[str, Any] = {
        "http_client": httpx2.Client(transport=transport),
        "async_http_client": httpx2.AsyncClient(transport=transport),
        "retry": kwargs.pop("retry", RetryPolicy(max_retries=0)),
    }
    if vertex:
        from providers.gemini import VertexProvider

        provider = VertexProvider(TOKEN, project="pydantic-ai", location="global", api_version="v1beta1", **clients)
        return GeminiChatModel(provider=provider, **kwargs)
    return GeminiChatModel(api_key=KEY, **clients, **kwargs)


def run_model(model: GeminiChatModel, prompt: Prompt, *, stream: bool, use_async: bool) -> list[ModelEvent]:
    """The events of a streamed reply, or the one reply of a call."""
    if not stream:
        return [asyncio.run(model.acall(prompt)) if use_async else model.call(prompt)]
    if not use_async:
        return list(model.stream(prompt))

    async def collect() -> list[ModelEvent]:
        return [event async for event in model.astream(prompt)]

    return asyncio.run(collect())


def _streamed(request: dict[str, Any]) -> bool:
    return ":streamGenerateContent" in request["path"]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("name", fixture_files(PROVIDER))
def test_replay_each_interaction(name: str, use_async: bool) -> None:
    """Each recorded request, rebuilt as a Prompt, is sent the same way and its reply maps right."""
    vertex = name.startswith("vertex_")
    for index, interaction in enumerate(interactions(PROVIDER, name)):
        stream = _streamed(interaction["request"])
        skipped = Replay(PROVIDER, name)  # serves interaction len(sent): placeholders make it serve `index`
        for _ in range(index):
            skipped.sent.append(httpx2.Request("POST", "https://skipped"))
        model = make_model(skipped, vertex=vertex)
        expected = EXPECTED[name][index]
        prompt = prompt_from_recorded(interaction["request"])
        if isinstance(expected, Failure):
            with pytest.raises(ProviderError) as raised:
                run_model(model, prompt, stream=stream, use_async=use_async)
            assert_failure(raised.value, expected)
            assert len(skipped.sent) == index + 1, "a non-retried error is sent once"
        else:
            events = run_model(model, prompt, stream=stream, use_async=use_async)
            response = assemble(events) if stream else events[0]
            assert isinstance(response, ChatResponse)
            assert_reply(response, expected)
            if stream:
                assert deltas(events) == recorded_deltas(interaction["response"]["sse"])
                opening, *_, closing = chunks(events)
                assert opening.metadata.id == response.metadata.id and opening.metadata.usage is None
                assert closing.result is not None and closing.result.finish_reason is expected.finish
        assert_sent_like_recorded(skipped, index, vertex=vertex)


# ------------------------------------------------------------------ what goes back: our own replies


def _run_client(spec: Any, mode: str) -> ChatResponse:
    result = run_spec(mode, spec)[0].chat_response
    assert isinstance(result, ChatResponse)
    return result


@pytest.mark.parametrize(
    ("name", "modes"),
    [
        ("c_parallel_function_calls_roundtrip", ["call", "acall"]),
        ("d_stream_parallel_function_calls_roundtrip", ["stream", "astream"]),
    ],
)
def test_tool_loop_sends_the_signatures_back_as_recorded(name: str, modes: list[str]) -> None:
    """The ChatClient's tool loop, on the recorded replies, sends the recorded follow-up: the model turn
    with the thoughtSignature on the first functionCall part, and both functionResponse parts without ids."""
    for mode in modes:
        replay = Replay(PROVIDER, name)
        prompt = prompt_from_recorded(replay.recorded_request(0))
        assert prompt.options is not None
        options = prompt.options.model_copy(update={"tool_callbacks": ()})
        model = make_model(replay, options=options)
        client = ChatClient.builder(model).default_tools(secret_retrieval_tool).build()
        response = _run_client(client.prompt().messages(*prompt.messages), mode)
        assert len(replay.sent) == 2
        assert_sent_like_recorded(replay, 0)
        assert_sent_like_recorded(replay, 1)
        model_turn = replay.sent_json(1)["contents"][1]
        assert "thoughtSignature" in model_turn["parts"][0] and "thoughtSignature" not in model_turn["parts"][1]
        recorded = interactions(PROVIDER, name)[0]["response"]
        first = recorded["body"] if "body" in recorded else json.loads(recorded["sse"].split("data: ")[1])
        assert (
            model_turn["parts"][0]["thoughtSignature"]
            == (first["candidates"][0]["content"]["parts"][0]["thoughtSignature"])
        ), "the signature goes back byte for byte as it came"
        expected = EXPECTED[name][1]
        assert isinstance(expected, Reply) and expected.text is not None
        assert response.text is not None and response.text.startswith(expected.text)


@pytest.mark.parametrize("name", ["h_thinking_thought_parts", "h_thinking_stream"])
@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_thought_parts_of_our_reply_go_back_as_recorded(name: str, use_async: bool) -> None:
    """Our own first reply, put in the conversation, sends the thought parts the recorded second request
    carried (a stream's thought pieces as one part: the same meaning, the same bytes as a call's)."""
    replay = Replay(PROVIDER, name)
    first, second = (replay.recorded_request(i) for i in (0, 1))
    stream = _streamed(first)
    model = make_model(replay)
    events = run_model(model, prompt_from_recorded(first), stream=stream, use_async=use_async)
    reply = assemble(events) if stream else events[0]
    assert isinstance(reply, ChatResponse) and reply.result is not None
    kept = reply.result.output.metadata[PARTS_METADATA_KEY]
    assert isinstance(kept, list) and [bool(p.get("thought")) for p in kept if isinstance(p, dict)] == [True, False], (
        "one thought part, then the answer: a stream's pieces are joined as a call's parts are"
    )
    follow_up = prompt_from_recorded(second)
    messages = list(follow_up.messages)
    messages[1] = reply.result.output  # our reply instead of the rebuilt one
    run_model(model, Prompt(messages, follow_up.options), stream=stream, use_async=use_async)
    assert_sent_like_recorded(replay, 1)


def _whole_reply(sse: str) -> dict[str, Any]:
    """The one reply a stream's chunks make, as ``generateContent`` would send it: every chunk's parts in
    order, the last chunk's finish reason and usage."""
    pieces = [json.loads(line[6:]) for line in sse.splitlines() if line.startswith("data: ")]
    parts = [p for c in pieces for p in c["candidates"][0]["content"].get("parts", [])]
    last = pieces[-1]
    candidate = {**last["candidates"][0], "content": {"role": "model", "parts": parts}}
    return {**last, "candidates": [candidate]}


@pytest.mark.parametrize("name", [n for n in fixture_files(PROVIDER) if n.startswith(("d_", "h_thinking_stream"))])
def test_call_and_stream_send_back_the_same_bytes(name: str) -> None:
    """For every recorded stream: the message a stream assembles and the message a call makes of the
    same parts in one reply are sent back as the same bytes in the next request."""
    from providers.gemini._mapping import build_request, parse_response

    interaction = interactions(PROVIDER, name)[0]
    sse = interaction["response"]["sse"]
    streamed = assemble(
        run_model(
            make_model(Replay(PROVIDER, name)),
            prompt_from_recorded(interaction["request"]),
            stream=True,
            use_async=False,
        )
    )
    called = parse_response(_whole_reply(sse))
    assert streamed.result is not None and called.result is not None
    options = GeminiChatOptions(model=FLASH)
    bodies = [
        json.dumps(
            build_request(
                Prompt([UserMessage("q"), r.result.output, UserMessage("next")], options), options, stream=False
            )
        )
        for r in (called, streamed)
        if r.result is not None
    ]
    assert bodies[0] == bodies[1]
    assert called.usage == streamed.usage and called.result.finish_reason is streamed.result.finish_reason


@tool(
    name="secret_retrieval_tool",
    description="A tool that requires a password to retrieve a secret.",
    requires_confirmation=True,
)
def gated_secret_retrieval_tool(password: str) -> str:
    return SECRETS[password]


@pytest.mark.parametrize(
    ("name", "modes"),
    [
        ("c_parallel_function_calls_roundtrip", ["call", "acall"]),
        ("d_stream_parallel_function_calls_roundtrip", ["stream", "astream"]),
    ],
)
def test_a_paused_turn_resumes_with_the_signatures_and_the_recorded_follow_up(name: str, modes: list[str]) -> None:
    """Confirmation on the recorded replies: the two id-less calls pause under ids of our own, the paused
    state survives JSON, and the resumed turn sends the recorded follow-up (signature included)."""
    from chatclient import ToolCallDecision, ToolCallDecisions, awaiting_decision
    from chatclient.tools.confirmation import PendingToolCalls

    for mode in modes:
        replay = Replay(PROVIDER, name)
        prompt = prompt_from_recorded(replay.recorded_request(0))
        assert prompt.options is not None
        model = make_model(replay, options=prompt.options.model_copy(update={"tool_callbacks": ()}))
        client = ChatClient.builder(model).default_tools(gated_secret_retrieval_tool).build()
        paused = run_spec(mode, client.prompt().messages(*prompt.messages))[0]
        pending = awaiting_decision(paused)
        assert pending is not None and [c.id for c in pending.calls] == ["call_1", "call_2"]
        assert len(replay.sent) == 1, "nothing is sent before the decision"
        stored = PendingToolCalls.model_validate_json(pending.model_dump_json())
        decisions = ToolCallDecisions.of(ToolCallDecision.allow(i) for i in ("call_1", "call_2"))
        resumed = run_spec(mode, client.prompt().resume(stored, decisions))[0].chat_response
        assert resumed is not None and resumed.text is not None
        assert len(replay.sent) == 2
        assert_sent_like_recorded(replay, 1)
