"""Images and documents in user messages, sent on each wire as its API documents them.

No recorded exchange has a multimodal user message, so the request bodies are checked against the
shapes each API's documentation gives, kind by kind; a kind an API cannot take is refused before
any request, naming the provider and the kind; and one request per provider through ``ChatClient``
(call, stream and their async twins, over a mock transport) shows the parts reach the wire.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient, ChatModel, ConfigurationError, FilePart, ImagePart, Usage, UserMessage
from chatclient.client import ChatClientRequestSpec
from chatclient.messages import MediaPart
from chatclient.options import ChatOptions
from chatclient.prompt import Prompt
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
JPEG = b"\xff\xd8\xff\xe0..."
WEBP = b"RIFF....WEBPVP8 "
GIF = b"GIF89a..."
PDF = b"%PDF-1.7 ..."
TEXT = "Meeting notes: ship on Friday."
OPTIONS = ChatOptions(model="m")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


IMAGES = [
    ImagePart.from_bytes(PNG, "image/png"),
    ImagePart.from_bytes(JPEG, "image/jpeg"),
    ImagePart.from_bytes(WEBP, "image/webp"),
    ImagePart.from_bytes(GIF, "image/gif"),
]
IMAGE_URL = ImagePart(url="https://example.com/cat.jpg")
PDF_DATA = FilePart.from_bytes(PDF, "application/pdf", "report.pdf")
PDF_URL = FilePart(url="https://example.com/report.pdf", media_type="application/pdf")
TEXT_DATA = FilePart.from_bytes(TEXT.encode(), "text/plain", "notes.txt")
BMP = ImagePart.from_bytes(b"BM..", "image/bmp")


def user(*media: MediaPart, text: str = "What is this?") -> Prompt:
    return Prompt([UserMessage(text, media=media)])


class TestChatCompletions:
    @staticmethod
    def content(prompt: Prompt) -> Any:
        return openai_request(prompt, OPTIONS, stream=False)["messages"][-1]["content"]

    def test_images_as_image_url_parts_inline_as_data_urls(self) -> None:
        assert self.content(user(*IMAGES, IMAGE_URL)) == [
            {"type": "text", "text": "What is this?"},
            *({"type": "image_url", "image_url": {"url": f"data:{p.media_type};base64,{p.data}"}} for p in IMAGES),
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        ]

    def test_a_pdf_as_a_file_part_with_its_filename(self) -> None:
        unnamed = FilePart.from_bytes(PDF, "application/pdf")
        assert self.content(user(PDF_DATA, unnamed, text="")) == [
            {
                "type": "file",
                "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"},
            },
            {
                "type": "file",
                "file": {"filename": "document.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"},
            },
        ]

    def test_a_text_only_user_message_is_unchanged(self) -> None:
        assert self.content(user(text="hi")) == "hi"

    @pytest.mark.parametrize(
        ("part", "kind"),
        [
            (PDF_URL, "a document of type application/pdf by URL (https://example.com/report.pdf)"),
            (TEXT_DATA, "a document of type text/plain as base64 data"),
            (BMP, "an image of type image/bmp as base64 data"),
        ],
    )
    def test_what_the_api_cannot_take_is_refused(self, part: MediaPart, kind: str) -> None:
        with pytest.raises(
            ConfigurationError, match=f"^OpenAI Chat Completions cannot take {re.escape(kind)} in a user"
        ):
            self.content(user(part))


class TestResponses:
    @staticmethod
    def content(prompt: Prompt) -> Any:
        return responses_request(prompt, OPTIONS, stream=False)["input"][-1]

    def test_images_and_files_as_input_parts(self) -> None:
        assert self.content(user(*IMAGES, IMAGE_URL, PDF_DATA, PDF_URL, TEXT_DATA)) == {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                *(
                    {"type": "input_image", "image_url": f"data:{p.media_type};base64,{p.data}", "detail": "auto"}
                    for p in IMAGES
                ),
                {"type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "auto"},
                {
                    "type": "input_file",
                    "file_data": f"data:application/pdf;base64,{b64(PDF)}",
                    "filename": "report.pdf",
                },
                {"type": "input_file", "file_url": "https://example.com/report.pdf"},
                {
                    "type": "input_file",
                    "file_data": f"data:text/plain;base64,{b64(TEXT.encode())}",
                    "filename": "notes.txt",
                },
            ],
        }

    def test_an_unnamed_pdf_gets_a_filename_with_its_extension(self) -> None:
        item = self.content(user(FilePart.from_bytes(PDF, "application/pdf"), text=""))
        assert item["content"] == [
            {"type": "input_file", "file_data": f"data:application/pdf;base64,{b64(PDF)}", "filename": "file.pdf"}
        ]

    def test_a_text_only_user_message_is_unchanged(self) -> None:
        assert self.content(user(text="hi")) == {"role": "user", "content": "hi"}

    @pytest.mark.parametrize("part", [BMP, ImagePart(url="https://example.com/a.bmp", media_type="image/bmp")])
    def test_an_image_type_the_api_cannot_take_is_refused(self, part: MediaPart) -> None:
        with pytest.raises(ConfigurationError, match=r"^OpenAI Responses cannot take an image of type image/bmp"):
            self.content(user(part))


class TestAnthropic:
    @staticmethod
    def content(prompt: Prompt) -> Any:
        return anthropic_request(prompt, OPTIONS, stream=False)["messages"][-1]["content"]

    def test_images_then_documents_then_the_text(self) -> None:
        assert self.content(user(*IMAGES, IMAGE_URL, PDF_DATA, PDF_URL, TEXT_DATA)) == [
            *(
                {"type": "image", "source": {"type": "base64", "media_type": p.media_type, "data": p.data}}
                for p in IMAGES
            ),
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)},
                "title": "report.pdf",
            },
            {"type": "document", "source": {"type": "url", "url": "https://example.com/report.pdf"}},
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": TEXT},
                "title": "notes.txt",
            },
            {"type": "text", "text": "What is this?"},
        ]

    def test_an_empty_text_is_left_out(self) -> None:
        assert self.content(user(PDF_URL, text="")) == [
            {"type": "document", "source": {"type": "url", "url": "https://example.com/report.pdf"}}
        ]

    def test_a_text_only_user_message_is_unchanged(self) -> None:
        assert self.content(user(text="hi")) == "hi"

    @pytest.mark.parametrize(
        ("part", "kind"),
        [
            (BMP, "an image of type image/bmp as base64 data"),
            (
                ImagePart(url="https://example.com/a.bmp", media_type="image/bmp"),
                "an image of type image/bmp by URL (https://example.com/a.bmp)",
            ),
            (
                FilePart(url="https://example.com/notes.txt", media_type="text/plain"),
                "a document of type text/plain by URL",
            ),
            (FilePart.from_bytes(b"PK", "application/zip"), "a document of type application/zip as base64 data"),
        ],
    )
    def test_what_the_api_cannot_take_is_refused(self, part: MediaPart, kind: str) -> None:
        with pytest.raises(ConfigurationError, match=f"^Anthropic cannot take {re.escape(kind)}"):
            self.content(user(part))


class TestOllama:
    @staticmethod
    def message(prompt: Prompt) -> Any:
        return ollama_request(prompt, OPTIONS, stream=False)["messages"][-1]

    def test_png_and_jpeg_as_base64_images_on_the_message(self) -> None:
        assert self.message(user(*IMAGES[:2])) == {
            "role": "user",
            "content": "What is this?",
            "images": [b64(PNG), b64(JPEG)],
        }

    def test_a_text_only_user_message_is_unchanged(self) -> None:
        assert self.message(user(text="hi")) == {"role": "user", "content": "hi"}

    @pytest.mark.parametrize(
        ("part", "kind"),
        [
            (IMAGE_URL, "an image by URL (https://example.com/cat.jpg)"),
            (PDF_DATA, "a document of type application/pdf as base64 data"),
            (TEXT_DATA, "a document of type text/plain as base64 data"),
            (IMAGES[2], "an image of type image/webp as base64 data"),
        ],
    )
    def test_what_the_api_cannot_take_is_refused(self, part: MediaPart, kind: str) -> None:
        with pytest.raises(
            ConfigurationError, match=f"^Ollama cannot take {re.escape(kind)} in a user message: its /api/chat"
        ):
            self.message(user(part))


# ------------------------------------------------------------------------------ through ChatClient

PHOTO = ImagePart.from_bytes(PNG, "image/png")
PROVIDERS: dict[str, tuple[Any, Any]] = {
    "anthropic": (anthropic_kit.TestAnthropicConformance(), lambda body: body["messages"][-1]["content"]),
    "openai-responses": (responses_kit.TestOpenAIResponsesConformance(), lambda body: body["input"][-1]["content"]),
    "openai-chat": (openai_kit.TestOpenAIConformance(), lambda body: body["messages"][-1]["content"]),
    "ollama": (ollama_kit.TestOllamaConformance(), lambda body: body["messages"][-1]["images"]),
}
EXPECTED = {
    "anthropic": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}},
        {"type": "text", "text": "Describe it"},
    ],
    "openai-responses": [
        {"type": "input_text", "text": "Describe it"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{b64(PNG)}", "detail": "auto"},
    ],
    "openai-chat": [
        {"type": "text", "text": "Describe it"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
    ],
    "ollama": [b64(PNG)],
}
REFUSED: dict[str, MediaPart] = {
    "anthropic": FilePart.from_bytes(b"PK", "application/zip"),
    "openai-responses": BMP,
    "openai-chat": PDF_URL,
    "ollama": PDF_DATA,
}
NAMES = {
    "anthropic": "Anthropic",
    "openai-responses": "OpenAI Responses",
    "openai-chat": "OpenAI Chat Completions",
    "ollama": "Ollama",
}


def model_seeing(provider: str, mode: str, bodies: list[Any]) -> ChatModel:
    kit, _ = PROVIDERS[provider]
    wire = kit.wire()
    make = wire.stream_reply if mode == "stream" else wire.reply

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return make("A cat.", [], Usage(prompt_tokens=1))  # type: ignore[no-any-return]

    model: ChatModel = kit.make_model(httpx2.MockTransport(handler))
    return model


def run(spec: ChatClientRequestSpec, mode: str) -> str | None:
    async def astream() -> str:
        return "".join([piece async for piece in spec.astream().content()])

    if mode == "call":
        return spec.call().content()
    if mode == "stream":
        return "".join(spec.stream().content())
    if mode == "acall":
        return asyncio.run(spec.acall().content())
    return asyncio.run(astream())


MODES = ["call", "stream", "acall", "astream"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_the_spec_sends_the_media_with_the_user_text(provider: str, mode: str) -> None:
    bodies: list[Any] = []
    wire_mode = "stream" if "stream" in mode else "call"
    spec = ChatClient.create(model_seeing(provider, wire_mode, bodies)).prompt().user("Describe it", media=[PHOTO])
    assert run(spec, mode) == "A cat."
    assert PROVIDERS[provider][1](bodies[0]) == EXPECTED[provider]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_a_kind_the_api_cannot_take_fails_before_any_request(provider: str, mode: str) -> None:
    bodies: list[Any] = []
    wire_mode = "stream" if "stream" in mode else "call"
    spec = ChatClient.create(model_seeing(provider, wire_mode, bodies)).prompt().user("Read", media=[REFUSED[provider]])
    with pytest.raises(ConfigurationError, match=f"^{NAMES[provider]} cannot take "):
        run(spec, mode)
    assert bodies == []


def test_a_later_user_call_replaces_the_media_with_the_text() -> None:
    bodies: list[Any] = []
    spec = ChatClient.create(model_seeing("openai-chat", "call", bodies)).prompt().user("Describe it", media=[PHOTO])
    spec.user("Never mind").call().content()
    assert bodies[0]["messages"][-1]["content"] == "Never mind"
