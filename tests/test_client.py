"""The fluent client: defaults vs per-call values, terminals, entity(), mutate(), errors."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from advisors import ToolCallingAdvisor
from chatclient import (
    AssistantMessage,
    ChatClient,
    ChatOptions,
    ConfigurationError,
    ContextKeys,
    DuplicateToolNameError,
    Message,
    Prompt,
    StructuredOutputError,
    SystemMessage,
    ToolCall,
    ToolCallingChatOptions,
    ToolContext,
    UserMessage,
    tool,
)
from chatclient.testing import ScriptedChatModel, ScriptItem
from chatclient.testing.advisor_kit import run_spec
from tests.conftest import Counters


class City(BaseModel):
    name: str
    country: str


@tool
def lookup(code: str) -> str:
    """Look a code up."""
    return code


def test_create_and_the_simplest_call() -> None:
    model = ScriptedChatModel(["Hello!"])
    assert ChatClient.create(model).prompt("Hi").call().content() == "Hello!"
    assert model.prompts[0].messages == (UserMessage("Hi"),)


def test_system_first_then_messages_then_user_last() -> None:
    model = ScriptedChatModel(["ok"])
    client = ChatClient.builder(model).default_system("be brief").default_user("default question").build()
    history: list[Message] = [UserMessage("earlier"), AssistantMessage("reply")]
    client.prompt().messages(history).user("now").call().content()
    assert model.prompts[0].messages == (
        SystemMessage("be brief"),
        UserMessage("earlier"),
        AssistantMessage("reply"),
        UserMessage("now"),
    )


def test_per_call_system_and_user_replace_the_defaults() -> None:
    model = ScriptedChatModel(["a", "b"])
    client = ChatClient.builder(model).default_system("S1").default_user("U1").build()
    client.prompt().call().content()
    client.prompt().system("S2").user("U2").call().content()
    assert model.prompts[0].messages == (SystemMessage("S1"), UserMessage("U1"))
    assert model.prompts[1].messages == (SystemMessage("S2"), UserMessage("U2"))


def test_per_call_tools_add_to_the_defaults(counters: Counters) -> None:
    model = ScriptedChatModel(["ok"])
    client = ChatClient.builder(model).default_tools(counters).build()
    client.prompt("hi").tools(lookup).call().content()
    names = [c.name for c in model.prompts[0].tool_callbacks]
    assert names == ["get_weather", "query_sales", "lookup"]


def test_two_tools_with_one_name_is_a_clear_error(counters: Counters) -> None:
    @tool(name="get_weather")
    def other(city: str) -> str:
        return city

    client = ChatClient.builder(ScriptedChatModel(["ok"])).default_tools(counters).build()
    with pytest.raises(DuplicateToolNameError, match="get_weather"):
        client.prompt("hi").tools(other).call().content()


def test_tool_context_and_advisor_params_merge_with_per_call_winning() -> None:
    model = ScriptedChatModel(["ok"])
    client = (
        ChatClient.builder(model)
        .default_tool_context({"tenant": "a", "user": "default"})
        .default_advisors(params={"conversation": "c1", "k": 1})
        .build()
    )
    response = client.prompt("hi").tool_context(user="u2").advisors(params={"k": 2}).call().chat_client_response()
    options = model.prompts[0].options
    assert isinstance(options, ToolCallingChatOptions)
    assert options.tool_context == {"tenant": "a", "user": "u2"}
    assert response.context["conversation"] == "c1"
    assert response.context["k"] == 2


def test_options_merge_over_client_and_model_defaults() -> None:
    class ModelWithDefaults(ScriptedChatModel):
        @property
        def default_options(self) -> ChatOptions:
            return ChatOptions(model="base-model", temperature=1.0, max_tokens=50)

    model = ModelWithDefaults(["ok"])
    client = ChatClient.builder(model).default_options(ChatOptions(temperature=0.5)).build()
    client.prompt("hi").options(ChatOptions(max_tokens=7)).call().content()
    options = model.prompts[0].options
    assert options is not None
    assert (options.model, options.temperature, options.max_tokens) == ("base-model", 0.5, 7)


def test_mutate_derives_a_client_and_leaves_the_original_alone(counters: Counters) -> None:
    model = ScriptedChatModel(["a", "b"])
    base = ChatClient.builder(model).default_system("S").default_tools(counters).build()
    derived = base.mutate().default_system("T").default_tools(lookup).build()
    base.prompt("x").call().content()
    derived.prompt("y").call().content()
    assert model.prompts[0].messages[0] == SystemMessage("S")
    assert model.prompts[1].messages[0] == SystemMessage("T")
    assert len(model.prompts[0].tool_callbacks) == 2
    assert [c.name for c in model.prompts[1].tool_callbacks] == ["get_weather", "query_sales", "lookup"]


def test_specs_are_immutable_and_can_be_branched() -> None:
    model = ScriptedChatModel(["a", "b"])
    base = ChatClient.create(model).prompt().system("S")
    left, right = base.user("left"), base.user("right")
    left.call().content()
    right.call().content()
    assert base.user_text is None
    assert [p.messages[-1] for p in model.prompts] == [UserMessage("left"), UserMessage("right")]


def test_prompt_object_adds_messages_and_options() -> None:
    model = ScriptedChatModel(["ok"])
    ChatClient.create(model).prompt(Prompt([UserMessage("from prompt")], ChatOptions(model="m1"))).call().content()
    assert model.prompts[0].messages == (UserMessage("from prompt"),)
    assert model.prompts[0].options is not None and model.prompts[0].options.model == "m1"


def test_a_request_without_messages_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="no messages"):
        ChatClient.create(ScriptedChatModel(["x"])).prompt().call().content()


def test_terminals_of_call() -> None:
    model = ScriptedChatModel(["one", "two", "three"])
    spec = ChatClient.create(model).prompt("hi").call()
    assert spec.content() == "one"
    response = spec.chat_response()
    assert response is not None and response.text == "two"
    assert spec.chat_client_response().chat_response is not None
    assert model.calls == 3, "each terminal runs the request"


def test_entity_parses_a_list_of_models_and_asks_for_the_schema() -> None:
    model = ScriptedChatModel(['```json\n[{"name": "Paris", "country": "France"}]\n```'])
    cities = ChatClient.create(model).prompt("Name a city").call().entity(list[City])
    assert cities == [City(name="Paris", country="France")]
    last = model.prompts[0].messages[-1]
    assert isinstance(last, UserMessage)
    assert last.text.startswith("Name a city\n\nYour response should be in JSON format.")
    assert '"country"' in last.text


def test_entity_uses_native_structured_output_when_the_model_supports_it() -> None:
    class Native(ScriptedChatModel):
        supports_output_schema = True

    model = Native(['{"name": "Oslo", "country": "Norway"}'])
    city = ChatClient.create(model).prompt("a city").call().entity(City, native=True)
    assert city == City(name="Oslo", country="Norway")
    assert model.prompts[0].messages == (UserMessage("a city"),)
    options = model.prompts[0].options
    assert options is not None and options.output_schema is not None
    assert options.output_schema["required"] == ["name", "country"]


def test_entity_error_keeps_the_raw_text() -> None:
    model = ScriptedChatModel(['{"name": "Paris"}', ""])
    spec = ChatClient.create(model).prompt("x").call()
    with pytest.raises(StructuredOutputError, match="country") as error:
        spec.entity(City)
    assert error.value.text == '{"name": "Paris"}'
    with pytest.raises(StructuredOutputError, match="no text"):
        spec.entity(City)


def test_async_terminals() -> None:
    model = ScriptedChatModel(["one", '{"name": "Rome", "country": "Italy"}', "streamed text"])
    client = ChatClient.create(model)

    async def main() -> tuple[str | None, City, str]:
        text = await client.prompt("a").acall().content()
        city = await client.prompt("b").acall().entity(City)
        streamed = "".join([d async for d in client.prompt("c").astream().content()])
        return text, city, streamed

    assert asyncio.run(main()) == ("one", City(name="Rome", country="Italy"), "streamed text")


def test_stream_terminals() -> None:
    model = ScriptedChatModel(["hello streaming world"], text_chunk_size=5)
    deltas = list(ChatClient.create(model).prompt("hi").stream().content())
    assert len(deltas) > 3
    assert "".join(deltas) == "hello streaming world"


def test_the_tool_loop_is_registered_once_and_can_be_opted_out(counters: Counters) -> None:
    from chatclient.testing import tool_call

    call = AssistantMessage(None, tool_calls=[tool_call("get_weather", {"city": "Oslo"})])
    model = ScriptedChatModel([call, "done", call])
    client = ChatClient.builder(model).default_tools(counters).build()
    assert client.prompt("hi").call().content() == "done"
    assert counters.weather_calls == 1
    off = client.prompt("hi").advisors(params={ContextKeys.TOOL_CALLING_AUTO_REGISTER: False}).call()
    response = off.chat_response()
    assert response is not None and response.has_tool_calls, "without the loop the tool call comes back as is"
    assert counters.weather_calls == 1


def test_a_user_tool_advisor_replaces_the_default_and_two_are_an_error() -> None:
    class Mine(ToolCallingAdvisor):
        pass

    model = ScriptedChatModel(["ok"])
    client = ChatClient.create(model)
    chain = client._chain_for([Mine()], {})
    assert [type(a) for a in chain] == [Mine]
    with pytest.raises(ConfigurationError, match="At most one tool-calling advisor"):
        client.prompt("x").advisors(Mine(), Mine()).call().content()


def test_content_is_none_when_the_reply_has_no_text() -> None:
    model = ScriptedChatModel([AssistantMessage(None)])
    assert ChatClient.create(model).prompt("x").call().content() is None


def test_requests_that_change_nothing_share_options_and_changes_never_leak(counters: Counters) -> None:
    model = ScriptedChatModel(["1", "2", "3", "4"])
    client = ChatClient.builder(model).default_options(ChatOptions(temperature=0.5)).default_tools(counters).build()
    client.prompt("a").call().content()
    client.prompt("b").options(ChatOptions(temperature=0.9)).tool_context(user="u1").call().content()
    client.prompt("c").tools(lookup).call().content()
    client.prompt("d").call().content()
    first, changed, more_tools, again = (p.options for p in model.prompts)
    assert isinstance(first, ToolCallingChatOptions) and isinstance(changed, ToolCallingChatOptions)
    assert (first.temperature, first.tool_context) == (0.5, {})
    assert (changed.temperature, changed.tool_context) == (0.9, {"user": "u1"})
    assert isinstance(more_tools, ToolCallingChatOptions) and len(more_tools.tool_callbacks) == 3
    assert again is first, "an unchanged request reuses the frozen options"


# ------------------------------------------------------------------ tool context: every source merges


class _ContextProbe:
    def __init__(self) -> None:
        self.seen: list[dict[str, object]] = []

    @tool
    def probe(self, context: ToolContext) -> str:
        """Records the context it was given."""
        self.seen.append(dict(context.context))
        return "ok"


def _context_seen(
    mode: str = "call",
    *, client_ctx: dict[str, object] | None = None, model_ctx: dict[str, object] | None = None,
    options_ctx: dict[str, object] | None = None, spec_ctx: dict[str, object] | None = None,
) -> dict[str, object]:  # fmt: skip
    probe = _ContextProbe()
    defaults = ToolCallingChatOptions(tool_context=model_ctx) if model_ctx is not None else None
    script: list[ScriptItem] = [AssistantMessage(None, tool_calls=[ToolCall(id="p", name="probe")]), "done"]
    model = ScriptedChatModel(script, default_options=defaults)
    builder = ChatClient.builder(model).default_tools(probe)
    if client_ctx is not None:
        builder = builder.default_tool_context(client_ctx)
    spec = builder.build().prompt("go")
    if options_ctx is not None:
        spec = spec.options(ToolCallingChatOptions(tool_context=options_ctx))
    if spec_ctx is not None:
        spec = spec.tool_context(spec_ctx)
    run_spec(mode, spec)
    return probe.seen[0]


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("client_ctx", "model_ctx"),
        ("client_ctx", "options_ctx"),
        ("client_ctx", "spec_ctx"),
        ("model_ctx", "options_ctx"),
        ("model_ctx", "spec_ctx"),
        ("options_ctx", "spec_ctx"),
    ],
)
@pytest.mark.parametrize("mode", ["call", "stream"])
def test_tool_context_sources_merge_in_order_and_the_later_key_wins(mode: str, earlier: str, later: str) -> None:
    seen = _context_seen(mode, **{earlier: {"a": 1, "shared": earlier}, later: {"b": 2, "shared": later}})
    assert seen == {"a": 1, "b": 2, "shared": later}


@pytest.mark.parametrize("mode", ["call", "stream"])
def test_the_options_tool_context_is_kept_when_the_spec_sets_none(mode: str) -> None:
    assert _context_seen(mode, options_ctx={"tenant": "t1"}) == {"tenant": "t1"}
