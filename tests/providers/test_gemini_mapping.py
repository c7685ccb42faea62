"""GeminiChatModel's mapping and providers beyond the recorded traffic: options to ``generationConfig``,
tool choice, media, ids the API gives, edited messages, blocked prompts, errors inside a stream, the
Gemini API key and the Vertex AI endpoint."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from pydantic import JsonValue

import providers
from chatclient import (
    AssistantMessage,
    FilePart,
    FinishReason,
    ImagePart,
    Message,
    Prompt,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from chatclient.errors import (
    AuthenticationError,
    ConfigurationError,
    MalformedResponseError,
    RateLimitError,
    StreamIncompleteError,
)
from chatclient.tools.resolve import resolve_tools
from providers._retry import RetryPolicy
from providers.gemini import GeminiChatModel, GeminiChatOptions, GeminiProvider, VertexProvider
from providers.gemini._mapping import PARTS_METADATA_KEY, build_request, parse_response
from tests.providers.model_events import assemble

ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_BASE_URL", "GOOGLE_CLOUD_ACCESS_TOKEN")


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@tool(description="Look a word up")
def lookup(word: str) -> str:
    return word


def _body(prompt: Prompt, **options: Any) -> dict[str, Any]:
    opts = GeminiChatOptions(model="gemini-test", **options)
    return build_request(prompt, opts, stream=False)


def _reply(parts: list[dict[str, Any]], finish: str | None = "STOP", **more: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "responseId": "r1", "modelVersion": "gemini-test", **more}


class Script:
    def __init__(self, *responses: httpx2.Response) -> None:
        self.responses = list(responses)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self.responses[len(self.requests) - 1]


def _model(script: Script, **kwargs: Any) -> GeminiChatModel:
    transport = httpx2.MockTransport(script)
    kwargs.setdefault("api_key", "AIza-key")
    return GeminiChatModel(
        "gemini-test",
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        **kwargs,
    )


# ------------------------------------------------------------------ request


def test_options_become_generation_config_and_top_level_fields() -> None:
    body = _body(
        Prompt("hi"),
        temperature=0.2,
        top_p=0.9,
        top_k=40,
        max_tokens=100,
        stop_sequences=("END",),
        presence_penalty=0.1,
        frequency_penalty=0.3,
        seed=7,
        thinking_budget=1024,
        include_thoughts=True,
        thinking_level="low",
        output_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
        safety_settings=({"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"},),
        cached_content="cachedContents/abc",
        labels={"team": "x"},
    )
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "topP": 0.9,
        "topK": 40,
        "maxOutputTokens": 100,
        "stopSequences": ["END"],
        "presencePenalty": 0.1,
        "frequencyPenalty": 0.3,
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "seed": 7,
        "thinkingConfig": {"thinkingBudget": 1024, "thinkingLevel": "low", "includeThoughts": True},
    }
    assert body["safetySettings"] == [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
    assert body["cachedContent"] == "cachedContents/abc" and body["labels"] == {"team": "x"}
    assert "model" not in body and "stream" not in body, "the model and the mode are in the URL"
    assert _body(Prompt("hi")) == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", {"mode": "AUTO"}),
        ("required", {"mode": "ANY"}),
        ("none", {"mode": "NONE"}),
        ("lookup", {"mode": "ANY", "allowedFunctionNames": ["lookup"]}),
    ],
)
def test_tools_and_tool_choice(choice: str, config: dict[str, Any]) -> None:
    body = _body(Prompt("hi"), tool_callbacks=tuple(resolve_tools([lookup])), tool_choice=choice)
    (declaration,) = body["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "lookup" and declaration["parametersJsonSchema"]["required"] == ["word"]
    assert body["toolConfig"] == {"functionCallingConfig": config}


def test_system_messages_are_the_system_instruction_and_turns_of_one_role_join() -> None:
    from chatclient import SystemMessage

    messages: list[Message] = [
        SystemMessage("be brief"),
        UserMessage("q"),
        AssistantMessage(None, tool_calls=[ToolCall(id="", name="lookup", arguments='{"word":"a"}')]),
        ToolResponseMessage([ToolResponse(id="call_1", name="lookup", response_data="a")]),
        UserMessage("and?"),
    ]
    body = _body(Prompt(messages))
    assert body["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    assert [turn["role"] for turn in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][1]["parts"] == [{"functionCall": {"name": "lookup", "args": {"word": "a"}}}]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "lookup", "response": {"output": "a"}}},
        {"text": "and?"},
    ], "no id for a call the API gave none; the next user text joins the function responses' turn"


def test_ids_the_api_gave_go_back_on_calls_and_responses() -> None:
    calls = [ToolCall(id="fc-1", name="lookup", arguments="{}"), ToolCall(id="fc-1", name="lookup", arguments="{}")]
    assistant = AssistantMessage(None, tool_calls=calls)  # a repeated id is replaced, the wire's kept
    own = [c.id for c in assistant.tool_calls]
    results = ToolResponseMessage(
        [ToolResponse(id=i, name="lookup", response_data="x", is_error=n == 1) for n, i in enumerate(own)]
    )
    body = _body(Prompt([UserMessage("q"), assistant, results]))
    assert [p["functionCall"]["id"] for p in body["contents"][1]["parts"]] == ["fc-1", "fc-1"]
    responses = [p["functionResponse"] for p in body["contents"][2]["parts"]]
    assert [r["id"] for r in responses] == ["fc-1", "fc-1"]
    assert responses[1]["response"] == {"error": "x"}, "a failed tool's result is an error"


def test_media_inline_and_by_uri_before_the_text() -> None:
    media: list[ImagePart | FilePart] = [
        ImagePart(data="aGk=", media_type="image/png"),
        FilePart(url="gs://bucket/doc.pdf", media_type="application/pdf"),
    ]
    body = _body(Prompt([UserMessage("what is this?", media=media)]))
    assert body["contents"][0]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": "aGk="}},
        {"fileData": {"fileUri": "gs://bucket/doc.pdf", "mimeType": "application/pdf"}},
        {"text": "what is this?"},
    ]


def test_kept_parts_go_back_unless_the_message_was_edited() -> None:
    parts: list[JsonValue] = [{"text": "thinking", "thought": True}, {"text": "answer", "thoughtSignature": "c2ln"}]
    kept = AssistantMessage("answer", metadata={PARTS_METADATA_KEY: parts})
    edited = kept.model_copy(update={"text": "another answer"})
    sent = [_body(Prompt([UserMessage("q"), m, UserMessage("r")]))["contents"][1]["parts"] for m in (kept, edited)]
    assert sent[0] == parts
    assert sent[1] == [{"text": "another answer"}], "parts that no longer match are not sent"


def test_no_model_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="No Gemini model"):
        build_request(Prompt("hi"), GeminiChatOptions(), stream=False)
    with pytest.raises(ConfigurationError, match="No Gemini model"):
        GeminiChatModel(api_key="k").call(Prompt("hi"))


# ------------------------------------------------------------------ response


def test_a_blocked_prompt_is_a_content_filter_finish_with_no_text() -> None:
    data = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 5}}
    response = parse_response(data)
    assert response.result is not None and response.result.finish_reason is FinishReason.CONTENT_FILTER
    assert response.text is None and response.result.metadata.extra["block_reason"] == "PROHIBITED_CONTENT"
    assert response.usage.prompt_tokens == 5


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("SAFETY", FinishReason.CONTENT_FILTER),
        ("RECITATION", FinishReason.CONTENT_FILTER),
        ("MALFORMED_FUNCTION_CALL", FinishReason.OTHER),
        ("MAX_TOKENS", FinishReason.LENGTH),
    ],
)
def test_finish_reasons(raw: str, reason: FinishReason) -> None:
    response = parse_response(_reply([], raw))
    assert response.result is not None and response.result.finish_reason is reason


def test_usage_counts_thoughts_as_completion_and_cache_as_part_of_the_prompt() -> None:
    usage = {
        "promptTokenCount": 100,
        "cachedContentTokenCount": 60,
        "toolUsePromptTokenCount": 5,
        "candidatesTokenCount": 10,
        "thoughtsTokenCount": 20,
        "totalTokenCount": 135,
    }
    got = parse_response(_reply([{"text": "x"}], usageMetadata=usage)).usage
    assert (got.prompt_tokens, got.completion_tokens, got.cache_read_tokens, got.reasoning_tokens) == (105, 30, 60, 20)
    assert got.total_tokens == 135


@pytest.mark.parametrize("data", [[], {"candidates": "x"}, {"candidates": [{"content": {"parts": "x"}}]}, {}])
def test_malformed_replies_are_named(data: Any) -> None:
    with pytest.raises(MalformedResponseError):
        parse_response(data)


def _sse(*bodies: dict[str, Any]) -> httpx2.Response:
    events = "".join(f"data: {json.dumps(b)}\r\n\r\n" for b in bodies)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=events.encode())


def test_an_error_inside_a_stream_is_classed_by_its_code() -> None:
    error = {"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}
    model = _model(Script(_sse(_reply([{"text": "a"}], None), error)), retry=RetryPolicy(max_retries=0))
    with pytest.raises(RateLimitError) as raised:
        list(model.stream(Prompt("hi")))
    assert raised.value.status == 429 and raised.value.error_type == "RESOURCE_EXHAUSTED"


def test_a_stream_without_a_finish_reason_is_incomplete() -> None:
    model = _model(Script(_sse(_reply([{"text": "a"}], None))))
    with pytest.raises(StreamIncompleteError):
        list(model.stream(Prompt("hi")))


def test_a_signature_in_a_stream_stays_on_its_own_part() -> None:
    chunks = [
        _reply([{"text": "Hel"}], None),
        _reply([{"text": "lo"}], None),
        _reply([{"text": "", "thoughtSignature": "c2ln"}], "STOP"),
    ]
    model = _model(Script(_sse(*chunks)))
    response = assemble(list(model.stream(Prompt("hi"))))
    assert response.text == "Hello"
    assert response.result is not None
    kept = response.result.output.metadata[PARTS_METADATA_KEY]
    assert kept == [{"text": "Hello"}, {"text": "", "thoughtSignature": "c2ln"}]


def test_a_bad_key_is_an_authentication_error() -> None:
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid.",
            "status": "INVALID_ARGUMENT",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
        }
    }
    with pytest.raises(AuthenticationError) as raised:
        _model(Script(httpx2.Response(400, json=body))).call(Prompt("hi"))
    assert raised.value.retryable is False and raised.value.error_type == "API_KEY_INVALID"


# ------------------------------------------------------------------ providers and the registry


def test_the_key_goes_in_a_header_from_either_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match=r"No Gemini API key.*GEMINI_API_KEY"):
        GeminiProvider()
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google")
    assert GeminiProvider().secret_headers["x-goog-api-key"].reveal() == "from-google"
    monkeypatch.setenv("GEMINI_API_KEY", "from-gemini")
    assert GeminiProvider().secret_headers["x-goog-api-key"].reveal() == "from-gemini"
    assert "x-goog-api-key" not in GeminiProvider(base_url="http://localhost:8080/v1beta").secret_headers, (
        "the key stays home"
    )
    script = Script(httpx2.Response(200, json=_reply([{"text": "ok"}])))
    assert _model(script, api_key="AIza-explicit").call(Prompt("hi")).text == "ok"
    (sent,) = script.requests
    assert sent.headers["x-goog-api-key"] == "AIza-explicit" and "key=" not in str(sent.url)
    assert str(sent.url) == "https://generativelanguage.googleapis.com/v1beta/models/gemini-test:generateContent"


def test_vertex_builds_the_regional_url_and_sends_a_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script(httpx2.Response(200, json=_reply([{"text": "ok"}])))
    model = _model(script, api_key="ya29.token", vertex_project="my-proj", vertex_location="europe-west4")
    assert isinstance(model.provider, VertexProvider) and model.provider_name == "gcp.vertex_ai"
    model.call(Prompt("hi"))
    (sent,) = script.requests
    assert str(sent.url) == (
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/my-proj/locations/europe-west4"
        "/publishers/google/models/gemini-test:generateContent"
    )
    assert sent.headers["authorization"] == "Bearer ya29.token"
    with pytest.raises(ConfigurationError, match="No Vertex AI access token"):
        GeminiChatModel("m", vertex_project="p")
    with pytest.raises(ConfigurationError, match="not a plain name"):
        VertexProvider("t", project="p/../x")
    monkeypatch.setenv("GOOGLE_CLOUD_ACCESS_TOKEN", "ya29.env")
    assert VertexProvider(project="p").secret_headers["authorization"].reveal() == "Bearer ya29.env"


def test_the_registry_makes_gemini_and_vertex_models() -> None:
    model = providers.create("gemini:gemini-2.5-flash", api_key="k")
    assert isinstance(model, GeminiChatModel) and model.default_options.model == "gemini-2.5-flash"
    assert isinstance(model.provider, GeminiProvider) and model.provider_name == "gcp.gemini"
    vertex = providers.create("gemini:gemini-2.5-pro", vertex_project="p", vertex_location="us-central1", api_key="t")
    assert isinstance(vertex, GeminiChatModel) and isinstance(vertex.provider, VertexProvider)
    assert vertex.base_url.startswith("https://us-central1-aiplatform.googleapis.com/v1/projects/p/")


def test_a_stream_goes_to_stream_generate_content_with_sse() -> None:
    script = Script(_sse(_reply([{"text": "ok"}])))
    assert assemble(list(_model(script).stream(Prompt("hi")))).text == "ok"
    assert str(script.requests[0].url).endswith("/models/gemini-test:streamGenerateContent?alt=sse")


def _quota(delay: str) -> httpx2.Response:
    body = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
            ],
        }
    }
    return httpx2.Response(429, json=body)


def test_a_429_waits_the_retry_delay_its_body_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr("providers._retry.time.sleep", waits.append)
    script = Script(_quota("7s"), httpx2.Response(200, json=_reply([{"text": "ok"}])))
    assert _model(script).call(Prompt("hi")).text == "ok"
    assert waits == [7.0] and len(script.requests) == 2
    with pytest.raises(RateLimitError) as raised:
        _model(Script(_quota("1.5s")), retry=RetryPolicy(max_retries=0)).call(Prompt("hi"))
    assert raised.value.retry_after == 1.5 and raised.value.error_type == "RESOURCE_EXHAUSTED"
    with pytest.raises(RateLimitError) as raised:
        _model(Script(_quota("soon")), retry=RetryPolicy(max_retries=0)).call(Prompt("hi"))
    assert raised.value.retry_after is None, "a delay that is no duration is not guessed at"
