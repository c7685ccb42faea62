"""Tool definitions are rendered once per tool set and rendering option, and never served stale.

Reuse is shown by identity: the same dict objects come back in a later request's ``tools``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from chatclient import Prompt, tool
from chatclient.options import ChatOptions, ToolCallingChatOptions
from chatclient.tools import FunctionToolCallback, ToolCallback, ToolDefinition
from chatclient.tools.resolve import resolve_tools
from providers._tool_rendering import TOOL_RENDERINGS, ToolRenderingCache
from providers.anthropic import AnthropicChatOptions
from providers.anthropic._mapping import build_request as anthropic_request
from providers.ollama import OllamaChatOptions
from providers.ollama._mapping import build_request as ollama_request
from providers.openai import OpenAIChatOptions
from providers.openai._mapping import build_request as openai_request
from providers.openai_responses import OpenAIResponsesChatOptions
from providers.openai_responses._mapping import build_request as responses_request


@tool(description="Get the weather of a city")
def weather(city: str) -> str:
    return f"Sunny in {city}"


@tool(description="Tell the time")
def clock() -> str:
    return "noon"


@tool(description="Book a flight")
def book(flight: str, seats: int) -> str:
    return f"Booked {flight}"


TOOLS = resolve_tools([weather, clock])


def render_names(definitions: Sequence[ToolDefinition], variant: Any) -> list[dict[str, Any]]:
    return [{"name": d.name, "variant": variant} for d in definitions]


class Changing(ToolCallback):
    """A callback whose definition changes between requests (a new description each time)."""

    def __init__(self) -> None:
        self.version = 0

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(name="changing", description=f"version {self.version}")

    def call(self, arguments: str, context: Any = None) -> str:
        return ""


class Versioned(ToolCallback):
    """A callback that keeps its definition until told otherwise."""

    def __init__(self) -> None:
        self._definition = ToolDefinition(name="versioned", description="v1")

    @property
    def definition(self) -> ToolDefinition:
        return self._definition

    def bump(self, description: str) -> None:
        self._definition = ToolDefinition(name="versioned", description=description)

    def call(self, arguments: str, context: Any = None) -> str:
        return ""


# ------------------------------------------------------------------------------------------ the cache


def test_same_definitions_render_once_into_a_new_list_each_time() -> None:
    cache = ToolRenderingCache()
    first = cache.render(TOOLS, render_names)
    second = cache.render(TOOLS, render_names)
    assert (cache.misses, cache.hits) == (1, 1)
    assert first == second and first is not second, "each caller gets its own list"
    assert all(a is b for a, b in zip(first, second, strict=True)), "the rendered items are shared"
    first.append({"name": "mine"})
    assert cache.render(TOOLS, render_names) == second, "changing a returned list does not reach the cache"


def test_a_new_tuple_of_the_same_callbacks_is_a_hit() -> None:
    """Options are rebuilt whenever they are merged and providers return new lists: the key is the
    definitions, not the container."""
    cache = ToolRenderingCache()
    cache.render(TOOLS, render_names)
    cache.render(list(TOOLS), render_names)
    cache.render(ToolCallingChatOptions(tool_callbacks=TOOLS).tool_callbacks, render_names)
    assert (cache.misses, cache.hits) == (1, 2)


def test_another_tool_set_or_variant_or_renderer_renders_anew() -> None:
    cache = ToolRenderingCache()
    base = cache.render(TOOLS, render_names, False)
    assert cache.render(TOOLS[:1], render_names, False) == base[:1]
    assert cache.render((*TOOLS, *resolve_tools([book])), render_names, False)[-1]["name"] == "book"
    assert cache.render(TOOLS[::-1], render_names, False)[0]["name"] == "clock", "order is part of the set"
    assert cache.render(TOOLS, render_names, True)[0]["variant"] is True
    assert cache.render(TOOLS, lambda d, v: [{"other": True}])[0] == {"other": True}
    assert cache.misses == 6 and cache.hits == 0
    assert cache.render(TOOLS, render_names, False) == base and cache.hits == 1


def test_a_callback_with_a_new_definition_is_never_served_the_old_rendering() -> None:
    cache = ToolRenderingCache()
    versioned = Versioned()
    tools = (versioned,)
    assert cache.render(tools, render_descriptions)[0]["description"] == "v1"
    versioned.bump("v2")
    assert cache.render(tools, render_descriptions)[0]["description"] == "v2", "same tuple, new definition"
    changing = Changing()
    for version in range(3):
        changing.version = version
        assert cache.render((changing,), render_descriptions)[0]["description"] == f"version {version}"


def render_descriptions(definitions: Sequence[ToolDefinition], _: Any) -> list[dict[str, Any]]:
    return [{"description": d.description} for d in definitions]


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    cache = ToolRenderingCache(maxsize=2)
    sets = [resolve_tools([FunctionToolCallback.builder(f"t{i}", lambda: "").build()]) for i in range(3)]
    cache.render(sets[0], render_names)
    cache.render(sets[1], render_names)
    cache.render(sets[0], render_names)  # sets[0] is now the most recent
    cache.render(sets[2], render_names)  # evicts sets[1]
    assert len(cache) == 2
    cache.render(sets[0], render_names)
    assert cache.hits == 2
    cache.render(sets[1], render_names)
    assert cache.misses == 4, "the evicted set is rendered again"
    with pytest.raises(ValueError, match="maxsize"):
        ToolRenderingCache(maxsize=0)


def test_a_renderer_that_fails_caches_nothing() -> None:
    cache = ToolRenderingCache()

    def broken(definitions: Sequence[ToolDefinition], _: Any) -> list[dict[str, Any]]:
        raise RuntimeError("bad schema")

    with pytest.raises(RuntimeError, match="bad schema"):
        cache.render(TOOLS, broken)
    assert len(cache) == 0


def test_concurrent_renders_of_many_sets_all_come_back_right() -> None:
    cache = ToolRenderingCache(maxsize=4)
    sets = [resolve_tools([FunctionToolCallback.builder(f"t{i}", lambda: "").build()]) for i in range(8)]
    errors: list[str] = []
    start = threading.Barrier(8)

    def work(offset: int) -> None:
        start.wait()
        for n in range(300):
            tools = sets[(n + offset) % len(sets)]
            rendered = cache.render(tools, render_names, n % 2)
            if rendered != [{"name": tools[0].name, "variant": n % 2}]:
                errors.append(f"{tools[0].name}: {rendered}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(cache) <= 4
    assert cache.hits + cache.misses == 8 * 300


# ------------------------------------------------------------------------------------------ the providers

Build = Callable[[ChatOptions], dict[str, Any]]


def openai_body(options: ChatOptions) -> dict[str, Any]:
    return openai_request(Prompt("hi", options), options, stream=False)


def responses_body(options: ChatOptions) -> dict[str, Any]:
    return responses_request(Prompt("hi", options), options, stream=False)


def anthropic_body(options: ChatOptions) -> dict[str, Any]:
    return anthropic_request(Prompt("hi", options), options, stream=False)


def ollama_body(options: ChatOptions) -> dict[str, Any]:
    return ollama_request(Prompt("hi", options), options, stream=False)


PROVIDERS: list[tuple[str, Build, type[ToolCallingChatOptions]]] = [
    ("openai", openai_body, OpenAIChatOptions),
    ("openai-responses", responses_body, OpenAIResponsesChatOptions),
    ("anthropic", anthropic_body, AnthropicChatOptions),
    ("ollama", ollama_body, OllamaChatOptions),
]


@pytest.mark.parametrize(("name", "build", "options_type"), PROVIDERS, ids=[p[0] for p in PROVIDERS])
def test_every_provider_reuses_its_rendering_across_calls_and_rounds(
    name: str, build: Build, options_type: type[ToolCallingChatOptions]
) -> None:
    options = options_type(model="m", tool_callbacks=TOOLS)
    first = build(options)["tools"]
    # A later round: the loop copies the options (a new tuple of the same callbacks).
    later_round = build(options.model_copy(update={"tool_callbacks": tuple(TOOLS)}))["tools"]
    rebuilt = build(options_type(model="m", temperature=0.5, tool_callbacks=tuple(list(TOOLS))))["tools"]
    assert first == later_round == rebuilt
    assert all(a is b is c for a, b, c in zip(first, later_round, rebuilt, strict=True))
    grown = build(options_type(model="m", tool_callbacks=(*TOOLS, *resolve_tools([book]))))["tools"]
    assert len(grown) == 3 and grown[:2] == first


def test_openai_strict_mode_is_part_of_the_key() -> None:
    renderings = [
        openai_body(OpenAIChatOptions(model="m", tool_callbacks=TOOLS, strict_tools=strict))["tools"][0]["function"]
        for strict in (None, True, False, True)
    ]
    unset, strict, lax, strict_again = renderings
    assert "strict" not in unset and "additionalProperties" not in unset["parameters"]
    assert strict["strict"] is True and strict["parameters"]["additionalProperties"] is False
    assert lax["strict"] is False and "additionalProperties" not in lax["parameters"]
    assert strict_again is strict


def test_responses_strict_mode_is_part_of_the_key() -> None:
    def first(strict: bool | None) -> dict[str, Any]:
        options = OpenAIResponsesChatOptions(model="m", tool_callbacks=TOOLS, strict_tools=strict)
        return responses_body(options)["tools"][0]  # type: ignore[no-any-return]

    assert first(True)["strict"] is True
    assert first(True)["parameters"]["additionalProperties"] is False, "strict mode needs closed objects"
    assert "additionalProperties" not in first(False)["parameters"]
    assert first(False)["strict"] is False
    assert first(None)["strict"] is False and first(None) is first(False), "unset renders like False"


def test_anthropic_cache_mark_is_part_of_the_key() -> None:
    marked = anthropic_body(AnthropicChatOptions(model="m", tool_callbacks=TOOLS, cache_tools=True))["tools"]
    plain = anthropic_body(AnthropicChatOptions(model="m", tool_callbacks=TOOLS))["tools"]
    assert marked[-1]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in plain[-1]
    assert marked[:-1] == plain[:-1], "only the last tool is marked"
    again = anthropic_body(AnthropicChatOptions(model="m", tool_callbacks=TOOLS, cache_tools=True))["tools"]
    assert again[-1] is marked[-1]


def test_ollama_tool_choice_filters_before_rendering() -> None:
    named = ollama_body(OllamaChatOptions(model="m", tool_callbacks=TOOLS, tool_choice="clock"))["tools"]
    assert [t["function"]["name"] for t in named] == ["clock"]
    assert "tools" not in ollama_body(OllamaChatOptions(model="m", tool_callbacks=TOOLS, tool_choice="none"))


def test_a_provider_notices_a_tool_whose_definition_changed() -> None:
    versioned = Versioned()
    options = OpenAIChatOptions(model="m", tool_callbacks=(versioned,))
    assert openai_body(options)["tools"][0]["function"]["description"] == "v1"
    versioned.bump("v2")
    assert openai_body(options)["tools"][0]["function"]["description"] == "v2"


def test_the_shared_cache_stays_bounded() -> None:
    for i in range(TOOL_RENDERINGS.maxsize + 10):
        callback = FunctionToolCallback.builder(f"bounded_{i}", lambda: "").build()
        openai_body(OpenAIChatOptions(model="m", tool_callbacks=(callback,)))
    assert len(TOOL_RENDERINGS) <= TOOL_RENDERINGS.maxsize
