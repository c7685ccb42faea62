"""The body of a Bedrock ``Converse`` / ``ConverseStream`` request (the same for both; the model id
and the mode are in the path, not the body). Pure functions.

Bedrock's rules, kept here: the system prompt is its own list, roles alternate (consecutive messages
of one role are merged: a round's tool results are one user message), content is never empty,
binary content (images, documents) is base64 in the JSON body, a tool call goes back with its
provider's ``toolUseId`` and its input as an object, and the reasoning blocks of a reply go back
first in that assistant message, exactly as they came (their signature is checked).

A request whose history holds ``toolUse``/``toolResult`` blocks must also send ``toolConfig``, or
Bedrock rejects it (``ValidationException``). When no tools are offered (``tool_choice="none"``, the
loop's last round with tools withheld, a replayed conversation) those blocks go as text instead: the
model still reads what was called and what came back, and, offered no tool, cannot call one (a stub
tool, another way out, could be called).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic_core

from chatclient.errors import ConfigurationError
from chatclient.messages import (
    AssistantMessage,
    FilePart,
    ImagePart,
    Message,
    SystemMessage,
    ToolResponse,
    ToolResponseMessage,
    ToolResultPart,
    UserMessage,
    provider_call_ids,
)
from chatclient.options import ChatOptions, ToolCallingChatOptions
from chatclient.prompt import Prompt
from chatclient.tools.definition import ToolDefinition
from providers._arguments import arguments_object
from providers._media import unsupported_media
from providers._tool_rendering import TOOL_RENDERINGS

from ._mapping import REASONING_METADATA_KEY

__all__ = ["build_request"]

_IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
_TAKES = (
    "Bedrock takes PNG, JPEG, GIF and WebP images and PDF, CSV, DOC(X), XLS(X), HTML, TXT and MD "
    "documents, as bytes (base64), not by URL"
)
_TOOL_CHOICES: dict[str, dict[str, Any]] = {"auto": {"auto": {}}, "any": {"any": {}}, "required": {"any": {}}}


def build_request(prompt: Prompt, options: ChatOptions | None, *, stream: bool) -> dict[str, Any]:
    """The JSON body for ``prompt`` under the effective ``options`` (``stream`` changes nothing)."""
    opts = options if options is not None else ChatOptions()
    if not opts.model:
        raise ConfigurationError("No Bedrock model given: pass model= to BedrockChatModel or set options.model")
    system, messages = _messages(prompt.messages)
    body: dict[str, Any] = {"messages": messages}
    if system:
        body["system"] = [{"text": text} for text in system]
    inference = _inference(opts)
    if inference:
        body["inferenceConfig"] = inference
    if opts.top_k is not None:  # not one of Converse's own fields: the model's, passed through
        body["additionalModelRequestFields"] = {"top_k": opts.top_k}
    if isinstance(opts, ToolCallingChatOptions) and opts.tool_callbacks and opts.tool_choice != "none":
        body["toolConfig"] = _tool_config(opts)
    else:
        _tool_blocks_as_text(messages)
    if not _takes_result_status(opts.model):
        _drop_result_status(messages)
    if opts.output_schema is not None:
        body["outputConfig"] = _output_config(opts.output_schema)
    return body


def _takes_result_status(model: str) -> bool:
    """Whether the model takes a ``toolResult``'s ``status``: Bedrock documents it for Anthropic Claude
    and Amazon Nova only, and other families may refuse the request that carries it."""
    return "anthropic." in model or "amazon.nova" in model


def _drop_result_status(messages: list[dict[str, Any]]) -> None:
    """Remove ``status`` from every ``toolResult`` (in place); a failed result's text still says so."""
    for message in messages:
        for block in message["content"]:
            if (result := block.get("toolResult")) is not None:
                result.pop("status", None)


def _tool_blocks_as_text(messages: list[dict[str, Any]]) -> None:
    """Replace each ``toolUse``/``toolResult`` block with a text block saying the same (in place);
    media a result returned stays beside its text, as blocks a user message may hold."""
    names: dict[str, str] = {}
    for message in messages:
        content: list[dict[str, Any]] = []
        for block in message["content"]:
            if (use := block.get("toolUse")) is not None:
                names[use["toolUseId"]] = use["name"]
                arguments = pydantic_core.to_json(use["input"]).decode()
                content.append({"text": f"[called tool {use['name']} with {arguments}]"})
            elif (result := block.get("toolResult")) is not None:
                content.extend(_result_as_text(result, names.get(result["toolUseId"], result["toolUseId"])))
            else:
                content.append(block)
        message["content"] = content


def _result_as_text(result: dict[str, Any], name: str) -> list[dict[str, Any]]:
    texts = [block["text"] for block in result["content"] if "text" in block]
    media = [block for block in result["content"] if "text" not in block]
    failed = " (failed)" if result.get("status") == "error" else ""
    return [{"text": f"[result of tool {name}{failed}: {chr(10).join(texts)}]"}, *media]


