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
stream deltas, structured output, usage, error mapping, and a confirmation pause/resume.

The transport guarantees a provider shell gives (``providers._shell``, or your own) are checked
against a real HTTP server on ``127.0.0.1`` (random port, :mod:`chatclient.testing.fault_server`)
through ``make_model_at(base_url, api_key)``: a stream cut short (chunked, and close-delimited) is a
``StreamIncompleteError`` and never a reply; a request's ``timeout`` against a stalled server, and
against one that trickles its headers, its body or an error's body (each read quick, the whole
endless), is an ``APITimeoutError`` for its deadline, within it plus a margin, not retried, and the
server sees the client hang up; cancelling ``acall()`` while its reply comes, or ``astream()``
mid-stream, raises ``CancelledError`` and closes the connection at the server; the key is sent but
never shown in the repr of the request headers or in an error message. Nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import httpx2
import pytest
from pydantic import BaseModel

from ..advisor import ChatClientResponse
from ..client import ChatClient, ChatClientRequestSpec
from ..errors import (
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamIncompleteError,
)
from ..messages import ToolCall
from ..model import ChatModel
from ..prompt import Prompt
from ..responses import FinishReason, Usage
from ..tools import tool
from .advisor_kit import MODES, run_spec
from .fault_server import fault_server

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

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        """Your model talking real HTTP to ``base_url`` with ``api_key`` as its credential, for the
        transport checks (the kit's loopback server stands behind ``base_url``)."""
        raise NotImplementedError(
            f"{type(self).__name__}: implement make_model_at(base_url, api_key) so the kit can check "
            "cut streams, deadlines, cancellation and key redaction over real HTTP"
        )

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

    # ------------------------------------------------------------------ over real HTTP (loopback)

    def _streamed(self) -> httpx2.Response:
        return self.wire().stream_reply("Hello from the provider, in several pieces.", [], USAGE)

    @pytest.mark.parametrize("cut", ["cut-chunked", "cut-close"])
    @pytest.mark.parametrize("mode", ["stream", "astream"])
    def test_a_cut_stream_is_an_error_not_a_reply(self, mode: str, cut: str) -> None:
        """A stream that ends before the API's terminal event (its body ending cleanly in chunked
        encoding, or the connection closed) raises ``StreamIncompleteError``: the partial text is not
        taken as the answer, and it is not retried (a part was delivered)."""
        with fault_server(self._streamed()) as server:
            model = self.make_model_at(f"{server.url}/{cut}", _CONFORMANCE_KEY)
            try:
                with pytest.raises(StreamIncompleteError):
                    run_spec(mode, ChatClient.create(model).prompt("Hi"))
            finally:
                _close(model)
            assert len(server.settled()) == 1, "a stream cut after its first bytes is not sent again"

    @pytest.mark.parametrize("mode", MODES)
    def test_a_request_timeout_is_a_deadline_against_a_stalled_server(self, mode: str) -> None:
        """``spec.timeout(0.3)`` against a server that never answers: ``APITimeoutError`` for the
        deadline (``error_type == "deadline_exceeded"``), no retry, and the server sees the client
        hang up rather than answering."""
        with fault_server(self._streamed()) as server:
            model = self.make_model_at(f"{server.url}/stall", _CONFORMANCE_KEY)
            try:
                with pytest.raises(APITimeoutError) as raised:
                    run_spec(mode, ChatClient.create(model).prompt("Hi").timeout(0.3))
            finally:
                _close(model)
            assert raised.value.error_type == _DEADLINE_EXCEEDED, f"not the deadline's error: {raised.value!r}"
            visits = server.settled()
        assert len(visits) == 1, "no retry starts once the deadline is spent"
        assert visits[0].hung_up, "the client hung up on the stalled request"

    def test_cancelling_astream_closes_the_stream(self) -> None:
        """Cancelling a task that reads ``astream()`` raises ``CancelledError`` in it, and the server
        sees the connection closed (the stream is not left open, nor read to its end)."""
        with fault_server(self._streamed()) as server:
            model = self.make_model_at(f"{server.url}/hold", _CONFORMANCE_KEY)

            async def cancel_after_the_first_event() -> None:
                first = asyncio.Event()

                async def read() -> None:
                    async for _ in model.astream(Prompt("Hi")):
                        first.set()

                task = asyncio.create_task(read())
                await asyncio.wait_for(first.wait(), _WAIT)
                await _cancelled(task, model)

            try:
                asyncio.run(cancel_after_the_first_event())
            finally:
                _close(model)
            (visit,) = server.settled()
        assert visit.hung_up, "the server saw the stream closed"

    def _reply_for(self, mode: str) -> httpx2.Response:
        text = "Hello from a server that takes its time."
        wire = self.wire()
        return wire.stream_reply(text, [], USAGE) if "stream" in mode else wire.reply(text, [], USAGE)

    def _check_cut_at_the_deadline(self, reply: httpx2.Response, scenario: str, mode: str) -> None:
        """``mode`` against a server that trickles ``reply`` (``scenario``) for a minute, under a
        request ``timeout``: the deadline's error within it plus a margin, one request, hung up on."""
        with fault_server(reply, trickle_for=_TRICKLE_FOR) as server:
            model = self.make_model_at(f"{server.url}/{scenario}", _CONFORMANCE_KEY)
            started = time.monotonic()
            try:
                with pytest.raises(APITimeoutError) as raised:
                    run_spec(mode, ChatClient.create(model).prompt("Hi").timeout(_DEADLINE))
                took = time.monotonic() - started
            finally:
                _close(model)
            visits = server.settled()
        assert raised.value.error_type == _DEADLINE_EXCEEDED, f"not the deadline's error: {raised.value!r}"
        assert len(visits) == 1, "nothing is retried past the deadline"
        assert visits[0].hung_up and not visits[0].finished, "the client closed the connection mid-reply"
        assert took < _DEADLINE + _MARGIN, f"{took:.1f} s against a deadline of {_DEADLINE} s"

    @pytest.mark.parametrize("scenario", ["trickle", "trickle-head"])
    @pytest.mark.parametrize("mode", MODES)
    def test_a_deadline_bounds_a_trickling_reply(self, mode: str, scenario: str) -> None:
        """A server that sends its headers (``trickle-head``) or its body (``trickle``) a few bytes
        every 0.2 s, each read quick and the whole endless: a request's ``timeout`` bounds the whole
        exchange, not each read."""
        self._check_cut_at_the_deadline(self._reply_for(mode), scenario, mode)

    @pytest.mark.parametrize("mode", MODES)
    def test_a_deadline_bounds_a_trickling_error_body(self, mode: str) -> None:
        """A 500 whose body trickles in: the error's body is read within the deadline too, and the
        error is not retried once the deadline is spent."""
        self._check_cut_at_the_deadline(self.wire().error(500, "slow failure", {}), "trickle", mode)

    def test_cancelling_acall_closes_its_connection(self) -> None:
        """Cancelling a task awaiting ``acall()`` while the reply is coming raises ``CancelledError``
        in it, and the server sees the connection closed (not held until the reply ends)."""
        with fault_server(self._reply_for("acall"), trickle_for=_TRICKLE_FOR) as server:
            model = self.make_model_at(f"{server.url}/trickle", _CONFORMANCE_KEY)

            async def cancel_while_the_reply_comes() -> None:
                task = asyncio.create_task(model.acall(Prompt("Hi")))
                answering = await asyncio.to_thread(server.answering.wait, _WAIT)
                assert answering, "the server never began to answer"
                await _cancelled(task, model)

            try:
                asyncio.run(cancel_while_the_reply_comes())
            finally:
                _close(model)
            (visit,) = server.settled()
        assert visit.hung_up and not visit.finished, "the server saw the connection closed mid-reply"

    @pytest.mark.parametrize("mode", ["call", "astream"])
    def test_the_key_is_sent_but_never_shown(self, mode: str) -> None:
        """The credential reaches the server, and is in neither the repr of the request headers nor
        the error a rejected key raises."""
        seen: list[str] = []
        with fault_server(self.wire().error(401, "conformance failure", {})) as server:
            model = self.make_model_at(f"{server.url}/whole", _CONFORMANCE_KEY)

            def on_request(request: httpx2.Request) -> None:
                seen.extend([repr(request.headers), repr(request)])

            try:
                with _requests_seen(on_request), pytest.raises(ProviderError) as raised:
                    run_spec(mode, ChatClient.create(model).prompt("Hi"))
            finally:
                _close(model)
            (visit,) = server.settled()
        assert any(_CONFORMANCE_KEY in value for value in visit.headers.values()), "the key was not sent"
        shown = [*seen, str(raised.value), repr(raised.value), raised.value.message, repr(model)]
        assert seen, "no request was seen"
        assert not [text for text in shown if _CONFORMANCE_KEY in text], "the key shows in a repr or message"


