"""The retrieval advisors (issue 33, item 4): QuestionAnswerAdvisor and RetrievalAugmentationAdvisor in
the four modes, beside memory and the tool loop, observed and traced, and a retriever as a tool."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from advisors.question_answer import QuestionAnswerAdvisor
from advisors.rag import (
    CompressionQueryTransformer,
    ConcatenationDocumentJoiner,
    ContextualQueryAugmenter,
    MultiQueryExpander,
    Query,
    RetrievalAugmentationAdvisor,
    RewriteQueryTransformer,
)
from advisors.retriever import RETRIEVAL_FILTER, VectorStoreRetriever, retrieved_documents, retriever_tool
from chatclient import AssistantMessage, ChatClient, ChatClientResponse, ConfigurationError, tool
from chatclient.client import ChatClientRequestSpec
from chatclient.events import TurnFinished
from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor
from chatclient.memory.window import messages_of
from chatclient.observation import ChatObserver, RetrievalInfo
from chatclient.retrieval import AsyncInMemoryVectorStore, Document, InMemoryVectorStore, Key
from chatclient.testing import ScriptedChatModel, tool_call

from .embedder import WordsEmbedding

DOCS = [
    Document("owls", "Owls hunt at night and can turn their heads far around.", {"kind": "bird", "year": 2021}),
    Document("bats", "Bats find insects at night by echolocation.", {"kind": "mammal", "year": 2020}),
    Document("bees", "Bees make honey from nectar in the hive.", {"kind": "insect", "year": 2019}),
]
MODES = ["call", "stream", "acall", "astream"]


def _store(embedding: WordsEmbedding | None = None) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding or WordsEmbedding())
    store.add(DOCS)
    return store


def run(spec: ChatClientRequestSpec, mode: str) -> ChatClientResponse:
    """The final ``ChatClientResponse`` of ``spec`` in ``mode``."""
    if mode == "call":
        return spec.call().chat_client_response()
    if mode == "acall":
        return asyncio.run(spec.acall().chat_client_response())
    if mode == "stream":
        finished = [e for e in spec.stream().events() if isinstance(e, TurnFinished)]
        return finished[-1].response

    async def collect() -> ChatClientResponse:
        events = [e async for e in spec.astream().events()]
        return [e for e in events if isinstance(e, TurnFinished)][-1].response

    return asyncio.run(collect())


def _user_text(model: ScriptedChatModel, prompt: int = -1) -> str:
    message = model.prompts[prompt].last_user_message
    assert message is not None and message.text is not None
    return message.text


@pytest.mark.parametrize("mode", MODES)
def test_the_question_answer_advisor_adds_the_documents_and_returns_them_for_citations(mode: str) -> None:
    model = ScriptedChatModel(["Owls hunt at night."])
    advisor = QuestionAnswerAdvisor(_store(), top_k=2)
    client = ChatClient.builder(model).default_advisors(advisor).build()
    response = run(client.prompt("When do owls hunt at night?"), mode)
    sent = _user_text(model)
    assert sent.startswith("When do owls hunt at night?\n\nUse the context below")
    assert DOCS[0].text in sent and DOCS[1].text in sent and DOCS[2].text not in sent
    found = retrieved_documents(response)
    assert [d.id for d in found] == ["owls", "bats"]
    assert found[0].score is not None and found[0].score > found[1].score  # type: ignore[operator]
    assert found[0].metadata == {"kind": "bird", "year": 2021}


def test_a_replaced_template_a_formatter_and_a_request_filter() -> None:
    model = ScriptedChatModel(["a", "b"])
    advisor = QuestionAnswerAdvisor(
        _store(),
        top_k=3,
        template="Q: {query}\nSources:\n{context}",
        document_formatter=lambda d: f"[{d.id}] {d.text}",
    )
    client = ChatClient.builder(model).default_advisors(advisor).build()
    client.prompt("What happens at night?").call().content()
    assert _user_text(model).startswith("Q: What happens at night?\nSources:\n[")
    assert "[bees] Bees make honey" in _user_text(model)
    response = (
        client.prompt("What happens at night?")
        .advisors(params={RETRIEVAL_FILTER: Key("year") >= 2020})
        .call()
        .chat_client_response()
    )
    assert {d.id for d in retrieved_documents(response)} == {"owls", "bats"}
    with pytest.raises(
        ConfigurationError,
        match=r"given exactly \{query\}, \{context\}.*give 'context', which the template does not use",
    ):
        QuestionAnswerAdvisor(_store(), template="Q: {query}")


def test_a_question_with_braces_is_inserted_as_it_is() -> None:
    model = ScriptedChatModel(["ok"])
    ChatClient.builder(model).default_advisors(QuestionAnswerAdvisor(_store())).build().prompt(
        "What is {owls} and }}?"
    ).call().content()
    assert _user_text(model).startswith("What is {owls} and }}?\n\n")


@pytest.mark.parametrize("mode", MODES)
def test_memory_stores_the_users_words_not_the_augmented_prompt(mode: str) -> None:
    repository = InMemorySessionRepository()
    model = ScriptedChatModel(["Owls hunt at night.", "Yes, by echolocation."])
    client = (
        ChatClient.builder(model)
        .default_advisors(SessionMemoryAdvisor(repository), QuestionAnswerAdvisor(_store(), top_k=1))
        .build()
    )
    run(client.prompt("When do owls hunt?").conversation("c1"), mode)
    run(client.prompt("Do bats find insects at night?").conversation("c1"), mode)
    second = model.prompts[1].messages
    assert [getattr(m, "text", None) for m in second[:2]] == ["When do owls hunt?", "Owls hunt at night."]
    assert _user_text(model).startswith("Do bats find insects at night?\n\nUse the context")
    stored = [getattr(m, "text", None) for m in messages_of(repository.events("c1"))]
    assert stored == [
        "When do owls hunt?",
        "Owls hunt at night.",
        "Do bats find insects at night?",
        "Yes, by echolocation.",
    ]


class CountingStore(InMemoryVectorStore):
    def __init__(self) -> None:
        super().__init__(WordsEmbedding())
        self.searches: list[Any] = []

    def search(self, request: Any) -> list[Document]:
        self.searches.append(request)
        return super().search(request)


@pytest.mark.parametrize("mode", MODES)
def test_one_retrieval_per_turn_however_many_tool_rounds(mode: str) -> None:
    store = CountingStore()
    store.add(DOCS)

    @tool(description="Count owls seen last night")
    def owl_count() -> str:
        return "7 owls"

    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("owl_count", {})]), "Seven owls."])
    client = ChatClient.builder(model).default_advisors(QuestionAnswerAdvisor(store)).default_tools(owl_count).build()
    response = run(client.prompt("How many owls hunt at night?"), mode)
    assert len(store.searches) == 1
    assert _user_text(model, 0) == _user_text(model, 1) and DOCS[0].text in _user_text(model, 1)
    assert response.text == "Seven owls." and retrieved_documents(response)[0].id == "owls"


class Recorder(ChatObserver):
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def retrieval_started(self, info: RetrievalInfo) -> Any:
        self.seen.append(("started", info))
        return "token"

    def retrieval_finished(self, token: Any, info: RetrievalInfo, documents: Any, error: BaseException | None) -> None:
        self.seen.append(("finished", (token, [d.id for d in documents or []], error)))


@pytest.mark.parametrize("mode", MODES)
def test_observers_see_each_search(mode: str) -> None:
    recorder = Recorder()
    model = ScriptedChatModel(["ok"])
    client = ChatClient.builder(model).default_advisors(QuestionAnswerAdvisor(_store(), top_k=1)).build()
    run(client.prompt("owls at night").observers(recorder), mode)
    assert recorder.seen == [
        ("started", RetrievalInfo("owls at night", 1, "InMemoryVectorStore", "QuestionAnswerAdvisor")),
        ("finished", ("token", ["owls"], None)),
    ]


def test_tracing_records_a_retrieval_span_inside_the_call() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from chatclient.tracing import OpenTelemetryObserver

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedChatModel(["ok"])
    client = (
        ChatClient.builder(model)
        .default_advisors(QuestionAnswerAdvisor(_store(), top_k=2))
        .observers(OpenTelemetryObserver(tracer_provider=provider))
        .build()
    )
    client.prompt("owls at night").call().content()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    retrieval = spans["retrieval InMemoryVectorStore"]
    assert retrieval.attributes is not None
    assert retrieval.attributes["gen_ai.operation.name"] == "retrieval"
    assert list(retrieval.attributes["chatclient.retrieval.document_ids"]) == ["owls", "bats"]  # type: ignore[arg-type]
    assert "chatclient.retrieval.query" not in retrieval.attributes  # the user's words only with content capture
    root = spans["invoke_agent"]
    assert retrieval.context.trace_id == root.context.trace_id


def test_an_async_store_serves_the_async_modes_and_the_sync_ones_say_so() -> None:
    store = AsyncInMemoryVectorStore(WordsEmbedding())
    asyncio.run(store.add(DOCS))
    model = ScriptedChatModel(["ok", "ok"])
    client = ChatClient.builder(model).default_advisors(QuestionAnswerAdvisor(store, top_k=1)).build()
    assert [d.id for d in retrieved_documents(run(client.prompt("owls at night"), "acall"))] == ["owls"]
    assert [d.id for d in retrieved_documents(run(client.prompt("bats echolocation"), "astream"))] == ["bats"]
    with pytest.raises(ConfigurationError, match=r"AsyncInMemoryVectorStore is an async store: retrieve with acall"):
        client.prompt("owls").call().content()


def test_a_failing_search_reaches_the_caller_and_the_observers() -> None:
    class Broken(InMemoryVectorStore):
        def search(self, request: Any) -> list[Document]:
            raise RuntimeError("index offline")

    recorder = Recorder()
    model = ScriptedChatModel(["never"])
    client = ChatClient.builder(model).default_advisors(QuestionAnswerAdvisor(Broken(WordsEmbedding()))).build()
    with pytest.raises(RuntimeError, match="index offline"):
        client.prompt("owls").observers(recorder).call().content()
    assert model.prompts == []
    assert recorder.seen[-1][0] == "finished" and isinstance(recorder.seen[-1][1][2], RuntimeError)


# ------------------------------------------------------------------------------------------- RAG


def _helper(replies: Sequence[str] | Callable[[Any], str]) -> tuple[ChatClient, ScriptedChatModel]:
    model = ScriptedChatModel(replies)
    return ChatClient.create(model), model


@pytest.mark.parametrize("mode", MODES)
def test_rag_rewrites_the_query_searches_it_and_shows_the_model_the_original_question(mode: str) -> None:
    embedding = WordsEmbedding()
    store = _store(embedding)
    helper, helper_model = _helper(["bats echolocation insects"])
    advisor = RetrievalAugmentationAdvisor(
        VectorStoreRetriever(store, top_k=1), query_transformers=[RewriteQueryTransformer(helper)]
    )
    model = ScriptedChatModel(["By echolocation."])
    client = ChatClient.builder(model).default_advisors(advisor).build()
    embedding.texts.clear()
    response = run(client.prompt("Hi! Quick one, how do those flying mammals find food in the dark?"), mode)
    assert embedding.texts == ["bats echolocation insects"], "the rewritten query is what is searched"
    assert "Question: Hi! Quick one, how do those flying mammals" in (helper_model.prompts[0].messages[0].text or "")  # type: ignore[union-attr]
    sent = _user_text(model)
    assert DOCS[1].text in sent and sent.endswith(
        "Question: Hi! Quick one, how do those flying mammals find food in the dark?"
    )
    assert [d.id for d in retrieved_documents(response)] == ["bats"]


@pytest.mark.parametrize("mode", MODES)
def test_compression_folds_the_conversation_into_a_standalone_question(mode: str) -> None:
    embedding = WordsEmbedding()
    helper, helper_model = _helper(["How do bats find insects at night?"])
    advisor = RetrievalAugmentationAdvisor(
        VectorStoreRetriever(_store(embedding), top_k=1), query_transformers=[CompressionQueryTransformer(helper)]
    )
    model = ScriptedChatModel(["Bats hunt at night.", "By echolocation."])
    repository = InMemorySessionRepository()
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository), advisor).build()
    first = run(client.prompt("Tell me about bats").conversation("c"), mode)
    assert helper_model.prompts == [], "no history yet: no model call"
    assert [d.id for d in retrieved_documents(first)] == ["bats"]
    embedding.texts.clear()
    run(client.prompt("And how do they find food?").conversation("c"), mode)
    asked = helper_model.prompts[0].messages[0].text or ""  # type: ignore[union-attr]
    assert "Conversation:\nuser: Tell me about bats\nassistant: Bats hunt at night.\n" in asked
    assert asked.endswith("Follow-up question: And how do they find food?")
    assert embedding.texts == ["How do bats find insects at night?"]


@pytest.mark.parametrize("mode", MODES)
def test_multi_query_expansion_searches_each_query_and_joins_the_documents_once(mode: str) -> None:
    embedding = WordsEmbedding()
    helper, _ = _helper(["1. owls night hunting\n- bees honey hive\n\nowls night hunting"])  # a list, a blank, a repeat
    advisor = RetrievalAugmentationAdvisor(
        VectorStoreRetriever(_store(embedding), top_k=1),
        query_expander=MultiQueryExpander(helper, number=2),
    )
    model = ScriptedChatModel(["ok"])
    client = ChatClient.builder(model).default_advisors(advisor).build()
    embedding.texts.clear()
    response = run(client.prompt("night owls"), mode)
    assert sorted(embedding.texts) == sorted(["night owls", "owls night hunting", "bees honey hive"])
    found = retrieved_documents(response)
    assert sorted(d.id for d in found) == ["bees", "owls"]  # owls found twice, kept once
    assert found[0].score >= found[1].score  # type: ignore[operator]


def test_the_joiner_keeps_each_document_once_with_its_best_score() -> None:
    q = Query("q")
    a1, a2, b = Document("a", "x", score=0.5), Document("a", "x", score=0.9), Document("b", "y", score=0.7)
    assert ConcatenationDocumentJoiner().join([(q, [a1, b]), (q, [a2])]) == [a2, b]
    assert ConcatenationDocumentJoiner(top_k=1).join([(q, [a1, b]), (q, [a2])]) == [a2]


def test_an_empty_context_asks_the_model_to_decline_unless_allowed() -> None:
    model = ScriptedChatModel(["I cannot answer that.", "Paris."])
    strict = RetrievalAugmentationAdvisor(VectorStoreRetriever(_store(), score_threshold=0.99))
    client = ChatClient.builder(model).default_advisors(strict).build()
    response = client.prompt("What is the capital of France?").call().chat_client_response()
    assert retrieved_documents(response) == []
    assert _user_text(model).startswith("The question below is outside what you were given")
    lenient = RetrievalAugmentationAdvisor(
        VectorStoreRetriever(_store(), score_threshold=0.99),
        query_augmenter=ContextualQueryAugmenter(allow_empty_context=True),
    )
    ChatClient.builder(model).default_advisors(lenient).build().prompt(
        "What is the capital of France?"
    ).call().content()
    assert _user_text(model) == "What is the capital of France?"


def test_expansion_falls_back_to_the_original_and_parts_are_checked() -> None:
    helper, _ = _helper(["\n  \n"])
    assert MultiQueryExpander(helper).expand(Query("q")) == [Query("q")]
    with pytest.raises(ConfigurationError, match=r"positive integer"):
        MultiQueryExpander(helper, number=0)
    with pytest.raises(ConfigurationError, match=r"given exactly \{history\}, \{query\}"):
        CompressionQueryTransformer(helper, template="{query}")
    with pytest.raises(ConfigurationError, match=r"is not a QueryTransformer"):
        RetrievalAugmentationAdvisor(_store(), query_transformers=[object()])  # type: ignore[list-item]


# ---------------------------------------------------------------------------------- retriever as a tool


@pytest.mark.parametrize("mode", MODES)
def test_a_retriever_is_a_tool_in_one_line(mode: str) -> None:
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("search_documents", {"query": "bats echolocation"})]), "ok"]
    )
    client = ChatClient.builder(model).default_tools(retriever_tool(VectorStoreRetriever(_store(), top_k=1))).build()
    run(client.prompt("How do bats hunt?"), mode)
    (result,) = [r for m in model.prompts[1].messages for r in getattr(m, "responses", ())]
    found = json.loads(result.response_data)
    assert found == [{"id": "bats", "score": found[0]["score"], "metadata": {"kind": "mammal", "year": 2020},
                      "text": DOCS[1].text}]  # fmt: skip
    assert (model.prompts[0].options.tool_callbacks[0].definition.name) == "search_documents"  # type: ignore[union-attr]


def test_an_async_store_gives_an_async_tool() -> None:
    store = AsyncInMemoryVectorStore(WordsEmbedding())
    asyncio.run(store.add(DOCS))
    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("kb", {"query": "honey"})]), "ok"])
    client = ChatClient.builder(model).default_tools(retriever_tool(store, name="kb")).build()
    asyncio.run(client.prompt("honey?").acall().content())
    (result,) = [r for m in model.prompts[1].messages for r in getattr(m, "responses", ())]
    assert json.loads(result.response_data)[0]["id"] == "bees"


@pytest.mark.parametrize("mode", MODES)
def test_a_paused_turn_resumes_without_a_second_retrieval_and_memory_keeps_the_users_words(mode: str) -> None:
    from chatclient import ToolCallDecision, ToolCallDecisions, awaiting_decision

    store = CountingStore()
    store.add(DOCS)

    @tool(description="Order owl food", requires_confirmation=True)
    def order_food() -> str:
        return "ordered"

    repository = InMemorySessionRepository()
    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("order_food", {}, id="c1")]), "Done."])
    client = (
        ChatClient.builder(model)
        .default_advisors(SessionMemoryAdvisor(repository), QuestionAnswerAdvisor(store, top_k=1))
        .default_tools(order_food)
        .build()
    )
    paused = run(client.prompt("Order food for the owls").conversation("c"), mode)
    pending = awaiting_decision(paused)
    assert pending is not None and messages_of(repository.events("c")) == []
    resumed = run(
        client.prompt().conversation("c").resume(pending, ToolCallDecisions.of(ToolCallDecision.allow("c1"))), mode
    )
    assert resumed.text == "Done." and len(store.searches) == 1
    assert _user_text(model, 1) == _user_text(model, 0) and _user_text(model, 1).count("Use the context below") == 1
    stored = messages_of(repository.events("c"))
    assert getattr(stored[0], "text", None) == "Order food for the owls"
    assert stored[0].metadata == {}