def _output_config(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Native structured output: the schema goes as a JSON string, named (the API requires a name)."""
    title = schema.get("title")
    name = re.sub(r"[^A-Za-z0-9_-]", "_", title) if isinstance(title, str) and title else "output"
    structure = {"jsonSchema": {"schema": pydantic_core.to_json(schema).decode(), "name": name[:64]}}
    return {"textFormat": {"type": "json_schema", "structure": structure}}


def _inference(opts: ChatOptions) -> dict[str, Any]:
    inference: dict[str, Any] = {}
    if opts.max_tokens is not None:
        inference["maxTokens"] = opts.max_tokens
    if opts.temperature is not None:
        inference["temperature"] = opts.temperature
    if opts.top_p is not None:
        inference["topP"] = opts.top_p
    if opts.stop_sequences:
        inference["stopSequences"] = list(opts.stop_sequences)
    return inference


def _tool_config(opts: ToolCallingChatOptions) -> dict[str, Any]:
    config: dict[str, Any] = {"tools": TOOL_RENDERINGS.render(opts.tool_callbacks, _render_tools)}
    choice = opts.tool_choice
    if choice is not None:
        config["toolChoice"] = _TOOL_CHOICES.get(choice) or {"tool": {"name": choice}}
    return config


def _render_tools(definitions: Sequence[ToolDefinition], variant: object = None) -> list[dict[str, Any]]:
    return [
        {"toolSpec": {"name": d.name, "description": d.description or d.name, "inputSchema": {"json": d.input_schema}}}
        for d in definitions
    ]


def _messages(messages: Sequence[Message]) -> tuple[list[str], list[dict[str, Any]]]:
    """System texts (hoisted) and the API's messages, consecutive ones of a role merged."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    call_ids: dict[str, str] = {}
    for message in messages:
        if isinstance(message, UserMessage):
            role, blocks = "user", _user_blocks(message)
        elif isinstance(message, AssistantMessage):
            role, blocks = "assistant", _assistant_blocks(message)
            call_ids = provider_call_ids(message)
        elif isinstance(message, ToolResponseMessage):
            role, blocks = "user", [_tool_result(r, call_ids.get(r.id, r.id)) for r in message.responses]
        elif isinstance(message, SystemMessage):
            if message.text:
                system.append(message.text)
            continue
        else:  # pragma: no cover - Message is a closed union
            raise ConfigurationError(f"Unsupported message type {type(message).__name__}")
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return system, out


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    reasoning = message.metadata.get(REASONING_METADATA_KEY)
    if isinstance(reasoning, list):
        blocks.extend(block for block in reasoning if isinstance(block, dict))
    if message.text:
        blocks.append({"text": message.text})
    for call in message.tool_calls:
        use = {"toolUseId": call.provider_id, "name": call.name, "input": arguments_object(call.arguments)}
        blocks.append({"toolUse": use})
    return blocks


def _tool_result(response: ToolResponse, tool_use_id: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if response.parts:
        content = [block for part in response.parts if (block := _result_block(part)) is not None]
    elif response.response_data:
        content = [{"text": response.response_data}]
    status = "error" if response.is_error else "success"
    return {"toolResult": {"toolUseId": tool_use_id, "content": content or [{"text": ""}], "status": status}}


def _result_block(part: ToolResultPart) -> dict[str, Any] | None:
    if isinstance(part, (ImagePart, FilePart)) and (block := _media_block(part)) is not None:
        return block
    text = part.as_text()
    return {"text": text} if text else None


def _media_block(part: ImagePart | FilePart) -> dict[str, Any] | None:
    if part.data is None or part.media_type is None:
        return None  # by URL: Converse takes bytes (or S3 locations), not URLs
    if isinstance(part, ImagePart):
        image_format = _IMAGE_FORMATS.get(part.media_type)
        return None if image_format is None else {"image": {"format": image_format, "source": {"bytes": part.data}}}
    document_format = _DOCUMENT_FORMATS.get(part.media_type)
    if document_format is None:
        return None
    return {"document": {"format": document_format, "name": _document_name(part), "source": {"bytes": part.data}}}


def _document_name(part: FilePart) -> str:
    """Bedrock allows letters, digits, single spaces, hyphens, parentheses and brackets in a name."""
    stem = (part.filename or "document").rsplit(".", 1)[0]
    name = re.sub(r"\s+", " ", re.sub(r"[^A-Za-z0-9\s\-()\[\]]", " ", stem)).strip()
    return name or "document"


def _user_blocks(message: UserMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.media:
        block = _media_block(part)
        if block is None:
            raise unsupported_media("Bedrock", part, _TAKES)
        blocks.append(block)
    if message.text or not blocks:
        blocks.append({"text": message.text or ""})
    return blocks