_CONFORMANCE_KEY = "conformance-secret-4f1c9a"
_DEADLINE_EXCEEDED = "deadline_exceeded"
_DEADLINE = 0.5
_MARGIN = 5.0
"""Seconds past the deadline a cut may take (a loaded machine); the server would go on for a minute."""
_TRICKLE_FOR = 60.0
_WAIT = 10.0
"""Seconds a check waits for something the server or the model should do at once (bounded)."""


async def _cancelled(task: asyncio.Task[Any], model: ChatModel) -> None:
    """Cancel ``task``, see it end with ``CancelledError``, then close the model's async side."""
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    aclose = getattr(model, "aclose", None)
    if callable(aclose):
        await aclose()


def _close(model: ChatModel) -> None:
    close = getattr(model, "close", None)
    if callable(close):
        close()


@contextlib.contextmanager
def _requests_seen(hook: Callable[[httpx2.Request], None]) -> Iterator[None]:
    """Calls ``hook`` with every request httpx2 sends meanwhile, as the request object it sends."""
    sync_send, async_send = httpx2.Client.send, httpx2.AsyncClient.send

    def send(client: httpx2.Client, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        hook(request)
        return sync_send(client, request, **kwargs)

    async def asend(client: httpx2.AsyncClient, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        hook(request)
        return await async_send(client, request, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(httpx2.Client, "send", send)
        patch.setattr(httpx2.AsyncClient, "send", asend)
        yield


_CREDENTIAL_NAMES = frozenset({"authorization", "proxy-authorization", "api-key", "x-api-key", "cookie"})
"""Credential headers by name; any header whose name mentions a key, token or secret counts too."""
