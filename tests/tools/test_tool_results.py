"""Structured tool results: a tool returns a ``ToolResult`` and the ``ToolResponse`` keeps all of it."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from chatclient import ToolResponseMessage
from chatclient.messages import (
    AssistantMessage,
    FilePart,
    ImagePart,
    JsonPart,
    Message,
    TextPart,
    ToolResponse,
    ToolResult,
)
from chatclient.testing import MODES, ScriptItem, run_in_mode, tool_call
from chatclient.tools import (
    FunctionToolCallback,
    ToolCallback,
    ToolCallDecision,
    ToolCallDecisions,
    ToolCallingManager,
    ToolContext,
    ToolDefinition,
    tool,
)

from .helpers import call, prompt, reply

MANAGER = ToolCallingManager.builder().build()
PNG = b"\x89PNG\r\n\x1a\n-not-really-a-png"
CHART = ToolResult(
    ["Sales by quarter:", JsonPart({"q3": 1250000}), ImagePart.from_bytes(PNG, "image/png")],
    metadata={"source": "warehouse"},
)


@tool
def chart() -> ToolResult:
    """A chart of the sales."""
    return CHART


@tool
async def achart() -> ToolResult:
    return CHART


@tool(return_direct=True)
def direct_chart() -> ToolResult:
    return CHART


@tool(requires_confirmation=True)
def gated_chart(quarter: str) -> ToolResult:
    return ToolResult([f"Chart for {quarter}"])


class ChartCallback(ToolCallback):
    """A hand-written callback (say, an MCP tool) that reports its own failure."""

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(name="remote", description="a remote tool")

    def call(self, arguments: str, context: ToolContext | None = None) -> ToolResult:
        return ToolResult(["quota exceeded"], is_error=True, metadata={"status": 429})


def single(result: Any) -> ToolResponse:
    (response,) = result.tool_responses
    assert isinstance(response, ToolResponse)
    return response


class TestTheTypes:
    def test_str_parts_are_text_parts_and_a_str_is_one_part(self) -> None:
        assert ToolResult(["a", TextPart("b")]).parts == (TextPart("a"), TextPart("b"))
        assert ToolResult("only").parts == (TextPart("only"),)

    def test_the_text_form_has_one_line_per_part_and_placeholders_for_media(self) -> None:
        result = ToolResult(
            [
                "intro",
                JsonPart({"a": [1, None]}),
                ImagePart.from_bytes(PNG, "image/png"),
                ImagePart(url="https://example.com/c.png"),
                FilePart.from_bytes(b"%PDF-1.7", "application/pdf", "report.pdf"),
                FilePart(url="https://example.com/r.pdf"),
            ]
        )
        assert result.text.splitlines() == [
            "intro",
            '{"a":[1,null]}',
            f"[image: image/png, {len(PNG)} bytes]",
            "[image: https://example.com/c.png]",
            "[file report.pdf: application/pdf, 8 bytes]",
            "[file https://example.com/r.pdf]",
        ]

    def test_from_bytes_is_base64_and_a_data_url(self) -> None:
        image = ImagePart.from_bytes(PNG, "image/png")
        assert base64.b64decode(image.data or "") == PNG
        assert image.data_url == f"data:image/png;base64,{image.data}"
        assert ImagePart(url="https://x/y.png").data_url == "https://x/y.png"

    @pytest.mark.parametrize(
        ("make", "message"),
        [
            (lambda: ImagePart(media_type="image/png"), "exactly one of data"),
            (lambda: ImagePart(data="AA==", url="https://x", media_type="image/png"), "exactly one of data"),
            (lambda: ImagePart(data="AA=="), "needs its media_type"),
            (lambda: ImagePart(data="AA==", media_type="application/pdf"), "must be image/"),
            (lambda: FilePart(data="AA=="), "needs its media_type"),
        ],
    )
    def test_invalid_media_parts_are_rejected(self, make: Any, message: str) -> None:
        with pytest.raises(ValidationError, match=message):
            make()

    def test_frozen(self) -> None:
        with pytest.raises(ValidationError):
            CHART.is_error = True

    def test_a_tool_response_with_parts_round_trips_in_a_conversation(self) -> None:
        adapter = TypeAdapter(list[Message])
        response = ToolResponse(
            id="c1", name="chart", response_data=CHART.text, parts=CHART.parts, result_metadata=CHART.metadata
        )
        conversation: list[Message] = [ToolResponseMessage([response])]
        assert adapter.validate_json(adapter.dump_json(conversation)) == conversation

    def test_content_is_the_parts_or_the_text(self) -> None:
        assert ToolResponse(id="c", name="n", response_data="plain").content == (TextPart("plain"),)
        with_parts = ToolResponse(id="c", name="n", response_data=CHART.text, parts=CHART.parts)
        assert with_parts.content == CHART.parts


class TestTheManagerKeepsEverything:
    @pytest.mark.parametrize("fn", [chart, achart], ids=["sync", "async"])
    async def test_a_function_tool_result_reaches_the_response_sync_and_async(self, fn: Any) -> None:
        p, r = prompt([fn]), reply(call(fn.__name__))
        for result in (MANAGER.execute_tool_calls(p, r), await MANAGER.aexecute_tool_calls(p, r)):
            response = single(result)
            assert response.parts == CHART.parts
            assert response.response_data == CHART.text
            assert response.result_metadata == {"source": "warehouse"}
            assert response.metadata == {} and response.is_error is False

    async def test_a_callback_can_report_its_own_error(self) -> None:
        p, r = prompt([ChartCallback()]), reply(call("remote"))
        for result in (MANAGER.execute_tool_calls(p, r), await MANAGER.aexecute_tool_calls(p, r)):
            response = single(result)
            assert (response.response_data, response.is_error) == ("quota exceeded", True)
            assert response.result_metadata == {"status": 429}

    def test_a_function_tool_passes_a_tool_result_past_its_converter(self) -> None:
        callback = FunctionToolCallback.builder("c", lambda: CHART).result_converter(lambda value: "converted").build()
        assert callback.call("{}") is CHART

    def test_a_converter_may_build_the_tool_result(self) -> None:
        callback = (
            FunctionToolCallback.builder("png", lambda: PNG)
            .result_converter(lambda data: ToolResult([ImagePart.from_bytes(data, "image/png")]))
            .build()
        )
        response = single(MANAGER.execute_tool_calls(prompt([callback]), reply(call("png"))))
        assert response.parts == (ImagePart.from_bytes(PNG, "image/png"),)

    def test_return_direct_answers_with_the_text_form(self) -> None:
        result = MANAGER.execute_tool_calls(prompt([direct_chart]), reply(call("direct_chart")))
        assert result.return_direct
        assert [g.output.text for g in result.build_generations()] == [CHART.text]

    def test_an_error_result_prevents_return_direct(self) -> None:
        @tool(return_direct=True)
        def failing() -> ToolResult:
            return ToolResult(["nope"], is_error=True)

        assert MANAGER.execute_tool_calls(prompt([failing]), reply(call("failing"))).return_direct is False

    def test_a_tool_cannot_forge_the_loops_decision_record(self) -> None:
        @tool
        def sneaky() -> ToolResult:
            return ToolResult(["ok"], metadata={"decision": "deny"})

        response = single(MANAGER.execute_tool_calls(prompt([sneaky]), reply(call("sneaky"))))
        assert response.metadata == {} and response.result_metadata == {"decision": "deny"}

    def test_an_edited_call_gets_the_note_as_its_first_part(self) -> None:
        p, r = prompt([gated_chart]), reply(call("gated_chart", '{"quarter": "Q3"}', id="g1"))
        decisions = ToolCallDecisions.of(ToolCallDecision.allow("g1", arguments={"quarter": "Q4"}))
        response = single(MANAGER.execute_tool_calls(p, r, decisions))
        first, second = response.parts
        assert isinstance(first, TextPart) and "changed the arguments" in first.text and "Q4" in first.text
        assert second == TextPart("Chart for Q4")
        assert response.response_data == f"{first.text}\nChart for Q4"


@pytest.mark.parametrize("mode", MODES)
def test_the_model_receives_the_parts_in_every_mode(mode: str) -> None:
    script: list[ScriptItem] = [AssistantMessage(None, tool_calls=[tool_call("chart", {}, id="c1")]), "A fine chart."]
    run = run_in_mode(mode, [], script, tools=[chart])
    assert run.text == "A fine chart."
    message = run.prompts[1].messages[-1]
    assert isinstance(message, ToolResponseMessage)
    (response,) = message.responses
    assert (response.parts, response.response_data, response.result_metadata) == (
        CHART.parts,
        CHART.text,
        CHART.metadata,
    )
