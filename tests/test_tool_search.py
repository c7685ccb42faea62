"""Tool search through the advisor: every mode, confirmation, memory, return_direct, bypass, reporting."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from advisors.tool_calling import ToolCallingAdvisor
from advisors.tool_index import Bm25Index, EmbeddingIndex, RegexIndex, tokenize
from advisors.tool_search import (
    METADATA_KEY,
    ToolSearchExtension,
    ToolSearchToolCallingAdvisor,
    found_tool_names,
)
from chatclient import (
    AssistantMessage,
    ChatClient,
    ChatClientResponse,
    Message,
    SystemMessage,
    ToolCallDecision,
    ToolCallDecisions,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    awaiting_decision,
    turn_messages,
)
from chatclient.errors import ConfigurationError
from chatclient.prompt import Prompt
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import FunctionToolCallback, ToolCallback, ToolDefinition

Need = tuple[str, dict[str, str], str]
"""(tool name, arguments, the words a capable model would search with)."""

WEATHER: Need = ("weather", {"city": "Landsmeer"}, "weather forecast")
SHOPS: Need = ("clothing_shops", {"city": "Landsmeer"}, "clothing shops")


def catalogue(
    ran: list[str] | None = None, *, gated: str = "", direct: str = "", filler: int = 40
) -> list[ToolCallback]:
    """Two needed tools among ``filler`` others whose definitions make search worth it."""

    def make(name: str, description: str) -> ToolCallback:
        def run(city: str = "") -> str:
            if ran is not None:
                ran.append(name)
            return f"{name} for {city}: ok"

        builder = FunctionToolCallback.builder(name, run).description(description)
        return builder.requires_confirmation(name == gated).return_direct(name == direct).build()

    tools = [
        make("weather", "Current weather and forecast for a city."),
        make("clothing_shops", "Clothing shops open now in a city."),
    ]
    for i in range(filler):
        tools.append(make(f"invoice_{i}", f"Create, list or cancel invoices of ledger {i} for the accounting team."))
    return tools


def capable(needs: Sequence[Need]) -> ScriptedChatModel:
    """A stateless model that behaves like a capable LLM: it calls the needed tools it is offered,
    searches for those it lacks, and answers once every need has a result."""

    def reply(prompt: Prompt) -> AssistantMessage | str:
        offered = {t.name for t in prompt.tool_callbacks}
        done = {r.name for m in prompt.messages if isinstance(m, ToolResponseMessage) for r in m.responses}
        searched = {c.arguments for m in prompt.messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
        missing = [n for n in needs if n[0] not in done]
        if not missing:
            return "Wear a coat; two shops are open."
        calls = [tool_call(name, args) for name, args, _ in missing if name in offered]
        if not calls:
            calls = [
                tool_call("tool_search", {"query": query})
                for name, _, query in missing
                if f'{{"query": "{query}"}}' not in searched
            ]
        return AssistantMessage(None, tool_calls=calls) if calls else "I could not find the tools."

    return ScriptedChatModel(reply)


def searching(model: ScriptedChatModel, tools: Sequence[ToolCallback]) -> ChatClient:
    return ChatClient.builder(model).default_advisors(ToolSearchToolCallingAdvisor()).default_tools(tools).build()


def report_of(response: ChatClientResponse) -> Any:
    assert response.chat_response is not None
    return response.chat_response.metadata.extra[METADATA_KEY]


def offered_names(model: ScriptedChatModel) -> list[list[str]]:
    return [[t.name for t in p.tool_callbacks] for p in model.prompts]


@pytest.mark.parametrize("mode", MODES)
def test_searches_then_calls_only_what_it_found_in_every_mode(mode: str) -> None:
    ran: list[str] = []
    model = capable([WEATHER, SHOPS])
    client = searching(model, catalogue(ran))

    response, _ = run_spec(mode, client.prompt("What to wear in Landsmeer, and where to buy it?"))

    assert response.chat_response is not None and response.chat_response.text == "Wear a coat; two shops are open."
    assert offered_names(model) == [
        ["tool_search"],
        ["tool_search", "weather", "clothing_shops"],
        ["tool_search", "weather", "clothing_shops"],
    ]
    assert sorted(ran) == ["clothing_shops", "weather"]
    report = report_of(response)
    assert report["catalogue"] == 42 and report["bypassed"] is False
    assert [r["offered"] for r in report["rounds"]] == [1, 3, 3]
    system = model.prompts[0].messages[0]
    assert getattr(system, "text", "").endswith("find one with tool_search first.")


def test_a_small_catalogue_is_sent_whole() -> None:
    model = capable([WEATHER])
    client = ChatClient.builder(model).default_advisors(ToolSearchToolCallingAdvisor()).build()
    response = client.prompt("Weather?").tools(catalogue(filler=2)).call().chat_client_response()

    assert offered_names(model) == [["weather", "clothing_shops", "invoice_0", "invoice_1"]] * 2
    report = report_of(response)
    assert report["bypassed"] is True and [r["offered"] for r in report["rounds"]] == [4, 4]
    assert len(model.prompts[0].messages) == 1  # no system suffix either


@pytest.mark.parametrize("mode", MODES)
def test_a_found_gated_tool_pauses_and_resumes_against_the_same_offered_set(mode: str) -> None:
    ran: list[str] = []
    model = capable([WEATHER, SHOPS])
    tools = catalogue(ran, gated="clothing_shops")
    client = searching(model, tools)

    paused, _ = run_spec(mode, client.prompt("What to wear, and where to buy it?"))
    pending = awaiting_decision(paused)
    assert pending is not None and [c.name for c in pending.calls] == ["weather", "clothing_shops"]
    assert ran == []

    # A fresh advisor: nothing but the pending state's messages tells it what was found.
    fresh = searching(model, tools)
    decisions = ToolCallDecisions.of(ToolCallDecision.allow(c.id) for c in pending.calls)
    resumed, _ = run_spec(mode, fresh.prompt().resume(pending, decisions))

    assert sorted(ran) == ["clothing_shops", "weather"]
    assert resumed.chat_response is not None and resumed.chat_response.text == "Wear a coat; two shops are open."
    assert offered_names(model)[-1] == ["tool_search", "weather", "clothing_shops"]
    rounds = report_of(resumed)["rounds"]
    assert [(r["round"], r["offered"]) for r in rounds] == [(1, 1), (2, 3), (3, 3)]


@pytest.mark.parametrize("mode", MODES)
def test_return_direct_found_tool_ends_the_turn_with_its_result(mode: str) -> None:
    model = capable([WEATHER])
    client = (
        ChatClient.builder(model)
        .default_advisors(ToolSearchToolCallingAdvisor())
        .default_tools(catalogue(direct="weather"))
        .build()
    )
    response, _ = run_spec(mode, client.prompt("Weather in Landsmeer?"))
    assert response.chat_response is not None and response.chat_response.text == "weather for Landsmeer: ok"
    assert model.calls == 2
    assert [r["offered"] for r in report_of(response)["rounds"]] == [1, 2]


def test_with_memory_the_found_set_is_part_of_the_turn() -> None:
    """The stored turn holds the search and its result; the next turn starts from the search tool
    again (found sets are per turn), and the turn read back offers what it found."""
    model = capable([WEATHER])
    client = searching(model, catalogue())
    first = client.prompt("Weather?").call().chat_client_response()
    stored = turn_messages(first)
    assert found_tool_names(stored) == ["weather"]

    second_model = capable([SHOPS])
    spec = searching(second_model, catalogue()).prompt().messages(*stored, UserMessage("And shops?"))
    reply = spec.call().chat_client_response()
    assert reply.chat_response is not None and reply.chat_response.text == "Wear a coat; two shops are open."
    found = ["tool_search", "clothing_shops"]
    assert offered_names(second_model) == [["tool_search"], found, found]


def test_latest_search_only_drops_earlier_finds() -> None:
    messages: list[Message] = [
        UserMessage("x"),
        ToolResponseMessage([ToolResponse(id="1", name="tool_search", response_data="Found: a, b")]),
        ToolResponseMessage([ToolResponse(id="2", name="tool_search", response_data="Found: c")]),
    ]
    assert found_tool_names(messages) == ["a", "b", "c"]
    assert found_tool_names(messages, accumulate=False) == ["c"]

    advisor = ToolSearchToolCallingAdvisor.builder().latest_search_only().always_on("invoice_3").build()
    model = capable([WEATHER, SHOPS])
    ChatClient.builder(model).default_advisors(advisor).default_tools(catalogue()).build().prompt("go").call().content()
    assert offered_names(model)[0] == ["tool_search", "invoice_3"]


def test_search_results_are_cut_at_a_fraction_of_the_best_score() -> None:
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("tool_search", {"query": "weather"}, id="s")]), "done"]
    )
    client = searching(model, catalogue())
    response = client.prompt("x").call().chat_client_response()
    results = [m for m in turn_messages(response) if isinstance(m, ToolResponseMessage)]
    assert results[0].responses[0].response_data == "Found: weather"


def test_a_bad_search_is_told_to_the_model() -> None:
    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("tool_search", {}, id="s")]), "done"])
    client = searching(model, catalogue())
    response = client.prompt("x").call().chat_client_response()
    result = next(m for m in turn_messages(response) if isinstance(m, ToolResponseMessage)).responses[0]
    assert result.is_error and "needs a 'query'" in result.response_data


def test_the_extension_works_in_a_plain_tool_loop() -> None:
    model = capable([WEATHER])
    advisor = ToolCallingAdvisor(extensions=[ToolSearchExtension()])
    ChatClient.builder(model).default_advisors(advisor).default_tools(catalogue()).build().prompt("x").call().content()
    assert offered_names(model) == [["tool_search"], ["tool_search", "weather"], ["tool_search", "weather"]]


def test_tokenize_splits_names_and_folds_plurals() -> None:
    words = ["current", "time", "clothing", "shop", "http", "server"]
    assert tokenize("currentTime get_clothingShops HTTPServer") == words


def _definitions() -> list[ToolDefinition]:
    return [t.definition for t in catalogue()]


@pytest.mark.parametrize("factory", [Bm25Index, RegexIndex])
def test_indexes_rank_the_right_tool_first(factory: type[Bm25Index] | type[RegexIndex]) -> None:
    index = factory(_definitions())
    assert index.search("clothing shops", 3)[0][0] == "clothing_shops"
    assert index.search("weather", 3)[0][0] == "weather"
    assert index.search("zzz", 3) == []


def test_embedding_index_uses_the_users_function() -> None:
    vocabulary = ["weather", "clothing", "invoice"]

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return [[float(word in text.lower()) for word in vocabulary] for text in texts]

    index = EmbeddingIndex.factory(embed)(_definitions())
    assert index.search("clothing", 2)[0][0] == "clothing_shops"


def test_a_source_that_hands_out_new_callbacks_per_request_reuses_the_index() -> None:
    built: list[int] = []

    def counting(definitions: Sequence[ToolDefinition]) -> Bm25Index:
        built.append(len(definitions))
        return Bm25Index(definitions)

    advisor = ToolSearchToolCallingAdvisor.builder().index(counting).build()
    for _ in range(2):
        model = capable([WEATHER])
        ChatClient.builder(model).default_advisors(advisor).default_tools(catalogue()).build().prompt(
            "x"
        ).call().content()
        assert offered_names(model)[1] == ["tool_search", "weather"]
    assert built == [42]


def test_a_tool_named_like_the_search_tool_is_refused() -> None:
    clash = FunctionToolCallback.builder("tool_search", lambda query="": "mine").build()
    client = searching(ScriptedChatModel(["hi"]), [*catalogue(), clash])
    with pytest.raises(ConfigurationError, match="like the search tool"):
        client.prompt("x").call().content()


@pytest.mark.parametrize("mode", MODES)
def test_with_session_memory_each_turn_searches_and_the_log_holds_the_searches(mode: str) -> None:
    """Through the real memory advisor: the first turn's search, its result and the call are stored
    as part of the turn; the second turn reads them back and searches for what it lacks."""
    from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor

    repository = InMemorySessionRepository()
    model = capable([WEATHER])
    memory = SessionMemoryAdvisor(repository)
    client = (
        ChatClient.builder(model)
        .default_advisors(memory, ToolSearchToolCallingAdvisor())
        .default_tools(catalogue())
        .build()
    )
    first, _ = run_spec(mode, client.prompt("Weather?").conversation("c1"))
    assert first.text == "Wear a coat; two shops are open."
    stored = [event.message() for event in repository.events("c1")]
    assert found_tool_names(stored) == ["weather"], "the search and what it found are part of the stored turn"

    second_model = capable([SHOPS])
    second = (
        ChatClient.builder(second_model)
        .default_advisors(SessionMemoryAdvisor(repository), ToolSearchToolCallingAdvisor())
        .default_tools(catalogue())
        .build()
    )
    reply, _ = run_spec(mode, second.prompt("And shops?").conversation("c1"))
    assert reply.text == "Wear a coat; two shops are open."
    sent = [m for m in second_model.prompts[0].messages if not isinstance(m, SystemMessage)]
    assert sent[: len(stored)] == stored, "the first turn, read back"
    assert offered_names(second_model)[0] == ["tool_search"], "a new turn starts from the search tool"
    assert found_tool_names([event.message() for event in repository.events("c1")]) == ["weather", "clothing_shops"]
