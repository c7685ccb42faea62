"""An offline conformance suite for ``ChatModel`` providers, built-in or third-party.

Subclass :class:`ChatModelConformance` in a test module, implement ``wire()`` (how your wire API
encodes the kit's canned replies) and ``make_model(transport)`` (your model on an
``httpx2.MockTransport``), and pytest runs every check against your provider::

    from chatclient.testing.conformance import ChatModelConformance

    class TestMyProvider(ChatModelConformance):
        def wire(self) -> WireFormat:
            return MyWire()

        def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
            return MyChatModel(model="m", api_key="test",
                               http_client=httpx2.Client(transport=transport),
                               async_http_client=httpx2.AsyncClient(transport=transport))

The checks drive the real ``ChatClient`` and ``ToolCallingAdvisor`` in call, stream, acall and
astream: plain text, one and several tool calls per reply, tool-call arguments split over many
stream deltas, structured output, usage, error mapping, and a confirmation pause/resume. Nothing
touches the network.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import httpx2
import pytest
from pydantic import BaseModel

from ..advisor import ChatClientResponse
from ..client import ChatClient, ChatClientRequestSpec
from ..errors import AuthenticationError, BadRequestError, ProviderError, RateLimitError, ServerError
from ..messages import ToolCall
from ..model import ChatModel
from ..prompt import Prompt
from ..responses import FinishReason, Usage
from ..tools import tool
from .advisor_kit import MODES, run_spec

__all__ = ["ChatModelConformance", "WireFormat"]


class WireFormat(Protocol):
    """How one wire API encodes the kit's canned replies and carries tool results back."""

    def reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        """A complete (not streamed) 200 reply."""
        ...

    def stream_reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        """A streamed 200 reply: text in several deltas, each call's arguments in several fragments,
        the usage where the API puts it."""
        ...

    def error(self, status: int, message: str, headers: dict[str, str]) -> httpx2.Response:
        """An error reply with the API's error envelope."""
        ...

    def tool_results(self, request_body: Any) -> dict[str, str]:
        """Call id → result text of every tool result in a request body our provider sent."""
        ...


class _Script:
    """Serves canned replies in order and records every request body."""

    def __init__(self, replies: Sequence[Callable[[], httpx2.Response]]) -> None:
        self.replies = list(replies)
        self.bodies: list[Any] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content) if request.content else None)
        if len(self.bodies) > len(self.replies):
            return httpx2.Response(599, text="conformance kit: more requests than scripted replies")
        return self.replies[len(self.bodies) - 1]()


class City(BaseModel):
    name: str
    country: str


USAGE = Usage(prompt_tokens=11, completion_tokens=7)


class _Weather:
    def __init__(self) -> None:
        self.calls: list[str] = []

    @tool(description="Get the weather of a city")
    def get_weather(self, city: str) -> str:
        self.calls.append(city)
        return f"Sunny in {city}"


class _Booking:
    def __init__(self) -> None:
        self.booked: list[str] = []

    @tool(description="Book a flight", requires_confirmation=True)
    def book_flight(self, flight_number: str) -> str:
        self.booked.append(flight_number)
        return f"Booked {flight_number}"


