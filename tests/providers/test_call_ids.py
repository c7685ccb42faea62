"""Every call of a reply has its own identity, whatever ids the wire gave (issue 29, item 1).

For each provider, a reply with two ``transfer`` calls (Alice 5, Mallory 99999) whose ids are
repeated, empty or missing, in the shape the recorded traffic has (``tests/fixtures/provider-traffic``),
served by an ``httpx2.MockTransport``: call, stream, acall and astream assemble the same two calls with
ids of their own; a gated pair pauses with two distinct awaiting ids and allowing one runs only that
one; an ungated pair runs both with their own arguments; and the follow-up request gives the provider
its own ids back (or, where it gave none, the ids the reply assigned).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient, Prompt, ToolCallDecision, ToolCallDecisions, awaiting_decision, tool
from chatclient._sync import run_sync
from chatclient.events import ModelEvent, ToolCallStarted
from chatclient.messages import ToolCall
from chatclient.responses import ChatResponse
from chatclient.testing import MODES
from chatclient.testing.advisor_kit import run_spec
from providers.anthropic import AnthropicChatModel
from providers.ollama import OllamaChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel
from tests.providers.model_events import assemble

ALICE = {"to": "alice", "amount": 5}
MALLORY = {"to": "mallory", "amount": 99999}
ARGUMENTS = (ALICE, MALLORY)

SCENARIOS: dict[str, tuple[str | None, str | None]] = {
    "repeated": ("c1", "c1"),
    "empty": ("", ""),
    "missing": (None, None),
}
"""The wire ids of the two calls (``None``: the field is left out)."""
OWN_IDS = {"repeated": ["c1", "c1#2"], "empty": ["call_1", "call_2"], "missing": ["call_1", "call_2"]}
"""The ids the reply gives them (what decisions, results and pending states use)."""
SENT_BACK = {"repeated": ["c1", "c1"], "empty": ["call_1", "call_2"], "missing": ["call_1", "call_2"]}
"""The ids the provider gets back: its own, or the assigned ones where it gave none."""


def _id(call_id: str | None, key: str = "id") -> dict[str, str]:
    return {} if call_id is None else {key: call_id}


def _sse(events: Sequence[tuple[str | None, dict[str, Any]]], *, done: bool = False) -> bytes:
    out = "".join((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n" for name, data in events)
    return (out + ("data: [DONE]\n\n" if done else "")).encode()


def _halves(arguments: dict[str, Any]) -> tuple[str, str]:
    text = json.dumps(arguments)
    return text[: len(text) // 2], text[len(text) // 2 :]


# ---------------------------------------------------------------------------------- wire shapes


class OpenAIChat:
    name = "openai"

    @staticmethod
    def model(clients: dict[str, Any]) -> Any:
        return OpenAIChatModel("gpt-4o", base_url="https://api.openai.com/v1", api_key="k", **clients)

    @staticmethod
    def calls(ids: tuple[str | None, ...]) -> dict[str, Any]:
        calls = [
            {**_id(i), "type": "function", "function": {"name": "transfer", "arguments": json.dumps(a)}}
            for i, a in zip(ids, ARGUMENTS, strict=True)
        ]
        message = {"role": "assistant", "content": None, "tool_calls": calls, "refusal": None}
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1766084439,
            "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 60, "completion_tokens": 40, "total_tokens": 100},
        }

    @staticmethod
    def streamed_calls(ids: tuple[str | None, ...]) -> bytes:
        head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1766084439, "model": "gpt-4o"}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
            return None, {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        events = [chunk({"role": "assistant", "content": None})]
        for index, (call_id, arguments) in enumerate(zip(ids, ARGUMENTS, strict=True)):
            first, second = _halves(arguments)
            start = {"index": index, **_id(call_id), "type": "function"}
            events.append(chunk({"tool_calls": [{**start, "function": {"name": "transfer", "arguments": ""}}]}))
            events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": first}}]}))
            events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": second}}]}))
        events.append(chunk({}, "tool_calls"))
        events.append((None, {**head, "choices": [], "usage": {"prompt_tokens": 60, "completion_tokens": 40}}))
        return _sse(events, done=True)

    @staticmethod
    def answer(stream: bool) -> tuple[str, bytes]:
        if stream:
            head = {"id": "chatcmpl-2", "object": "chat.completion.chunk", "model": "gpt-4o"}
            delta = {"role": "assistant", "content": "Done."}
            return "text/event-stream", _sse(
                [(None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": "stop"}]})], done=True
            )
        message = {"role": "assistant", "content": "Done."}
        body = {
            "id": "chatcmpl-2",
            "model": "gpt-4o",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        return "application/json", json.dumps(body).encode()

    @staticmethod
    def sent_back(body: dict[str, Any]) -> tuple[list[str], list[str]]:
        messages = body["messages"]
        (assistant,) = [m for m in messages if m["role"] == "assistant"]
        return [c["id"] for c in assistant["tool_calls"]], [m["tool_call_id"] for m in messages if m["role"] == "tool"]


class Anthropic:
    name = "anthropic"

    @staticmethod
    def model(clients: dict[str, Any]) -> Any:
        return AnthropicChatModel("claude-sonnet-4-5", api_key="k", **clients)

    @staticmethod
    def calls(ids: tuple[str | None, ...]) -> dict[str, Any]:
        content = [
            {"type": "tool_use", **_id(i), "name": "transfer", "input": a} for i, a in zip(ids, ARGUMENTS, strict=True)
        ]
        return {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": content,
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 60, "output_tokens": 40},
        }

    @staticmethod
    def streamed_calls(ids: tuple[str | None, ...]) -> bytes:
        message: dict[str, Any] = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                   "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 60, "output_tokens": 1}}  # fmt: skip
        events: list[tuple[str | None, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": message})
        ]
        for index, (call_id, arguments) in enumerate(zip(ids, ARGUMENTS, strict=True)):
            block = {"type": "tool_use", **_id(call_id), "name": "transfer", "input": {}}
            events.append(
                ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
            )
            for piece in ("", *_halves(arguments)):
                delta = {"type": "input_json_delta", "partial_json": piece}
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        stop = {"stop_reason": "tool_use", "stop_sequence": None}
        events.append(("message_delta", {"type": "message_delta", "delta": stop, "usage": {"output_tokens": 40}}))
        events.append(("message_stop", {"type": "message_stop"}))
        return _sse(events)

    @staticmethod
    def answer(stream: bool) -> tuple[str, bytes]:
        usage = {"input_tokens": 90, "output_tokens": 3}
        body = {"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn", "usage": usage}  # fmt: skip
        if not stream:
            return "application/json", json.dumps(body).encode()
        start = {**body, "content": [], "stop_reason": None}
        block = {"type": "text", "text": ""}
        text = {"type": "text_delta", "text": "Done."}
        end = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}
        events: list[tuple[str | None, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": text}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", end),
            ("message_stop", {"type": "message_stop"}),
        ]
        return "text/event-stream", _sse(events)

    @staticmethod
    def sent_back(body: dict[str, Any]) -> tuple[list[str], list[str]]:
        blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
        return (
            [b["id"] for b in blocks if b["type"] == "tool_use"],
            [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"],
        )


class Responses:
    name = "openai_responses"

    @staticmethod
    def model(clients: dict[str, Any]) -> Any:
        return OpenAIResponsesChatModel("gpt-4o", base_url="https://api.openai.com/v1", api_key="k", **clients)

    @staticmethod
    def _item(index: int, call_id: str | None, arguments: str) -> dict[str, Any]:
        return {"type": "function_call", "id": f"fc_{index}", **_id(call_id, "call_id"), "name": "transfer",
                "arguments": arguments, "status": "completed"}  # fmt: skip

    @classmethod
    def calls(cls, ids: tuple[str | None, ...]) -> dict[str, Any]:
        output = [cls._item(n, i, json.dumps(a)) for n, (i, a) in enumerate(zip(ids, ARGUMENTS, strict=True))]
        return {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-4o", "output": output,
                "usage": {"input_tokens": 60, "output_tokens": 40, "total_tokens": 100}}  # fmt: skip

    @classmethod
    def streamed_calls(cls, ids: tuple[str | None, ...]) -> bytes:
        response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-4o", "output": []}
        events: list[tuple[str | None, dict[str, Any]]] = [
            ("response.created", {"type": "response.created", "response": response})
        ]
        for index, (call_id, arguments) in enumerate(zip(ids, ARGUMENTS, strict=True)):
            added = {"type": "response.output_item.added", "output_index": index, "item": cls._item(index, call_id, "")}
            events.append(("response.output_item.added", added))
            for piece in _halves(arguments):
                delta = {"type": "response.function_call_arguments.delta", "item_id": f"fc_{index}",
                         "output_index": index, "delta": piece}  # fmt: skip
                events.append(("response.function_call_arguments.delta", delta))
            full = cls._item(index, call_id, json.dumps(arguments))
            events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                                         "item": full}))  # fmt: skip
        done = {**cls.calls(ids), "status": "completed"}
        events.append(("response.completed", {"type": "response.completed", "response": done}))
        return _sse(events)

    @staticmethod
    def answer(stream: bool) -> tuple[str, bytes]:
        message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}  # fmt: skip
        body = {"id": "resp_2", "object": "response", "status": "completed", "model": "gpt-4o", "output": [message],
                "usage": {"input_tokens": 90, "output_tokens": 3, "total_tokens": 93}}  # fmt: skip
        if stream:
            delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "Done."}
            return "text/event-stream", _sse(
                [
                    ("response.created", {"type": "response.created", "response": {**body, "output": []}}),
                    ("response.output_text.delta", delta),
                    ("response.completed", {"type": "response.completed", "response": body}),
                ]
            )
        return "application/json", json.dumps(body).encode()

    @staticmethod
    def sent_back(body: dict[str, Any]) -> tuple[list[str], list[str]]:
        items = body["input"]
        return (
            [i["call_id"] for i in items if i.get("type") == "function_call"],
            [i["call_id"] for i in items if i.get("type") == "function_call_output"],
        )


class Ollama:
    name = "ollama"

    @staticmethod
    def model(clients: dict[str, Any]) -> Any:
        return OllamaChatModel("llama3.1", base_url="http://localhost:11434", **clients)

    @staticmethod
    def _call(index: int, call_id: str | None, arguments: dict[str, Any]) -> dict[str, Any]:
        return {**_id(call_id), "function": {"index": index, "name": "transfer", "arguments": arguments}}

    @classmethod
    def calls(cls, ids: tuple[str | None, ...]) -> dict[str, Any]:
        calls = [cls._call(n, i, a) for n, (i, a) in enumerate(zip(ids, ARGUMENTS, strict=True))]
        return {"model": "llama3.1", "created_at": "2025-12-18T19:00:39Z",
                "message": {"role": "assistant", "content": "", "tool_calls": calls},
                "done_reason": "stop", "done": True, "prompt_eval_count": 60, "eval_count": 40}  # fmt: skip

    @classmethod
    def streamed_calls(cls, ids: tuple[str | None, ...]) -> bytes:
        lines = [
            {"model": "llama3.1", "created_at": "2025-12-18T19:00:39Z",
             "message": {"role": "assistant", "content": "", "tool_calls": [cls._call(n, i, a)]}, "done": False}
            for n, (i, a) in enumerate(zip(ids, ARGUMENTS, strict=True))
        ]  # fmt: skip
        lines.append({"model": "llama3.1", "created_at": "2025-12-18T19:00:40Z",
                      "message": {"role": "assistant", "content": ""}, "done_reason": "stop", "done": True,
                      "prompt_eval_count": 60, "eval_count": 40})  # fmt: skip
        return "".join(json.dumps(line) + "\n" for line in lines).encode()

    @staticmethod
    def answer(stream: bool) -> tuple[str, bytes]:
        body = {"model": "llama3.1", "created_at": "2025-12-18T19:00:41Z",
                "message": {"role": "assistant", "content": "Done."}, "done_reason": "stop", "done": True,
                "prompt_eval_count": 90, "eval_count": 3}  # fmt: skip
        if stream:
            return "application/x-ndjson", (json.dumps(body) + "\n").encode()
        return "application/json", json.dumps(body).encode()

    @staticmethod
    def sent_back(body: dict[str, Any]) -> tuple[list[str], list[str]]:
        messages = body["messages"]
        (assistant,) = [m for m in messages if m["role"] == "assistant"]
        return [c["id"] for c in assistant["tool_calls"]], [m["tool_call_id"] for m in messages if m["role"] == "tool"]


PROVIDERS: list[Any] = [OpenAIChat, Anthropic, Responses, Ollama]


@dataclass
class Wire:
    """Answers the first request with the two calls and every later one with "Done.", in the form the
    request asked for (``stream``), and keeps every request body."""

    provider: Any
    ids: tuple[str | None, ...]
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        stream = bool(body.get("stream"))
        if len(self.bodies) == 1:
            if stream:
                kind = "application/x-ndjson" if self.provider is Ollama else "text/event-stream"
                content_type, payload = kind, self.provider.streamed_calls(self.ids)
            else:
                content_type, payload = "application/json", json.dumps(self.provider.calls(self.ids)).encode()
        else:
            content_type, payload = self.provider.answer(stream)
        return httpx2.Response(200, headers={"content-type": content_type}, content=payload)

    def model(self) -> Any:
        transport = httpx2.MockTransport(self.handle)
        clients = {"http_client": httpx2.Client(transport=transport),
                   "async_http_client": httpx2.AsyncClient(transport=transport)}  # fmt: skip
        return self.provider.model(clients)


def _model_reply(model: Any, mode: str) -> tuple[ChatResponse, list[ModelEvent]]:
    prompt = Prompt("Send 5 to Alice.")
    if mode == "call":
        return model.call(prompt), []
    if mode == "acall":
        return run_sync(lambda: model.acall(prompt)), []
    if mode == "stream":
        events = list(model.stream(prompt))
    else:

        async def collect() -> list[ModelEvent]:
            return [event async for event in model.astream(prompt)]

        events = run_sync(collect)
    return assemble(events), events


providers = pytest.mark.parametrize("provider", PROVIDERS, ids=[p.name for p in PROVIDERS])
scenarios = pytest.mark.parametrize("scenario", list(SCENARIOS))
modes = pytest.mark.parametrize("mode", MODES)


# ---------------------------------------------------------------------------------- the model's reply


@providers
@scenarios
@modes
def test_each_call_gets_its_own_id_and_keeps_its_own_arguments(provider: Any, scenario: str, mode: str) -> None:
    wire = Wire(provider, SCENARIOS[scenario])
    reply, events = _model_reply(wire.model(), mode)
    calls = reply.tool_calls
    assert [c.id for c in calls] == OWN_IDS[scenario]
    assert [json.loads(c.arguments) for c in calls] == [ALICE, MALLORY], "never merged, never joined"
    assert [c.name for c in calls] == ["transfer", "transfer"]
    assert [c.provider_id for c in calls] == SENT_BACK[scenario]
    if events:
        started = [e.id for e in events if isinstance(e, ToolCallStarted)]
        assert started == OWN_IDS[scenario], "a stream's consumer sees the same ids as the reply"


@providers
@scenarios
def test_call_and_stream_assemble_the_same_calls(provider: Any, scenario: str) -> None:
    assembled = {mode: _model_reply(Wire(provider, SCENARIOS[scenario]).model(), mode)[0].tool_calls for mode in MODES}
    # Arguments compared as JSON: a provider may re-serialise them (Anthropic's ``input`` object).
    views = {
        mode: [(c.id, c.wire_id, c.type, c.name, json.loads(c.arguments)) for c in calls]
        for mode, calls in assembled.items()
    }
    assert views["call"] == views["stream"] == views["acall"] == views["astream"]


# ---------------------------------------------------------------------------------- through the tool loop


class Bank:
    def __init__(self) -> None:
        self.sent: list[tuple[str, int]] = []

    def record(self, to: str, amount: int) -> str:
        self.sent.append((to, amount))
        return f"sent {amount} to {to}"


def _client(wire: Wire, bank: Bank, *, gated: bool) -> ChatClient:
    @tool(description="Transfer money", requires_confirmation=gated)
    def transfer(to: str, amount: int) -> str:
        return bank.record(to, amount)

    return ChatClient.builder(wire.model()).default_tools(transfer).build()


def _check_sent_back(wire: Wire, provider: Any, scenario: str) -> None:
    calls, results = provider.sent_back(wire.bodies[-1])
    assert calls == SENT_BACK[scenario] and results == SENT_BACK[scenario]


@providers
@scenarios
@modes
def test_gated_pair_pauses_with_two_ids_and_allowing_alice_runs_only_alice(
    provider: Any, scenario: str, mode: str
) -> None:
    wire, bank = Wire(provider, SCENARIOS[scenario]), Bank()
    client = _client(wire, bank, gated=True)
    paused, _ = run_spec(mode, client.prompt("Send 5 to Alice."))
    pending = awaiting_decision(paused)
    assert pending is not None and pending.awaiting_ids == OWN_IDS[scenario]
    alice, mallory = pending.calls
    assert json.loads(alice.arguments) == ALICE and json.loads(mallory.arguments) == MALLORY
    assert bank.sent == []

    decisions = ToolCallDecisions.of(ToolCallDecision.allow(alice.id), ToolCallDecision.deny(mallory.id))
    resumed, _ = run_spec(mode, client.prompt().resume(pending, decisions))
    assert bank.sent == [("alice", 5)], "the decision on Alice's call covers no other call"
    assert resumed.chat_response is not None and resumed.chat_response.text == "Done."
    _check_sent_back(wire, provider, scenario)


@providers
@scenarios
@modes
def test_ungated_pair_runs_both_with_their_own_arguments(provider: Any, scenario: str, mode: str) -> None:
    wire, bank = Wire(provider, SCENARIOS[scenario]), Bank()
    answered, _ = run_spec(mode, _client(wire, bank, gated=False).prompt("Send 5 to Alice."))
    assert answered.chat_response is not None and answered.chat_response.text == "Done."
    assert sorted(bank.sent) == [("alice", 5), ("mallory", 99999)]
    _check_sent_back(wire, provider, scenario)


@providers
def test_a_decision_under_the_wire_id_alone_cannot_cover_both(provider: Any) -> None:
    """``allow("c1")`` is Alice's call only; Mallory's ``c1#2`` then lacks a decision: nothing runs."""
    wire, bank = Wire(provider, SCENARIOS["repeated"]), Bank()
    client = _client(wire, bank, gated=True)
    pending = awaiting_decision(client.prompt("Send 5 to Alice.").call().chat_client_response())
    assert pending is not None
    with pytest.raises(Exception, match="c1#2"):
        client.prompt().resume(pending, ToolCallDecisions.of(ToolCallDecision.allow("c1"))).call().content()
    assert bank.sent == []


