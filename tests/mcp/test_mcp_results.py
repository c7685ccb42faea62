"""Every kind of MCP content a tool can return, mapped to the spine's tool-result parts: embedded
text and blob resources, resource links and audio (images and structured content are in
test_mcp_client). A real server on 127.0.0.1."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage
from chatclient.mcp import McpServerConnection, McpToolCallbackProvider
from chatclient.messages import FilePart, ImagePart, TextPart, ToolResult
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.testing.mcp import running_mcp_server

PDF = base64.b64encode(b"%PDF-1.4 not really").decode()
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really").decode()
WAV = base64.b64encode(b"RIFF....WAVE").decode()


def resources_server() -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import (
        AudioContent,
        BlobResourceContents,
        EmbeddedResource,
        ResourceLink,
        TextResourceContents,
    )

    server = MCPServer("res", log_level="WARNING")

    @server.tool(description="One of each kind of content", structured_output=False)
    def everything() -> Any:
        return [
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="file:///a.txt", text="hello text", mime_type="text/plain"),
            ),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(uri="file:///a.pdf", blob=PDF, mime_type="application/pdf"),
            ),
            EmbeddedResource(
                type="resource", resource=BlobResourceContents(uri="file:///c.png", blob=PNG, mime_type="image/png")
            ),
            ResourceLink(type="resource_link", uri="file:///b.txt", name="b"),
            AudioContent(type="audio", data=WAV, mime_type="audio/wav"),
        ]

    return server


@pytest.fixture(scope="module")
def provider() -> Iterator[McpToolCallbackProvider]:
    with (
        running_mcp_server(resources_server()) as url,
        McpToolCallbackProvider(McpServerConnection.http(url, name="res")) as served,
    ):
        yield served


def assert_mapped(result: ToolResult) -> None:
    text, pdf, png, link, audio = result.parts
    assert text == TextPart("hello text")
    assert isinstance(pdf, FilePart) and pdf.media_type == "application/pdf" and pdf.filename == "file:///a.pdf"
    assert pdf.data is not None and base64.b64decode(pdf.data) == b"%PDF-1.4 not really"
    assert isinstance(png, ImagePart) and png.media_type == "image/png" and png.data == PNG
    assert link == TextPart("file:///b.txt (b)")
    assert isinstance(audio, FilePart) and audio.media_type == "audio/wav" and audio.data == WAV
    assert not result.is_error and result.metadata["mcp_tool"] == "everything"


def test_each_kind_of_content_becomes_its_part(provider: McpToolCallbackProvider) -> None:
    (callback,) = provider.get_tool_callbacks()
    result = callback.call("{}")
    assert isinstance(result, ToolResult)
    assert_mapped(result)


def call_everything(prompt: Prompt) -> ScriptItem:
    if isinstance(prompt.messages[-1], ToolResponseMessage):
        return "seen"
    return AssistantMessage(None, tool_calls=[tool_call("everything")])


@pytest.mark.parametrize("mode", MODES)
def test_the_parts_reach_the_next_prompt(mode: str, provider: McpToolCallbackProvider) -> None:
    model = ScriptedChatModel(call_everything)
    run_spec(mode, ChatClient.create(model).prompt("All?").tools(provider))
    message = model.prompts[-1].messages[-1]
    assert isinstance(message, ToolResponseMessage)
    (response,) = message.responses
    assert response.parts is not None
    assert_mapped(ToolResult(list(response.parts), metadata={"mcp_tool": "everything"}))


def test_the_mapped_result_is_the_one_validation_builds(provider: McpToolCallbackProvider) -> None:
    """The mapping builds text parts and the result from the SDK's checked values, not validating them again:
    what it builds equals, field for field, the result built the long way."""
    (callback,) = provider.get_tool_callbacks()
    result = callback.call("{}")
    assert isinstance(result, ToolResult)
    long_way = ToolResult(list(result.parts), metadata=dict(result.metadata), is_error=result.is_error)
    assert result == long_way and result.model_dump() == long_way.model_dump()
    assert ToolResult.model_validate(result.model_dump()) == result