class ChatModelConformance:
    """The checks every provider must pass. Subclass it and implement the two methods."""

    def wire(self) -> WireFormat:
        raise NotImplementedError

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers

    def _client(self, script: _Script, **tools: Any) -> ChatClient:
        model = self.make_model(httpx2.MockTransport(script))
        return ChatClient.builder(model).default_tools(*tools.values()).build()

    def _replies(self, mode: str, turns: Sequence[tuple[str | None, Sequence[ToolCall]]]) -> _Script:
        wire = self.wire()
        make = wire.stream_reply if "stream" in mode else wire.reply
        return _Script([functools.partial(make, text, calls, USAGE) for text, calls in turns])

    @staticmethod
    def _run(mode: str, spec: ChatClientRequestSpec) -> ChatClientResponse:
        return run_spec(mode, spec)[0]

    # ------------------------------------------------------------------ checks

    @pytest.mark.parametrize("mode", MODES)
    def test_plain_text(self, mode: str) -> None:
        script = self._replies(mode, [("Hello from the provider.", [])])
        chat = self._run(mode, self._client(script).prompt().system("Be brief.").user("Hi")).chat_response
        assert chat is not None and chat.text == "Hello from the provider."
        assert chat.result is not None and chat.result.finish_reason is FinishReason.STOP
        assert chat.usage == USAGE
        assert len(script.bodies) == 1

    @pytest.mark.parametrize("mode", MODES)
    def test_single_tool_round_trip(self, mode: str) -> None:
        weather = _Weather()
        call = ToolCall(id="call_w1", name="get_weather", arguments='{"city": "Paris"}')
        script = self._replies(mode, [(None, [call]), ("It is sunny in Paris.", [])])
        chat = self._run(mode, self._client(script, weather=weather).prompt("Weather in Paris?")).chat_response
        assert chat is not None and chat.text == "It is sunny in Paris."
        assert weather.calls == ["Paris"]
        assert self.wire().tool_results(script.bodies[1]) == {"call_w1": "Sunny in Paris"}
        assert chat.usage == USAGE + USAGE, "usage is summed over both rounds"

    @pytest.mark.parametrize("mode", MODES)
    def test_parallel_tool_calls(self, mode: str) -> None:
        weather = _Weather()
        calls = [
            ToolCall(id=f"call_p{i}", name="get_weather", arguments=json.dumps({"city": city}))
            for i, city in enumerate(["Oslo", "Lima", "Pune"])
        ]
        script = self._replies(mode, [("Checking three cities.", calls), ("All sunny.", [])])
        chat = self._run(mode, self._client(script, weather=weather).prompt("Three cities?")).chat_response
        assert chat is not None and chat.text is not None and chat.text.endswith("All sunny.")
        assert sorted(weather.calls) == ["Lima", "Oslo", "Pune"]
        assert self.wire().tool_results(script.bodies[1]) == {
            "call_p0": "Sunny in Oslo",
            "call_p1": "Sunny in Lima",
            "call_p2": "Sunny in Pune",
        }

    @pytest.mark.parametrize("mode", ["stream", "astream"])
    def test_split_argument_deltas_are_assembled(self, mode: str) -> None:
        weather = _Weather()
        long_city = "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch"
        call = ToolCall(id="call_long", name="get_weather", arguments=json.dumps({"city": long_city}))
        script = self._replies(mode, [(None, [call]), ("Done.", [])])
        self._run(mode, self._client(script, weather=weather).prompt("Long name?"))
        assert weather.calls == [long_city]

    @pytest.mark.parametrize("mode", ["call", "acall"])
    def test_structured_output(self, mode: str) -> None:
        script = self._replies(mode, [('{"name": "Kyoto", "country": "Japan"}', [])])
        spec = self._client(script).prompt("A city in Japan")
        if mode == "call":
            city = spec.call().entity(City, native=True)
        else:
            city = asyncio.run(spec.acall().entity(City, native=True))
        assert city == City(name="Kyoto", country="Japan")
        assert "Kyoto" not in json.dumps(script.bodies[0]), "the request carries the schema, not the answer"
        assert "country" in json.dumps(script.bodies[0]), "the request carries the schema"

    @pytest.mark.parametrize(
        ("status", "error_type", "headers"),
        [
            (401, AuthenticationError, {}),
            (400, BadRequestError, {}),
            (429, RateLimitError, {"retry-after": "0"}),
            (500, ServerError, {}),
        ],
    )
    @pytest.mark.parametrize("mode", MODES)
    def test_error_mapping(
        self, mode: str, status: int, error_type: type[ProviderError], headers: dict[str, str]
    ) -> None:
        wire = self.wire()
        script = _Script([lambda: wire.error(status, "conformance failure", headers)] * 5)
        with pytest.raises(error_type) as raised:
            self._run(mode, self._client(script).prompt("Hi"))
        assert raised.value.status == status
        assert "conformance failure" in str(raised.value)
        if raised.value.retryable:
            assert len(script.bodies) > 1, "retryable errors are retried"
        else:
            assert len(script.bodies) == 1, "non-retryable errors are not retried"

    @pytest.mark.parametrize("mode", MODES)
    def test_confirmation_pause_and_resume(self, mode: str) -> None:
        from ..tools.confirmation import ToolCallDecision, ToolCallDecisions, awaiting_decision

        booking = _Booking()
        call = ToolCall(id="call_b1", name="book_flight", arguments='{"flight_number": "VX205"}')
        script = self._replies(mode, [(None, [call]), ("Your flight is booked.", [])])
        client = self._client(script, booking=booking)
        paused = self._run(mode, client.prompt("Book VX205"))
        pending = awaiting_decision(paused)
        assert pending is not None and [c.id for c in pending.calls] == ["call_b1"]
        assert booking.booked == [], "nothing runs before the decision"
        resumed = self._run(
            mode, client.prompt().resume(pending, ToolCallDecisions.of(ToolCallDecision.allow("call_b1")))
        )
        assert resumed.chat_response is not None and resumed.chat_response.text == "Your flight is booked."
        assert booking.booked == ["VX205"]
        assert self.wire().tool_results(script.bodies[1]) == {"call_b1": "Booked VX205"}
        from ..errors import PendingStateReusedError

        with pytest.raises(PendingStateReusedError):  # single use: a replayed state runs nothing
            self._run(mode, client.prompt().resume(pending, ToolCallDecisions.of(ToolCallDecision.allow("call_b1"))))
        assert booking.booked == ["VX205"]

    # ------------------------------------------------------------------ the provider shell's guarantees

    def make_model_with_key(self, transport: httpx2.MockTransport, api_key: str) -> ChatModel | None:
        """Your model with ``api_key`` as its credential, for the redaction check.

        Optional: by default the check uses :meth:`make_model` and whatever credential headers it
        sends. Override it when ``make_model`` sends none (a local server needs no key).
        """
        return None

    def test_credentials_never_show(self) -> None:
        """No credential a request carries shows in the repr of its headers, of the request, of the
        model, or in the error a rejected key raises (the usual places a key leaks into logs)."""
        wire = self.wire()
        sent: list[httpx2.Request] = []

        def reject(request: httpx2.Request) -> httpx2.Response:
            sent.append(request)
            return wire.error(401, "conformance failure", {})

        transport = httpx2.MockTransport(reject)
        model = self.make_model_with_key(transport, _CONFORMANCE_KEY) or self.make_model(transport)
        with pytest.raises(ProviderError) as raised:
            model.call(Prompt("Hi"))
        headers = sent[0].headers
        secrets = {
            token
            for name, value in headers.items()
            if name.lower() in _CREDENTIAL_NAMES or any(word in name.lower() for word in ("key", "token", "secret"))
            for token in (value, value.split(" ", 1)[-1])
            if token
        }
        shown = [repr(headers), str(headers), repr(sent[0]), repr(model), str(raised.value), repr(raised.value)]
        leaks = sorted({secret for secret in secrets for text in shown if secret in text})
        assert leaks == [], f"credentials shown in a repr or message: {leaks}"

    def test_close_aclose_and_context_managers(self) -> None:
        """A model owns network resources: ``close``, ``aclose``, ``with`` and ``async with`` release
        them, each more than once without failing."""
        wire = self.wire()
        script = _Script([functools.partial(wire.reply, "Hello.", [], USAGE)] * 2)
        model = self.make_model(httpx2.MockTransport(script))
        names = ("close", "aclose", "__enter__", "__exit__", "__aenter__", "__aexit__")
        missing = [name for name in names if not callable(getattr(model, name, None))]
        assert missing == [], f"{type(model).__name__} lacks {missing}"
        closable: Any = model
        with closable as entered:
            assert entered is closable, "__enter__ returns the model"
            assert model.call(Prompt("Hi")).text == "Hello."

        async def in_a_loop() -> str | None:
            async with closable as entered:
                assert entered is closable, "__aenter__ returns the model"
                return (await model.acall(Prompt("Hi"))).text

        assert asyncio.run(in_a_loop()) == "Hello."
        closable.close()
        asyncio.run(closable.aclose())

    def test_no_event_loop_outlives_its_run(self) -> None:
        """Twenty ``asyncio.run(model.acall(...))`` leave no loop alive: state kept per event loop
        must not hold the loop (nor, with it, its sockets) once the loop has ended."""
        wire = self.wire()
        script = _Script([functools.partial(wire.reply, "Hello.", [], USAGE)] * 20)
        model = self.make_model(httpx2.MockTransport(script))
        loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

        async def one() -> None:
            loops.append(weakref.ref(asyncio.get_running_loop()))
            await model.acall(Prompt("Hi"))

        for _ in range(20):
            asyncio.run(one())
        gc.collect()
        assert sum(ref() is not None for ref in loops) == 0, "ended event loops are kept alive"
        close = getattr(model, "close", None)
        if callable(close):
            close()


_CONFORMANCE_KEY = "conformance-secret-4f1c9a"

_CREDENTIAL_NAMES = frozenset({"authorization", "proxy-authorization", "api-key", "x-api-key", "cookie"})
"""Credential headers by name; any header whose name mentions a key, token or secret counts too."""
