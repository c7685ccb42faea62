"""How each provider sends a structured tool result (``ToolResult`` parts) on its wire.

The pure request mapping is checked part kind by part kind, and then one real tool round per
provider (call and stream, over a mock transport) shows the parts reach the second request.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient, ChatModel, ToolCall, Usage
from chatclient.messages import (
    AssistantMessage,
    FilePart,
    ImagePart,
    JsonPart,
    Message,
    ToolResponse,
    ToolResponseMessage,
    ToolResult,
    UserMessage,
)
from chatclient.options import ChatOptions
from chatclient.prompt import Prompt
from chatclient.tools import tool
from providers.anthropic._mapping import build_request as anthropic_request
from providers.ollama._mapping import build_request as ollama_request
from providers.openai._mapping import build_request as openai_request
from providers.openai_responses._mapping import build_request as responses_request

# The modules, not their classes: a ``Test*`` class imported here would be collected (and run) twice.
from . import test_anthropic_conformance as anthropic_kit
from . import test_ollama_conformance as ollama_kit
from . import test_openai_conformance as openai_kit
from . import test_openai_responses_conformance as responses_kit

PNG = b"\x89PNG\r\n\x1a\n..."
PDF = b"%PDF-1.7 ..."
ZIP = b"PK\x03\x04"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


EVERY_KIND = ToolResult(
    [
        "Sales by quarter:",
        JsonPart({"q3": 1250000}),
        ImagePart.from_bytes(PNG, "image/png"),
        ImagePart(url="https://example.com/chart.png"),
        FilePart.from_bytes(PDF, "application/pdf", "report.pdf"),
        FilePart.from_bytes(b"plain notes", "text/plain", "notes.txt"),
        FilePart.from_bytes(ZIP, "application/zip"),
        ImagePart.from_bytes(b"BM", "image/bmp"),
    ],
    metadata={"never": "sent"},
)
PLACEHOLDER_ZIP = "[file: application/zip, 4 bytes]"
PLACEHOLDER_BMP = "[image: image/bmp, 2 bytes]"


def history(result: ToolResult | str, *, is_error: bool = False) -> list[Message]:
    if isinstance(result, str):
        response = ToolResponse(id="c1", name="report", response_data=result, is_error=is_error)
    else:
        response = ToolResponse(
            id="c1",
            name="report",
            response_data=result.text,
            is_error=is_error,
            parts=result.parts,
            result_metadata=result.metadata,
        )
    return [
        UserMessage("Report?"),
        AssistantMessage(None, tool_calls=[ToolCall(id="c1", name="report", arguments="{}")]),
        ToolResponseMessage([response]),
    ]


OPTIONS = ChatOptions(model="m")


class TestAnthropic:
    @staticmethod
    def tool_result(messages: list[Message]) -> dict[str, Any]:
        block: dict[str, Any] = anthropic_request(Prompt(messages), OPTIONS, stream=False)["messages"][-1]["content"][0]
        return block

    def test_every_kind_as_content_blocks(self) -> None:
        assert self.tool_result(history(EVERY_KIND, is_error=True)) == {
            "type": "tool_result",
            "tool_use_id": "c1",
            "is_error": True,
            "content": [
                {"type": "text", "text": "Sales by quarter:"},
                {"type": "text", "text": '{"q3":1250000}'},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/chart.png"}},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)},
                    "title": "report.pdf",
                },
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "plain notes"},
                    "title": "notes.txt",
                },
                {"type": "text", "text": PLACEHOLDER_ZIP},
                {"type": "text", "text": PLACEHOLDER_BMP},
            ],
        }

    def test_a_pdf_url_is_a_document_and_empty_text_is_dropped(self) -> None:
        result = ToolResult(["", FilePart(url="https://example.com/r.pdf")])
        assert self.tool_result(history(result))["content"] == [
            {"type": "document", "source": {"type": "url", "url": "https://example.com/r.pdf"}}
        ]

    def test_a_text_result_is_still_a_string(self) -> None:
        assert self.tool_result(history("Sunny")) == {"type": "tool_result", "tool_use_id": "c1", "content": "Sunny"}


class TestOpenAIResponses:
    @staticmethod
    def output(messages: list[Message]) -> Any:
        items = responses_request(Prompt(messages), OPTIONS, stream=False)["input"]
        assert items[-1]["type"] == "function_call_output" and items[-1]["call_id"] == "c1"
        return items[-1]["output"]

    def test_every_kind_as_an_output_list(self) -> None:
        assert self.output(history(EVERY_KIND)) == [
            {"type": "input_text", "text": "Sales by quarter:"},
            {"type": "input_text", "text": '{"q3":1250000}'},
            {"type": "input_image", "image_url": f"data:image/png;base64,{b64(PNG)}", "detail": "auto"},
            {"type": "input_image", "image_url": "https://example.com/chart.png", "detail": "auto"},
            {"type": "input_file", "file_data": f"data:application/pdf;base64,{b64(PDF)}", "filename": "report.pdf"},
            {
                "type": "input_file",
                "file_data": f"data:text/plain;base64,{b64(b'plain notes')}",
                "filename": "notes.txt",
            },
            {"type": "input_file", "file_data": f"data:application/zip;base64,{b64(ZIP)}", "filename": "file.zip"},
            {"type": "input_text", "text": PLACEHOLDER_BMP},
        ]

    def test_a_file_url_and_an_unnamed_pdf(self) -> None:
        result = ToolResult([FilePart(url="https://example.com/r.pdf"), FilePart.from_bytes(PDF, "application/pdf")])
        assert self.output(history(result)) == [
            {"type": "input_file", "file_url": "https://example.com/r.pdf"},
            {"type": "input_file", "file_data": f"data:application/pdf;base64,{b64(PDF)}", "filename": "file.pdf"},
        ]

    def test_a_text_result_is_still_a_string(self) -> None:
        assert self.output(history("Sunny")) == "Sunny"


class TestChatCompletions:
    @staticmethod
    def tool_message(messages: list[Message]) -> dict[str, Any]:
        message: dict[str, Any] = openai_request(Prompt(messages), OPTIONS, stream=False)["messages"][-1]
        assert message["role"] == "tool" and message["tool_call_id"] == "c1"
        return message

    def test_text_only_with_placeholders_and_a_note(self) -> None:
        content = self.tool_message(history(EVERY_KIND))["content"]
        assert content == (
            f"{EVERY_KIND.text}\n[Note: the tool also returned 3 images and 3 files, shown above by placeholder "
            "only: tool results in this API carry text only, so you cannot see their content.]"
        )

    def test_text_and_json_parts_need_no_note(self) -> None:
        result = ToolResult(["a", JsonPart([1, 2])])
        assert self.tool_message(history(result))["content"] == "a\n[1,2]"

    def test_one_image_is_named_in_the_singular(self) -> None:
        content = self.tool_message(history(ToolResult([ImagePart(url="https://x/y.png")])))["content"]
        assert "returned 1 image," in content

    def test_a_text_result_is_unchanged(self) -> None:
        assert self.tool_message(history("Sunny")) == {"role": "tool", "tool_call_id": "c1", "content": "Sunny"}


class TestOllama:
    @staticmethod
    def tool_message(messages: list[Message]) -> dict[str, Any]:
        message: dict[str, Any] = ollama_request(Prompt(messages), OPTIONS, stream=False)["messages"][-1]
        assert (message["role"], message["tool_name"], message["tool_call_id"]) == ("tool", "report", "c1")
        return message

    def test_inline_png_and_jpeg_as_images_everything_else_as_text(self) -> None:
        message = self.tool_message(history(EVERY_KIND))
        assert message["images"] == [b64(PNG)]
        assert message["content"].splitlines() == [
            "Sales by quarter:",
            '{"q3":1250000}',
            "[image: https://example.com/chart.png]",
            f"[file report.pdf: application/pdf, {len(PDF)} bytes]",
            "[file notes.txt: text/plain, 11 bytes]",
            PLACEHOLDER_ZIP,
            PLACEHOLDER_BMP,
            "[Note: images or files the tool returned are shown above by placeholder only: "
            "this API takes inline PNG and JPEG images only, so you cannot see their content.]",
        ]

    def test_only_inline_images_need_no_note(self) -> None:
        jpeg = ImagePart.from_bytes(b"\xff\xd8", "image/jpeg")
        message = self.tool_message(history(ToolResult(["A photo:", jpeg])))
        assert (message["content"], message["images"]) == ("A photo:", [jpeg.data])

    def test_a_text_result_is_unchanged(self) -> None:
        message = self.tool_message(history("Sunny"))
        assert message["content"] == "Sunny" and "images" not in message


# ------------------------------------------------------------------ one tool round over each wire

CHART = ToolResult(["Q3 chart:", ImagePart.from_bytes(PNG, "image/png")])


@tool
def report() -> ToolResult:
    """The quarterly report as a chart."""
    return CHART


PROVIDERS: dict[str, tuple[Any, Any]] = {
    "anthropic": (
        anthropic_kit.TestAnthropicConformance(),
        lambda body: body["messages"][-1]["content"][0]["content"],
    ),
    "openai-responses": (
        responses_kit.TestOpenAIResponsesConformance(),
        lambda body: next(i["output"] for i in body["input"] if i.get("type") == "function_call_output"),
    ),
    "openai-chat": (openai_kit.TestOpenAIConformance(), lambda body: body["messages"][-1]["content"]),
    "ollama": (
        ollama_kit.TestOllamaConformance(),
        lambda body: (body["messages"][-1]["content"], body["messages"][-1]["images"]),
    ),
}
EXPECTED = {
    "anthropic": [
        {"type": "text", "text": "Q3 chart:"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}},
    ],
    "openai-responses": [
        {"type": "input_text", "text": "Q3 chart:"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{b64(PNG)}", "detail": "auto"},
    ],
    "openai-chat": (
        f"{CHART.text}\n[Note: the tool also returned 1 image, shown above by placeholder only: tool results "
        "in this API carry text only, so you cannot see their content.]"
    ),
    "ollama": ("Q3 chart:", [b64(PNG)]),
}


@pytest.mark.parametrize("mode", ["call", "stream"])
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_a_tool_round_sends_the_parts(provider: str, mode: str) -> None:
    kit, rendered = PROVIDERS[provider]
    wire = kit.wire()
    make = wire.stream_reply if mode == "stream" else wire.reply
    replies: list[httpx2.Response] = [
        make(None, [ToolCall(id="call_1", name="report", arguments="{}")], Usage(prompt_tokens=1)),
        make("A fine quarter.", [], Usage(prompt_tokens=1)),
    ]
    bodies: list[Any] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return replies[len(bodies) - 1]

    model: ChatModel = kit.make_model(httpx2.MockTransport(handler))
    spec = ChatClient.create(model).prompt("How was Q3?").tools(report)
    text = spec.call().content() if mode == "call" else "".join(spec.stream().content())
    assert text == "A fine quarter."
    assert rendered(bodies[1]) == EXPECTED[provider]
