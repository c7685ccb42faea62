"""The async call path does only what a call needs (benchmarks S5: 300 calls in flight, each object and
coroutine per call counted), and the shortcuts it takes give exactly what the long way gives."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import pickle
import threading
from dataclasses import FrozenInstanceError, InitVar, dataclass, field, replace
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from advisors.tool_calling import ToolCallingAdvisor, ToolLoopExtension
from chatclient import (
    AssistantMessage,
    ChatClient,
    ChatOptions,
    ChatResponse,
    FinishReason,
    JsonPart,
    Prompt,
    TextPart,
    ToolResponse,
    ToolResponseMessage,
    ToolResult,
    Usage,
    UserMessage,
    tool,
)
from chatclient._trusted import fast_frozen, trusted
from chatclient.advisor import ContextKeys
from chatclient.client import ChatClientRequestSpec
from chatclient.errors import MalformedResponseError
from chatclient.model import ChatModel
from chatclient.responses import ChatResponseMetadata, Generation, GenerationMetadata
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import ToolCallback
from chatclient.tools._execution import off_the_loop
from chatclient.tools.manager import ToolExecutionResult
from chatclient.tools.resolve import split_tools
from chatclient.turn import Turn, turn_messages, turn_of
from providers._retry import RetryPolicy
from providers._transport import ProviderHttp
from providers.openai import OpenAIChatModel
from providers.openai._mapping import parse_response

# ------------------------------------------------------------------------------------------- trusted()


def _validated_and_trusted() -> list[tuple[BaseModel, BaseModel]]:
    usage = {"prompt_tokens": 3, "completion_tokens": 4, "cache_read_tokens": 1, "cache_write_tokens": 0,
             "reasoning_tokens": 2}  # fmt: skip
    message = {"role": "assistant", "text": "hi", "tool_calls": (), "metadata": {"reasoning": "r"}}
    meta: dict[str, Any] = {"finish_reason": FinishReason.STOP, "extra": {"raw_finish_reason": "stop"}}
    pairs: list[tuple[BaseModel, BaseModel]] = [
        (Usage(**usage), trusted(Usage, dict(usage))),
        (AssistantMessage("hi", metadata={"reasoning": "r"}), trusted(AssistantMessage, dict(message))),
        (GenerationMetadata(**meta), trusted(GenerationMetadata, dict(meta))),
        (UserMessage("q"), trusted(UserMessage, {"role": "user", "text": "q", "metadata": {}, "media": ()})),
    ]
    output, gen_meta = pairs[1][1], pairs[2][1]
    assert isinstance(output, AssistantMessage) and isinstance(gen_meta, GenerationMetadata)
    generation = Generation(output, gen_meta)
    pairs.append((generation, trusted(Generation, {"output": output, "metadata": gen_meta})))
    metadata = ChatResponseMetadata(id="r1", model="m", usage=Usage(**usage), extra={"request_id": "x"})
    pairs.append((metadata, trusted(ChatResponseMetadata, {"id": "r1", "model": "m", "usage": Usage(**usage),
                                                          "extra": {"request_id": "x"}})))  # fmt: skip
    pairs.append((ChatResponse([generation], metadata),
                  trusted(ChatResponse, {"generations": (generation,), "metadata": metadata})))  # fmt: skip
    pairs.append((Prompt("q"), trusted(Prompt, {"messages": (UserMessage("q"),), "options": None})))
    return pairs


def test_a_trusted_model_is_the_validated_one() -> None:
    for validated, built in _validated_and_trusted():
        assert type(built) is type(validated)
        assert built == validated and validated == built
        try:
            expected_hash: int | None = hash(validated)
        except TypeError:  # a model with a dict field is not hashable, either way
            expected_hash = None
        if expected_hash is not None:
            assert hash(built) == expected_hash
        assert built.model_dump() == validated.model_dump()
        assert built.model_dump_json() == validated.model_dump_json()
        assert type(validated).model_validate_json(built.model_dump_json()) == validated
        assert repr(built) == repr(validated)
        assert built.model_copy(update={}) == validated


def test_a_trusted_model_is_frozen_and_copies_like_a_validated_one() -> None:
    built = trusted(Usage, {"prompt_tokens": 1, "completion_tokens": 2, "cache_read_tokens": 0,
                            "cache_write_tokens": 0, "reasoning_tokens": 0})  # fmt: skip
    with pytest.raises(ValidationError):
        built.prompt_tokens = 5
    assert built.model_copy(update={"prompt_tokens": 7}).prompt_tokens == 7
    assert built.prompt_tokens == 1


def test_trusted_wants_every_field_so_a_new_field_is_not_left_out() -> None:
    with pytest.raises(TypeError, match=r"missing fields \['cache_write_tokens'\], unknown fields \['typo'\]"):
        trusted(Usage, {"prompt_tokens": 1, "completion_tokens": 2, "cache_read_tokens": 0, "typo": 0,
                        "reasoning_tokens": 0})  # fmt: skip


def test_a_model_with_a_validator_is_validated_all_the_same() -> None:
    class Checked(BaseModel):
        model_config = ConfigDict(frozen=True)
        name: str

        @field_validator("name")
        @classmethod
        def _upper(cls, value: str) -> str:
            return value.upper()

    assert trusted(Checked, {"name": "abc"}).name == "ABC"
    with pytest.raises(ValidationError):
        trusted(Checked, {"name": 5})


# ------------------------------------------------------------------------------------------- replies


def _reply(**changes: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "id": "chatcmpl-1",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "completion_tokens_details": {"reasoning_tokens": 1}},
    }
    reply.update(changes)
    return reply


def test_a_parsed_reply_equals_the_one_built_by_validation() -> None:
    parsed = parse_response(_reply(), {"x-request-id": "req-1"})
    expected = ChatResponse(
        [Generation(AssistantMessage("Hello"), GenerationMetadata(finish_reason=FinishReason.STOP,
                                                                  extra={"raw_finish_reason": "stop"}))],
        ChatResponseMetadata(id="chatcmpl-1", model="gpt-4o-mini", extra={"request_id": "req-1"},
                             usage=Usage(prompt_tokens=5, completion_tokens=2, reasoning_tokens=1)),
    )  # fmt: skip
    assert parsed == expected
    assert parsed.model_dump_json() == expected.model_dump_json()


def test_counts_that_are_not_ints_are_still_validated_and_converted() -> None:
    parsed = parse_response(_reply(usage={"prompt_tokens": "12", "completion_tokens": 3.0}))
    usage = parsed.metadata.usage
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (12, 3)
    assert type(usage.prompt_tokens) is int
    with pytest.raises(MalformedResponseError, match="usage"):
        parse_response(_reply(usage={"prompt_tokens": "many"}))


def test_an_id_or_model_that_is_not_a_string_is_malformed_as_before() -> None:
    with pytest.raises(MalformedResponseError, match="Unexpected Chat Completions reply"):
        parse_response(_reply(id=["not", "a", "string"]))
    with pytest.raises(MalformedResponseError, match="Unexpected Chat Completions reply"):
        parse_response(_reply(model={"name": "x"}))


# ------------------------------------------------------------------------------------------- the client


def test_a_spec_copy_is_what_replace_makes() -> None:
    client = ChatClient.create(ScriptedChatModel(["a"]))
    spec = client.prompt("question")
    assert spec == replace(client._defaults, user_text="question", user_media=())
    assert isinstance(spec, ChatClientRequestSpec)
    assert spec.system("be brief") == replace(spec, system_text="be brief")
    assert client._defaults.user_text is None, "the defaults are not changed"


def test_a_plain_user_text_makes_the_message_validation_would() -> None:
    client = ChatClient.create(ScriptedChatModel(["a"]))
    assert client.prompt("question")._messages() == [UserMessage("question")]
    with pytest.raises(ValidationError):
        client.prompt().user(5)._messages()  # type: ignore[arg-type]  # not a str: validated, refused


async def test_an_async_call_is_prepared_without_a_coroutine_unless_it_resumes_from_an_async_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a plain acall() needs no async preparation")

    monkeypatch.setattr(ChatClientRequestSpec, "_aprepare", refuse)
    client = ChatClient.create(ScriptedChatModel(["a", "b"]))
    assert await client.prompt("1").acall().content() == "a"
    chunks = [text async for text in client.prompt("2").astream().content()]
    assert "".join(chunks) == "b"


def test_the_model_merges_the_same_options_once() -> None:
    model = OpenAIChatModel("gpt-4o-mini", api_key="k", base_url="http://127.0.0.1:9/v1")
    options = ChatOptions(temperature=0.5)
    first = model.options_for(Prompt("x", options))
    assert model.options_for(Prompt("y", options)) is first
    assert first.temperature == 0.5 and first.model == "gpt-4o-mini"
    other = model.options_for(Prompt("z", ChatOptions(temperature=0.1)))
    assert other is not first and other.temperature == 0.1


# ------------------------------------------------------------------------------------------- retries


def _http(handler: Any, retry: RetryPolicy) -> ProviderHttp:
    return ProviderHttp(provider="t", base_url="http://t.example", headers={}, error_details=lambda body: None,
                        async_http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
                        retry=retry)  # fmt: skip


async def test_the_success_path_does_not_wait_and_a_failure_is_still_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", no_sleep)
    statuses = iter([200, 503, 503, 200])

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(next(statuses), json={"ok": True})

    http = _http(handler, RetryPolicy(max_retries=2, initial_backoff=0.25))
    assert (await http.apost_json("/x", {}))[0] == {"ok": True}
    assert waits == []
    assert (await http.apost_json("/x", {}))[0] == {"ok": True}
    assert waits == [0.25, 0.5]


# ------------------------------------------------------------------------------------------- the import


def test_the_import_leaves_retry_reporting_and_entity_conversion_for_their_first_use() -> None:
    import subprocess
    import sys

    code = (
        "import sys, chatclient, providers.openai, providers.anthropic\n"
        "print('chatclient.observation' in sys.modules)\n"
        "from chatclient import ChatClient\n"
        "print('chatclient.structured_output' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split() == ["False", "False"]


# ------------------------------------------------------------------------------------------- the tool round


class _Replies(ChatModel):
    """Two prebuilt replies: asks for ``add``, then answers once it sees the result (the loop's own cost alone)."""

    def __init__(self) -> None:
        self.ask = ChatResponse.of(AssistantMessage(None, tool_calls=[tool_call("add", {"a": 2, "b": 3})]),
                                   finish_reason=FinishReason.TOOL_CALLS, usage=Usage(prompt_tokens=3))  # fmt: skip
        self.answer = ChatResponse.of("5", finish_reason=FinishReason.STOP, usage=Usage(prompt_tokens=4))

    def call(self, prompt: Prompt) -> ChatResponse:
        return self.answer if isinstance(prompt.messages[-1], ToolResponseMessage) else self.ask

    async def acall(self, prompt: Prompt) -> ChatResponse:
        return self.call(prompt)


@tool(name="add", description="Add two numbers")
async def _add(a: int, b: int) -> str:
    return str(a + b)


class _Provider:
    """A dynamic source that lists once and hands back the same tools (as an MCP provider does)."""

    def __init__(self, *tools: Any) -> None:
        self.tools = split_tools(tools)[0]
        self.asked = 0

    async def tool_callbacks(self) -> tuple[ToolCallback, ...]:
        self.asked += 1
        return self.tools


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every pydantic model built by validation (``__init__``) or by ``model_construct``, by class name."""
    built: list[str] = []
    init, construct = BaseModel.__init__, BaseModel.model_construct.__func__  # type: ignore[attr-defined]

    def counting_init(self: BaseModel, /, **data: Any) -> None:
        built.append(type(self).__name__)
        init(self, **data)

    def counting_construct(cls: type[BaseModel], /, _fields_set: Any = None, **values: Any) -> BaseModel:
        built.append(f"construct {cls.__name__}")
        return construct(cls, _fields_set, **values)  # type: ignore[no-any-return]

    monkeypatch.setattr(BaseModel, "__init__", counting_init)
    monkeypatch.setattr(BaseModel, "model_construct", classmethod(counting_construct))
    return built


@pytest.mark.parametrize("source", ["tool", "provider"])
async def test_a_tool_round_builds_no_model_by_validation_once_its_tools_are_merged(
    source: str, validations: list[str]
) -> None:
    provider = _Provider(_add)
    tools = _add if source == "tool" else provider
    client = ChatClient.create(_Replies())
    first = await client.prompt("2+3?").tools(tools).acall().chat_client_response()
    assert first.text == "5"
    validations.clear()
    for _ in range(3):
        response = await client.prompt("2+3?").tools(tools).acall().chat_client_response()
        assert response == first.with_context({ContextKeys.TURN: turn_of(response)})
    # The tool's arguments are the model's JSON: validated, every call. Nothing else is: the replies, the tool's
    # result, every round's prompt and the turn are built from values already checked.
    assert validations == ["_add_arguments"] * 3
    usage = response.chat_response.metadata.usage if response.chat_response else None
    assert usage == Usage(prompt_tokens=7), "the rounds' usage is still summed"
    assert [type(m).__name__ for m in turn_messages(response)] == [
        "UserMessage", "AssistantMessage", "ToolResponseMessage", "AssistantMessage"]  # fmt: skip
    if source == "provider":
        assert provider.asked == 4, "a provider is still asked once per request"


_STRUCTURED = ToolResult([TextPart("5"), JsonPart({"sum": 5})], metadata={"source": "adder"})


@tool(name="add", description="Add two numbers")
async def _add_structured(a: int, b: int) -> ToolResult:
    return _STRUCTURED


async def test_a_structured_result_becomes_the_validated_tool_response_without_validating_it_again(
    validations: list[str],
) -> None:
    client = ChatClient.create(_Replies())
    spec = client.prompt("2+3?").tools(_add_structured)
    await spec.acall().chat_client_response()
    validations.clear()
    response = await spec.acall().chat_client_response()
    assert validations == ["_add_structured_arguments"], "the ToolResult's parts and metadata were checked already"
    (sent,) = next(m for m in turn_messages(response) if isinstance(m, ToolResponseMessage)).responses
    long_way = ToolResponse(id=sent.id, name="add", response_data='5\n{"sum":5}', parts=_STRUCTURED.parts,
                            result_metadata={"source": "adder"})  # fmt: skip
    assert sent == long_way and sent.model_dump() == long_way.model_dump()
    assert sent.result_metadata is not _STRUCTURED.metadata, "the response keeps its own copy"


def test_a_request_with_its_own_tools_merges_its_options_once_per_tool_set(monkeypatch: pytest.MonkeyPatch) -> None:
    merges: list[object] = []
    real = ChatClientRequestSpec._merge_options

    def counting(self: ChatClientRequestSpec, model_defaults: Any) -> Any:
        merges.append(self.tool_callbacks)
        return real(self, model_defaults)

    monkeypatch.setattr(ChatClientRequestSpec, "_merge_options", counting)

    @tool(description="Subtract")
    def sub(a: int, b: int) -> str:
        return str(a - b)

    client = ChatClient.create(ScriptedChatModel(["x"] * 8))
    options = [client.prompt(f"q{i}").tools(_add)._options() for i in range(3)]
    assert len(merges) == 1 and options[0] is options[1] is options[2]
    assert [c.name for c in options[0].tool_callbacks] == ["add"]  # type: ignore[attr-defined]
    other = client.prompt("q").tools(sub)._options()
    assert len(merges) == 2 and [c.name for c in other.tool_callbacks] == ["sub"]  # type: ignore[attr-defined]
    with_context = client.prompt("q").tools(sub).tool_context(user="u1")._options()
    assert len(merges) == 3 and with_context.tool_context == {"user": "u1"}  # type: ignore[attr-defined]
    plain = client.prompt("q")._options()
    assert len(merges) == 4 and plain.tool_callbacks == ()  # type: ignore[attr-defined]
    assert client.prompt("r")._options() is plain and len(merges) == 4


async def test_provided_tools_are_merged_once_per_tool_set_and_anew_when_the_set_changes() -> None:
    provider = _Provider(_add)
    client = ChatClient.create(_Replies())
    requests = [await client.prompt("q").tools(provider)._prepare().aresolve() for _ in range(2)]
    first, second = (r.prompt.options for r in requests)
    assert first is second and [c.name for c in first.tool_callbacks] == ["add"]  # type: ignore[union-attr]

    @tool(description="Add, again")
    async def add2(a: int, b: int) -> str:
        return str(a + b)

    provider.tools = split_tools([_add, add2])[0]  # the server's tools changed
    third = (await client.prompt("q").tools(provider)._prepare().aresolve()).prompt.options
    assert third is not first and [c.name for c in third.tool_callbacks] == ["add", "add2"]  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------- a sync tool off the loop

_request_var: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


async def test_a_sync_call_off_the_loop_returns_raises_and_sees_the_callers_context() -> None:
    def work(x: int) -> str:
        if x < 0:
            raise ValueError("negative")
        return f"{x} in {_request_var.get()} on {threading.current_thread().name}"

    _request_var.set("r1")
    result = await off_the_loop(work, 2)
    assert result.startswith("2 in r1 on chatclient-tool"), result
    with pytest.raises(ValueError, match="negative"):
        await off_the_loop(work, -1)


async def test_a_caller_cancelled_while_the_sync_call_runs_is_cancelled_and_the_late_result_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import chatclient.tools._execution as execution

    pool = ThreadPoolExecutor(max_workers=1)  # one worker: the next call starts once the first has settled
    monkeypatch.setattr(execution, "_default_pool", lambda: pool)
    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: errors.append(context))
    started, release = threading.Event(), threading.Event()

    def blocking() -> str:
        started.set()
        release.wait(30)
        return "late"

    try:
        task = asyncio.ensure_future(off_the_loop(blocking))
        await asyncio.to_thread(started.wait, 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        # Settled after the first call's late result was handed to the loop (and found its future cancelled).
        assert await off_the_loop(lambda: "next") == "next"
        assert errors == []
    finally:
        loop.set_exception_handler(None)
        pool.shutdown()


# ------------------------------------------------------------------------------------------- the plain call


class _LongWay(ToolLoopExtension):
    """A hook that changes nothing but keeps the loop on its full flow: the reference for the short path."""

    def do_finalize_loop(self, response: Any, state: Any) -> Any:
        return response


def _counting_flows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    started: list[int] = []
    start = ToolCallingAdvisor._start

    def counting(self: ToolCallingAdvisor, *args: Any) -> Any:
        started.append(1)
        return start(self, *args)

    monkeypatch.setattr(ToolCallingAdvisor, "_start", counting)
    return started


class _Fixed(ChatModel):
    """The same prebuilt replies in order, so two runs get equal replies."""

    def __init__(self, *replies: ChatResponse) -> None:
        self.replies = list(replies)

    def call(self, prompt: Prompt) -> ChatResponse:
        return self.replies.pop(0)


def _same_turn(short: Any, long: Any) -> None:
    """Equal replies and contexts (the long way's context also holds its extension)."""
    assert short.chat_response == long.chat_response
    context = {k: v for k, v in long.context.items() if k != ContextKeys.TOOL_LOOP_EXTENSIONS}
    assert short.context == context


def _shape(events: list[Any]) -> list[tuple[str, Any]]:
    return [(type(e).__name__, getattr(e, "text", None) or getattr(e, "round", None)) for e in events]


@pytest.mark.parametrize("mode", MODES)
def test_a_plain_call_skips_the_loops_flow_and_ends_the_turn_the_flow_would(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _counting_flows(monkeypatch)
    reply = ChatResponse.of("Paris.", finish_reason=FinishReason.STOP, usage=Usage(prompt_tokens=2))
    client = ChatClient.create(_Fixed(reply, reply))
    spec = client.prompt().system("Be brief.").messages(UserMessage("hi"), AssistantMessage("hello")).user("Capital?")
    short, short_events = run_spec(mode, spec.advisors(params={ContextKeys.TURN_ID: "t-1"}))
    assert started == [], "no tools, no hooks: the flow is not started"
    long, long_events = run_spec(
        mode, spec.advisors(params={ContextKeys.TURN_ID: "t-1"}).tool_loop_extensions(_LongWay())
    )
    assert started == [1]
    _same_turn(short, long)
    assert _shape(short_events) == _shape(long_events)
    turn = turn_of(short)
    assert turn is not None and (turn.id, turn.rounds, turn.paused) == ("t-1", 1, False)
    assert [getattr(m, "text", None) for m in turn.messages] == ["Capital?", "Paris."]
    fresh = turn_of(run_spec(mode, ChatClient.create(ScriptedChatModel(["a", "b"])).prompt("q"))[0])
    other = turn_of(run_spec(mode, ChatClient.create(ScriptedChatModel(["a"])).prompt("q"))[0])
    assert fresh is not None and other is not None and fresh.id != other.id, "each turn has a new id"


@pytest.mark.parametrize("mode", MODES)
def test_a_plain_call_whose_reply_asks_for_tools_goes_on_as_the_flow_does(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _counting_flows(monkeypatch)

    ask = ChatResponse.of(AssistantMessage(None, tool_calls=[tool_call("nowhere", {}, id="c1")]),
                          finish_reason=FinishReason.TOOL_CALLS, usage=Usage(prompt_tokens=3))  # fmt: skip
    answer = ChatResponse.of("Sorry.", finish_reason=FinishReason.STOP, usage=Usage(prompt_tokens=4))

    def script() -> ChatModel:
        return _Fixed(ask, answer)

    spec = ChatClient.create(script()).prompt("q").advisors(params={ContextKeys.TURN_ID: "t-2"})
    short, short_events = run_spec(mode, spec)
    assert started == [1], "the flow takes over from the reply it was given"
    long_spec = ChatClient.create(script()).prompt("q").advisors(params={ContextKeys.TURN_ID: "t-2"})
    long, long_events = run_spec(mode, long_spec.tool_loop_extensions(_LongWay()))
    _same_turn(short, long)
    assert _shape(short_events) == _shape(long_events)
    turn = turn_of(short)
    assert turn is not None and turn.rounds == 2
    assert [type(m).__name__ for m in turn.messages] == [
        "UserMessage", "AssistantMessage", "ToolResponseMessage", "AssistantMessage"]  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
def test_a_plain_call_that_fails_raises_what_the_flow_raises(mode: str) -> None:
    class Broken(ChatModel):
        def call(self, prompt: Prompt) -> ChatResponse:
            raise MalformedResponseError("bad reply")

    with pytest.raises(MalformedResponseError, match="bad reply"):
        run_spec(mode, ChatClient.create(Broken()).prompt("q"))


# ------------------------------------------------------------------------------------------- per round, not per turn


async def test_a_first_round_counts_no_turn_and_awaits_a_lone_call_without_a_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A turn whose calls cannot reach the lowest limit is not counted call by call, and one call is
    awaited as it is (no ``arun_all``): the same reply either way."""
    from chatclient.tools import _execution, _limits, manager

    counted: list[int] = []
    batched: list[int] = []
    count_turn, arun_all = _limits._count_turn, _execution.arun_all

    def counting(history: Any) -> Any:
        counted.append(1)
        return count_turn(history)

    def batching(invocations: Any) -> Any:
        batched.append(1)
        return arun_all(invocations)

    monkeypatch.setattr(_limits, "_count_turn", counting)
    monkeypatch.setattr(manager, "arun_all", batching)
    client = ChatClient.create(_Replies())
    for _ in range(3):
        response = await client.prompt("2+3?").tools(_add).acall().chat_client_response()
        assert response.text == "5"
    assert counted == [] and batched == []


def test_a_providers_tuple_is_checked_again_once_it_is_another() -> None:
    """The last tuple a provider handed back is not walked again; any other one is."""
    from chatclient.errors import ConfigurationError
    from chatclient.tools.resolve import resolve_providers

    class Handing:
        def __init__(self, tools: Any) -> None:
            self.tools = tools

        def tool_callbacks(self) -> Any:
            return self.tools

    good = Handing(tuple(split_tools([_add])[0]))
    assert resolve_providers([good]) == resolve_providers([good]) == good.tools
    with pytest.raises(ConfigurationError, match="not a ToolCallback"):
        resolve_providers([Handing((*good.tools, "not a tool"))])
    with pytest.raises(ConfigurationError, match="not a ToolCallback"):
        resolve_providers([Handing([*good.tools, "not a tool"])])
    assert resolve_providers([good]) == good.tools


# ------------------------------------------------------------------------------------------- builders


def test_each_builder_makes_the_validated_model() -> None:
    from chatclient import _builders as built

    usage = built.usage(prompt_tokens=3, completion_tokens=4, cache_read_tokens=1, cache_write_tokens=0,
                        reasoning_tokens=2)  # fmt: skip
    assert usage == Usage(prompt_tokens=3, completion_tokens=4, cache_read_tokens=1, reasoning_tokens=2)
    message = built.assistant_message(role="assistant", text="hi", tool_calls=(), metadata={})
    meta = built.generation_metadata(finish_reason=FinishReason.STOP, extra={})
    generation = built.generation(output=message, metadata=meta)
    metadata = built.response_metadata(id="r", model="m", usage=usage, extra={})
    pairs: list[tuple[BaseModel, BaseModel]] = [
        (usage, Usage(**usage.model_dump())),
        (message, AssistantMessage("hi")),
        (generation, Generation(AssistantMessage("hi"), GenerationMetadata(finish_reason=FinishReason.STOP))),
        (metadata, ChatResponseMetadata(id="r", model="m", usage=usage)),
        (built.chat_response(generations=(generation,), metadata=metadata), ChatResponse([generation], metadata)),
        (built.user_message(role="user", text="q", metadata={}, media=()), UserMessage("q")),
        (built.prompt(messages=(UserMessage("q"),), options=None), Prompt("q")),
    ]
    for made, validated in pairs:
        assert type(made) is type(validated) and made == validated
        assert made.model_dump_json() == validated.model_dump_json() and repr(made) == repr(validated)
        assert made.model_fields_set == set(type(made).model_fields)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'reasoning_tokens'"):
        built.usage(prompt_tokens=1, completion_tokens=2, cache_read_tokens=0, cache_write_tokens=0)


def test_each_builder_holds_each_value_under_its_own_field_and_nothing_else() -> None:
    from chatclient import _builders as built

    for name in built.__all__:
        build = getattr(built, name)
        fields = inspect.signature(build).parameters
        values: dict[str, object] = {field: field for field in fields}  # each value is its field's name
        if "tool_calls" in values:
            values["tool_calls"] = ()  # read by the assistant message's builder (ids of its own)
        model = build(**values)
        cls = type(model)
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in fields.values())
        assert list(model.__dict__.items()) == [(field, values[field]) for field in cls.model_fields]
        assert model.__pydantic_fields_set__ == set(cls.model_fields)
        assert model.__pydantic_extra__ is None and model.__pydantic_private__ is None


def test_a_model_that_must_be_validated_gets_no_builder() -> None:
    from chatclient._trusted import builder_for

    class Checked(BaseModel):
        name: str

        @field_validator("name")
        @classmethod
        def _upper(cls, value: str) -> str:
            return value.upper()

    with pytest.raises(TypeError, match="no builder for Checked: it does more than hold fields"):
        builder_for(Checked)
    assert builder_for(ChatResponseMetadata)(id="r", model="m", usage=None, extra={}).model == "m"


# ------------------------------------------------------------------------ builders (chatclient._builders)


def test_each_builder_makes_the_model_validation_would() -> None:
    from chatclient import _builders as built

    usage = {"prompt_tokens": 3, "completion_tokens": 4, "cache_read_tokens": 1, "cache_write_tokens": 0,
             "reasoning_tokens": 2}  # fmt: skip
    message = built.assistant_message(role="assistant", text="hi", tool_calls=(), metadata={"k": 1})
    meta = built.generation_metadata(finish_reason=FinishReason.STOP, extra={"raw_finish_reason": "stop"})
    generation = built.generation(output=message, metadata=meta)
    metadata = built.response_metadata(id="r1", model="m", usage=built.usage(**usage), extra={})
    user = built.user_message(role="user", text="q", metadata={}, media=())
    pairs: list[tuple[BaseModel, BaseModel]] = [
        (Usage(**usage), built.usage(**usage)),
        (AssistantMessage("hi", metadata={"k": 1}), message),
        (GenerationMetadata(finish_reason=FinishReason.STOP, extra={"raw_finish_reason": "stop"}), meta),
        (Generation(AssistantMessage("hi", metadata={"k": 1}), meta), generation),
        (ChatResponseMetadata(id="r1", model="m", usage=Usage(**usage)), metadata),
        (ChatResponse([generation], metadata), built.chat_response(generations=(generation,), metadata=metadata)),
        (UserMessage("q"), user),
        (Prompt("q"), built.prompt(messages=(user,), options=None)),
    ]
    for validated, made in pairs:
        assert type(made) is type(validated) and made == validated and validated == made
        assert repr(made) == repr(validated)
        assert made.model_dump_json() == validated.model_dump_json()
        assert made.model_fields_set == validated.model_fields_set | set(type(validated).model_fields)
        with pytest.raises(ValidationError):
            setattr(made, next(iter(type(made).model_fields)), None)


def test_a_builder_call_without_a_field_or_with_an_unknown_one_is_refused() -> None:
    from chatclient import _builders as built

    with pytest.raises(TypeError):
        built.generation(output=None)
    with pytest.raises(TypeError):
        built.prompt(messages=(), options=None, typo=1)


def test_two_calls_share_the_frozen_metadata_of_their_common_finish_reason() -> None:
    first, second = parse_response(_reply()), parse_response(_reply())
    assert first.generations[0].metadata is second.generations[0].metadata
    assert first.generations[0] is not second.generations[0]
    with pytest.raises(TypeError, match="shared"):
        first.generations[0].metadata.extra["raw_finish_reason"] = "x"
    assert second.generations[0].metadata.extra == {"raw_finish_reason": "stop"}


# ------------------------------------------------------------------------------------------- fast_frozen


@dataclass(frozen=True, slots=True)
class _Plain:
    name: str
    count: int = 1
    tags: dict[str, int] = field(default_factory=dict)


@fast_frozen
@dataclass(frozen=True, slots=True)
class _Fast:
    name: str
    count: int = 1
    tags: dict[str, int] = field(default_factory=dict)


def test_a_fast_frozen_class_is_made_as_its_plain_dataclass_is() -> None:
    fast_params, plain_params = inspect.signature(_Fast).parameters, inspect.signature(_Plain).parameters
    assert list(fast_params) == list(plain_params)
    assert [p.default for p in fast_params.values()] == [inspect.Parameter.empty, 1, None]  # None: the factory's
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (("a",), {}), (("a", 2), {}), (("a",), {"tags": {"x": 1}}), ((), {"name": "a", "count": 3})
    ]  # fmt: skip
    for args, kwargs in calls:
        fast, plain = _Fast(*args, **kwargs), _Plain(*args, **kwargs)
        assert (fast.name, fast.count, fast.tags) == (plain.name, plain.count, plain.tags)
        assert repr(fast) == repr(plain).replace("_Plain", "_Fast")
        assert fast == _Fast(*args, **kwargs) and replace(fast, count=5) == _Fast(fast.name, 5, fast.tags)
        assert pickle.loads(pickle.dumps(fast)) == fast == copy.copy(fast)
    assert _Fast("a").tags == _Fast("a", tags=None).tags == {}  # type: ignore[arg-type]
    assert _Fast("a").tags is not _Fast("a").tags  # a new default each time, as the factory's
    with pytest.raises(FrozenInstanceError):
        _Fast("a").name = "b"  # type: ignore[misc]
    wrong: list[tuple[tuple[Any, ...], dict[str, Any]]] = [((), {}), (("a", 1, {}, 2), {}), (("a",), {"typo": 1})]
    for args, kwargs in wrong:
        with pytest.raises(TypeError):
            _Fast(*args, **kwargs)


def test_what_fast_frozen_cannot_make_as_the_dataclass_would_is_refused() -> None:
    @dataclass(slots=True)
    class Mutable:
        name: str

    @dataclass(frozen=True)
    class WithoutSlots:
        name: str

    @dataclass(frozen=True, slots=True)
    class PostInit:
        name: str

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class KeywordOnly:
        name: str = field(kw_only=True)

    @dataclass(frozen=True, slots=True)
    class NotInInit:
        name: str = field(init=False, default="x")

    @dataclass(frozen=True, slots=True)
    class WithInitVar:
        name: str
        seed: InitVar[int]

    unfit: list[type] = [Mutable, WithoutSlots]
    for cls in unfit:
        with pytest.raises(TypeError, match="needs a @dataclass"):
            fast_frozen(cls)
    beyond: list[type] = [PostInit, KeywordOnly, NotInInit, WithInitVar]
    for cls in beyond:
        with pytest.raises(TypeError, match="cannot make"):
            fast_frozen(cls)


def test_a_turn_and_a_tool_round_result_are_made_as_before() -> None:
    turn = Turn("t1", (UserMessage("q"),), 2)
    assert (turn.id, turn.messages, turn.rounds, turn.paused) == ("t1", (UserMessage("q"),), 2, False)
    assert Turn(id="t1", messages=(UserMessage("q"),), rounds=2, paused=False) == turn
    result = ToolExecutionResult((UserMessage("q"),))
    assert (result.return_direct, result.limit_exceeded) == (False, None)
    assert ToolExecutionResult((), True, "over").limit_exceeded == "over"
    with pytest.raises(FrozenInstanceError):
        turn.rounds = 3  # type: ignore[misc]


# ------------------------------------------------------------------------------------------- one read-only dict


def test_the_shared_reply_metadata_and_the_memorys_shared_messages_refuse_changes_with_one_dict() -> None:
    from chatclient._readonly import ReadOnlyDict
    from chatclient.memory._frozen import frozen

    shared_extra = parse_response(_reply()).generations[0].metadata.extra
    cached = frozen(UserMessage("q", metadata={"k": 1})).metadata
    for extra in (shared_extra, cached):
        assert type(extra) is ReadOnlyDict
        with pytest.raises(TypeError, match="read-only because it is shared"):
            extra["x"] = 1
        for copied in (pickle.loads(pickle.dumps(extra)), copy.copy(extra), copy.deepcopy(extra), extra.copy()):
            assert type(copied) is dict and copied == extra