def test_the_assigned_ids_survive_storage_and_a_resume() -> None:
    """The paused state, through JSON, maps its calls the same way: the same ids, the same wire ids."""
    from chatclient.tools import PendingToolCalls

    wire, bank = Wire(OpenAIChat, SCENARIOS["repeated"]), Bank()
    client = _client(wire, bank, gated=True)
    pending = awaiting_decision(client.prompt("Send 5 to Alice.").call().chat_client_response())
    assert pending is not None
    restored = PendingToolCalls.model_validate_json(pending.model_dump_json())
    assert restored == pending
    assert [c.wire_id for c in restored.reply.tool_calls] == [None, "c1"]
    assert [c.wire_id for c in restored.calls] == [None, "c1"]
    decisions = ToolCallDecisions.of(ToolCallDecision.deny("c1"), ToolCallDecision.allow("c1#2"))
    client.prompt().resume(restored, decisions).call().content()
    assert bank.sent == [("mallory", 99999)]
    _check_sent_back(wire, OpenAIChat, "repeated")


_SHAPES: dict[str, Callable[[tuple[str | None, ...]], Any]] = {p.name: p.calls for p in PROVIDERS}


@pytest.mark.parametrize("name", list(_SHAPES))
def test_distinct_wire_ids_are_kept_as_they_are(name: str) -> None:
    """The common case: nothing replaced, no ``wire_id``."""
    provider = next(p for p in PROVIDERS if p.name == name)
    reply, _ = _model_reply(Wire(provider, ("call_a", "call_b")).model(), "call")
    assert reply.tool_calls == (
        ToolCall(id="call_a", name="transfer", arguments=reply.tool_calls[0].arguments),
        ToolCall(id="call_b", name="transfer", arguments=reply.tool_calls[1].arguments),
    )
