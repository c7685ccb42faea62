"""Tool search: 100 tools registered, one question, and the tokens the definitions no longer cost.

The model (scripted, offline) behaves like a capable LLM: it searches for the tools it lacks and calls
only tools it was offered. The same question runs with the plain tool loop and with
``ToolSearchToolCallingAdvisor()``; the definitions each request carried are counted at about four
characters a token (``benchmarks/tool_search.py`` counts whole requests with o200k_base).
Run it: ``python examples/tool_search.py``.
"""

from __future__ import annotations

import json
from typing import Any

from advisors.tool_search import METADATA_KEY, ToolSearchToolCallingAdvisor, estimate_tokens
from chatclient import AssistantMessage, ChatClient, ToolResponseMessage
from chatclient.prompt import Prompt
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools import FunctionToolCallback, ToolCallback

NEEDS = {
    "weather": ("weather forecast", {"city": "Landsmeer"}),
    "clothing_shops": ("clothing shops", {"city": "Landsmeer"}),
}


def catalogue() -> list[ToolCallback]:
    """Two tools the question needs, among 98 others (a CRM's worth of records)."""
    schema = {"type": "object", "properties": {"city": {"type": "string", "description": "City name."}}}
    tools: list[ToolCallback] = [
        FunctionToolCallback.builder("weather", lambda a: "14 C, light rain")
        .description("Current weather and forecast for a city.").input_schema(schema).build(),
        FunctionToolCallback.builder("clothing_shops", lambda a: "Zeeman and HEMA, open until 18:00")
        .description("Clothing shops open now in a city.").input_schema(schema).build(),
    ]  # fmt: skip
    record = {
        "type": "object",
        "properties": {
            "record_id": {"type": "string", "description": "The record's id."},
            "fields": {"type": "string", "description": "JSON object of the fields to set or return."},
        },
        "required": ["record_id"],
    }
    entities = ["customer", "supplier", "product", "invoice", "contract", "project", "campaign", "lead", "asset",
                "vendor", "partner", "team", "policy", "claim", "licence", "device", "ticket", "release", "survey",
                "course", "booking", "venue", "menu", "patient", "tenant"]  # fmt: skip
    for entity in entities:
        for verb in ("create", "get", "update", "archive"):
            tools.append(
                FunctionToolCallback.builder(f"{verb}_{entity}", lambda a: "ok")
                .description(f"{verb.capitalize()} a {entity} record in the {entity} register, with its owner.")
                .input_schema(record)
                .build()
            )
    return tools[:100]


def capable(prompt: Prompt) -> AssistantMessage | str:
    offered = {t.name for t in prompt.tool_callbacks}
    done = {r.name for m in prompt.messages if isinstance(m, ToolResponseMessage) for r in m.responses}
    lacking = [name for name in NEEDS if name not in done]
    if not lacking:
        return "Wear a rain jacket; Zeeman and HEMA are open until 18:00."
    calls = [tool_call(name, NEEDS[name][1]) for name in lacking if name in offered]
    if not calls:
        calls = [tool_call("tool_search", {"query": NEEDS[name][0]}) for name in lacking]
    return AssistantMessage(None, tool_calls=calls)


def definition_tokens(model: ScriptedChatModel) -> list[int]:
    return [
        sum(estimate_tokens(json.dumps(t.definition.model_dump(), separators=(",", ":"))) for t in p.tool_callbacks)
        for p in model.prompts
    ]


def main() -> None:
    question = "What should I wear in Landsmeer today, and where can I buy it?"
    plain_model, search_model = ScriptedChatModel(capable), ScriptedChatModel(capable)
    plain = ChatClient.builder(plain_model).default_tools(catalogue()).build()
    searching = ChatClient.builder(search_model).default_advisors(ToolSearchToolCallingAdvisor())
    print("plain: ", plain.prompt(question).call().content())
    response = searching.default_tools(catalogue()).build().prompt(question).call().chat_client_response()
    print("search:", response.chat_response.text if response.chat_response else None)

    report: Any = response.chat_response.metadata.extra[METADATA_KEY] if response.chat_response else {}
    for entry in report["rounds"]:
        print(f"  round {entry['round']}: {entry['offered']} of {report['catalogue']} definitions: {entry['tools']}")
    without, with_search = definition_tokens(plain_model), definition_tokens(search_model)
    saved = 1 - sum(with_search) / sum(without)
    print(f"definition tokens per request, plain loop: {' + '.join(map(str, without))} = {sum(without):,}")
    print(f"definition tokens per request, tool search: {' + '.join(map(str, with_search))} = {sum(with_search):,}")
    print(f"saved: {saved:.0%} of the definition tokens, with {len(with_search) - len(without)} more model call")


if __name__ == "__main__":
    main()
