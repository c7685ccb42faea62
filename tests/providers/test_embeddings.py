"""The embedding models against recorded traffic: OpenAI ``/v1/embeddings`` (JSON floats and base64,
``dimensions``, an error) and Ollama ``/api/embed``, in both modes, on the provider shell."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from chatclient.errors import MalformedResponseError, NotFoundError, ServerError
from chatclient.retrieval import Document, EmbeddingModel, InMemoryVectorStore
from providers._retry import RetryPolicy
from providers.ollama import OllamaEmbeddingModel
from providers.openai import OpenAIEmbeddingModel

from .fixtures import Replay, fixture_files, interactions, recorded_response

FAST = RetryPolicy(initial_backoff=0, max_backoff=0)
MODES = ("sync", "async")
OPENAI = "openai-embeddings"
OLLAMA_EMBED = [name for name in fixture_files("ollama") if name.startswith("embed_")]


def embed(model: EmbeddingModel, texts: list[str], mode: str) -> list[list[float]]:
    return model.embed(texts) if mode == "sync" else asyncio.run(model.aembed(texts))


def clients(handler: Callable[[httpx2.Request], httpx2.Response]) -> dict[str, Any]:
    transport = httpx2.MockTransport(handler)
    return {
        "http_client": httpx2.Client(transport=transport),
        "async_http_client": httpx2.AsyncClient(transport=transport),
    }


def norm(vector: list[float]) -> float:
    return math.sqrt(math.fsum(x * x for x in vector))


def openai(replay: Any, **kwargs: Any) -> OpenAIEmbeddingModel:
    return OpenAIEmbeddingModel(api_key="sk-test-key-123", retry=FAST, **clients(replay), **kwargs)


def recorded_inputs(provider: str, name: str) -> list[Any]:
    return [i["request"]["body"]["input"] for i in interactions(provider, name)]


def test_every_embedding_recording_has_a_test() -> None:
    assert set(fixture_files(OPENAI)) == {
        "a_two_documents_base64",
        "a_batch_of_three_float",
        "a_dimensions_256",
        "f_error_404_model_not_found",
    }
    assert OLLAMA_EMBED == ["embed_a_four_texts"]


@pytest.mark.parametrize("mode", MODES)
def test_openai_base64_vectors_decode_to_unit_float32_vectors(mode: str) -> None:
    replay = Replay(OPENAI, "a_two_documents_base64")
    model = openai(replay, model="text-embedding-3-small", encoding_format="base64")
    vectors = embed(model, ["hello", "world"], mode)
    assert replay.sent_json(0) == replay.recorded_request(0)["body"]
    assert replay.sent[0].headers["authorization"] == "Bearer sk-test-key-123"
    assert replay.sent[0].url.path == "/v1/embeddings"
    assert [len(v) for v in vectors] == [1536, 1536]
    # OpenAI's vectors have length 1: a wrong byte order or width would not.
    assert [norm(v) for v in vectors] == pytest.approx([1.0, 1.0], abs=1e-4)
    assert vectors[0] != vectors[1]


@pytest.mark.parametrize("mode", MODES)
def test_openai_float_vectors_come_back_in_input_order(mode: str) -> None:
    replay = Replay(OPENAI, "a_batch_of_three_float")
    model = openai(replay, model="text-embedding-ada-002")
    first = embed(model, ["Hello world!"], mode)
    batch = embed(model, ["Hello world", "The world is ending", "good bye"], mode)
    for index in (0, 1):
        assert replay.sent_json(index) == replay.recorded_request(index)["body"] | {"encoding_format": "float"}
    recorded = interactions(OPENAI, "a_batch_of_three_float")[1]["response"]["body"]["data"]
    by_index = {item["index"]: item["embedding"] for item in recorded}
    assert batch == [by_index[0], by_index[1], by_index[2]]
    assert len(first) == 1 and [norm(v) for v in first + batch] == pytest.approx([1.0] * 4, abs=1e-4)


def test_openai_vectors_are_put_back_by_their_index() -> None:
    """A server may list the items in any order: each carries its index."""
    reply = interactions(OPENAI, "a_batch_of_three_float")[1]["response"]["body"]

    def shuffled(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=reply | {"data": list(reversed(reply["data"]))})

    vectors = OpenAIEmbeddingModel(api_key="k", **clients(shuffled)).embed(["a", "b", "c"])
    assert vectors == [item["embedding"] for item in reply["data"]]


@pytest.mark.parametrize("mode", MODES)
def test_openai_dimensions_are_sent_and_checked(mode: str) -> None:
    replay = Replay(OPENAI, "a_dimensions_256")
    vectors = embed(openai(replay, model="text-embedding-3-small", dimensions=256), ["Hello world"], mode)
    assert replay.sent_json(0) == replay.recorded_request(0)["body"] | {"encoding_format": "float"}
    assert len(vectors[0]) == 256 and norm(vectors[0]) == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_openai_unknown_model_is_a_not_found_error_without_the_key(mode: str) -> None:
    replay = Replay(OPENAI, "f_error_404_model_not_found")
    model = openai(replay, model="nonexistent", encoding_format="base64")
    with pytest.raises(NotFoundError) as caught:
        embed(model, ["Hello, world!"], mode)
    assert replay.sent_json(0) == replay.recorded_request(0)["body"]
    assert caught.value.status == 404 and "nonexistent" in str(caught.value)
    assert "sk-test-key-123" not in str(caught.value) + repr(model)


@pytest.mark.parametrize("mode", MODES)
def test_a_server_error_is_retried_on_the_shell(mode: str) -> None:
    recorded = interactions(OPENAI, "a_dimensions_256")[0]
    attempts: list[int] = []

    def flaky(request: httpx2.Request) -> httpx2.Response:
        attempts.append(1)
        return (
            httpx2.Response(503, json={"error": {"message": "busy"}})
            if len(attempts) == 1
            else recorded_response(recorded)
        )

    vectors = embed(OpenAIEmbeddingModel(api_key="k", retry=FAST, dimensions=256, **clients(flaky)), ["x"], mode)
    assert len(attempts) == 2 and len(vectors[0]) == 256
    always = OpenAIEmbeddingModel(
        api_key="k", retry=RetryPolicy(max_retries=0), **clients(lambda r: httpx2.Response(500))
    )
    with pytest.raises(ServerError):
        embed(always, ["x"], mode)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda body: body | {"data": body["data"][:2]}, "2 embeddings for 3 inputs"),
        (lambda body: body | {"data": [body["data"][0]] * 3}, "repeated index"),
        (lambda body: {"object": "list"}, "no data list"),
        (lambda body: body | {"data": [d | {"embedding": "not base64!"} for d in body["data"]]}, "not base64"),
    ],
)
def test_a_malformed_openai_reply_is_refused(change: Callable[[Any], Any], message: str) -> None:
    reply = interactions(OPENAI, "a_batch_of_three_float")[1]["response"]["body"]
    model = OpenAIEmbeddingModel(api_key="k", **clients(lambda r: httpx2.Response(200, json=change(reply))))
    with pytest.raises(MalformedResponseError, match=message):
        model.embed(["a", "b", "c"])


@pytest.mark.parametrize("mode", MODES)
def test_ollama_embed_batches_and_keeps_the_order(mode: str) -> None:
    """Four texts, at most one per request: four requests, each answered by its recording."""
    replay = Replay("ollama", "embed_a_four_texts")
    texts = recorded_inputs("ollama", "embed_a_four_texts")
    model = OllamaEmbeddingModel("nomic-embed-text", max_batch_size=1, retry=FAST, **clients(replay))
    vectors = embed(model, texts, mode)
    assert [json.loads(r.content) for r in replay.sent] == [{"model": "nomic-embed-text", "input": [t]} for t in texts]
    assert all(r.url.path == "/api/embed" and "authorization" not in r.headers for r in replay.sent)
    recorded = [i["response"]["body"]["embeddings"][0] for i in interactions("ollama", "embed_a_four_texts")]
    assert vectors == recorded
    assert [len(v) for v in vectors] == [768] * 4


def test_ollama_reply_with_the_wrong_count_is_refused() -> None:
    reply = interactions("ollama", "embed_a_four_texts")[0]["response"]["body"]
    model = OllamaEmbeddingModel("nomic-embed-text", **clients(lambda r: httpx2.Response(200, json=reply)))
    with pytest.raises(MalformedResponseError, match="1 embeddings for 2 inputs"):
        model.embed(["a", "b"])


def test_ollama_options_go_into_the_body() -> None:
    reply = interactions("ollama", "embed_a_four_texts")[0]["response"]["body"]
    sent: list[Any] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return httpx2.Response(200, json=reply)

    OllamaEmbeddingModel("m", dimensions=768, truncate=False, keep_alive="5m", **clients(handler)).embed(["x"])
    assert sent == [{"model": "m", "input": ["x"], "dimensions": 768, "truncate": False, "keep_alive": "5m"}]


def test_recorded_ollama_vectors_rank_a_text_closest_to_itself() -> None:
    """The recorded embeddings in a store: each text finds itself first."""
    texts = recorded_inputs("ollama", "embed_a_four_texts")
    replay = Replay("ollama", "embed_a_four_texts")
    store = InMemoryVectorStore(OllamaEmbeddingModel("nomic-embed-text", max_batch_size=1, **clients(replay)))
    store.add([Document(f"t{i}", text) for i, text in enumerate(texts)])
    vectors = [i["response"]["body"]["embeddings"][0] for i in interactions("ollama", "embed_a_four_texts")]
    from chatclient.retrieval import SearchRequest

    for i, vector in enumerate(vectors):
        found = store.search(SearchRequest(vector=vector, top_k=2))
        assert found[0].id == f"t{i}" and found[0].score == pytest.approx(1.0, abs=1e-6)
        assert found[1].score is not None and found[1].score < 0.9


def test_an_embedding_model_from_a_registry_string() -> None:
    from chatclient.errors import ConfigurationError
    from providers import create_embedding_model

    openai_model = create_embedding_model("openai:text-embedding-3-small", api_key="k", dimensions=256)
    assert isinstance(openai_model, OpenAIEmbeddingModel)
    assert (openai_model.model, openai_model.dimensions) == ("text-embedding-3-small", 256)
    ollama_model = create_embedding_model("ollama:nomic-embed-text:latest")
    assert isinstance(ollama_model, OllamaEmbeddingModel) and ollama_model.model == "nomic-embed-text:latest"
    with pytest.raises(ConfigurationError, match="providers with one: ollama, openai"):
        create_embedding_model("anthropic:claude")
    with pytest.raises(ConfigurationError, match="provider:model"):
        create_embedding_model("text-embedding-3-small")
