"""``RetrievalAugmentationAdvisor``: modular retrieval-augmented generation (Spring AI's advisor of
that name), as a pipeline of small parts, each replaceable:

1. query transformers, in order (:class:`RewriteQueryTransformer`; :class:`CompressionQueryTransformer`,
   which folds the conversation's history into a standalone question);
2. an optional query expander (:class:`MultiQueryExpander`: several phrasings of the question);
3. the retriever, once per query;
4. a document joiner (:class:`ConcatenationDocumentJoiner`: one list, each document once, best first);
5. a query augmenter (:class:`ContextualQueryAugmenter`: the documents added to the user's question).

The transformers and the expander ask a model through a client (a ``ChatClient``, usually a small
and cheap one); their prompts are templates an application can replace. The advisor runs in all four
modes; in ``acall()``/``astream()`` the queries of an expansion are searched concurrently.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from chatclient.envelope import ChatClientRequest
from chatclient.errors import ConfigurationError
from chatclient.messages import AssistantMessage, Message, SystemMessage, UserMessage
from chatclient.prompt import Prompt
from chatclient.retrieval.document import Document
from chatclient.retrieval.store import AsyncVectorStore, VectorStore
from chatclient.templates import PromptTemplate

from .retriever import (
    DEFAULT_RETRIEVAL_ORDER,
    Augmented,
    AugmentingAdvisor,
    VectorStoreRetriever,
    as_retriever,
    last_user_text,
    observers_of,
    request_filter,
    with_user_text,
)

__all__ = [
    "CompressionQueryTransformer",
    "ConcatenationDocumentJoiner",
    "ContextualQueryAugmenter",
    "DocumentJoiner",
    "MultiQueryExpander",
    "Query",
    "QueryAugmenter",
    "QueryExpander",
    "QueryTransformer",
    "RetrievalAugmentationAdvisor",
    "RewriteQueryTransformer",
]


@dataclass(frozen=True)
class Query:
    """The question being answered: its ``text``, the conversation ``history`` before it (what memory
    loaded) and the request's ``context``."""

    text: str
    history: tuple[Message, ...] = ()
    context: Mapping[str, Any] = field(default_factory=dict)

    def with_text(self, text: str) -> Query:
        return replace(self, text=text)


# ---------------------------------------------------------------------------- the parts' SPIs


@runtime_checkable
class QueryTransformer(Protocol):
    """Turns a query into a better one for search (``atransform``: the same, awaited)."""

    def transform(self, query: Query) -> Query: ...

    async def atransform(self, query: Query) -> Query: ...


@runtime_checkable
class QueryExpander(Protocol):
    """Turns a query into several, each searched."""

    def expand(self, query: Query) -> list[Query]: ...

    async def aexpand(self, query: Query) -> list[Query]: ...


@runtime_checkable
class DocumentJoiner(Protocol):
    """Merges the documents found for each query into the list given to the model."""

    def join(self, found: Sequence[tuple[Query, list[Document]]]) -> list[Document]: ...


@runtime_checkable
class QueryAugmenter(Protocol):
    """Adds the documents to the user's question: the text of the user message sent to the model."""

    def augment(self, query: Query, documents: Sequence[Document]) -> str: ...


class _Reply(Protocol):
    def content(self) -> str | None: ...


class _AsyncReply(Protocol):
    async def content(self) -> str | None: ...


class _Request(Protocol):
    def call(self) -> _Reply: ...

    def acall(self) -> _AsyncReply: ...


class QueryClient(Protocol):
    """What the model-backed parts ask of their client: a ``ChatClient`` is one."""

    def prompt(self, content: Prompt, /) -> _Request: ...


class _ModelQueryPart:
    """A part that asks a model with a template and reads back text."""

    def __init__(self, client: QueryClient, template: PromptTemplate) -> None:
        if not callable(getattr(client, "prompt", None)):
            raise ConfigurationError(f"{type(self).__name__} needs a client (a ChatClient), got {client!r}")
        self.client = client
        self.template = template

    def _ask(self, **params: Any) -> str:
        return self.client.prompt(Prompt([UserMessage(self.template.render(params))])).call().content() or ""

    async def _aask(self, **params: Any) -> str:
        return await self.client.prompt(Prompt([UserMessage(self.template.render(params))])).acall().content() or ""


# ---------------------------------------------------------------------------- transformers


DEFAULT_REWRITE_TEMPLATE = PromptTemplate(
    "Rewrite the question below into a short, specific search query for {target}. Keep every name, "
    "number and term the answer depends on; drop greetings and anything else that does not help the "
    "search. Reply with the query only.\n\nQuestion: {query}"
)


class RewriteQueryTransformer(_ModelQueryPart):
    """Rewrites a wordy or vague question into a search query (``target``: what is searched)."""

    def __init__(
        self,
        client: QueryClient,
        *,
        template: PromptTemplate | str = DEFAULT_REWRITE_TEMPLATE,
        target: str = "a vector store",
    ) -> None:
        super().__init__(client, PromptTemplate.of(template).expecting("query", "target"))
        self.target = target

    def transform(self, query: Query) -> Query:
        return _rewritten(query, self._ask(query=query.text, target=self.target))

    async def atransform(self, query: Query) -> Query:
        return _rewritten(query, await self._aask(query=query.text, target=self.target))


DEFAULT_COMPRESSION_TEMPLATE = PromptTemplate(
    'Below are a conversation and a follow-up question that may refer to it ("it", "that one", '
    '"the second"). Write the follow-up as one standalone question that can be understood without '
    "the conversation, keeping what the user asks for. Reply with the question only.\n\n"
    "Conversation:\n{history}\n\nFollow-up question: {query}"
)


def history_text(messages: Sequence[Message]) -> str:
    """The user and assistant texts of a conversation, one ``role: text`` line each."""
    lines = []
    for message in messages:
        if isinstance(message, (UserMessage, AssistantMessage)) and message.text:
            lines.append(f"{message.role}: {message.text}")
    return "\n".join(lines)


class CompressionQueryTransformer(_ModelQueryPart):
    """Folds the conversation's history into the question, so a follow-up ("and its population?")
    is searched as a standalone question. A query without history is left as it is (no model call)."""

    def __init__(self, client: QueryClient, *, template: PromptTemplate | str = DEFAULT_COMPRESSION_TEMPLATE) -> None:
        super().__init__(client, PromptTemplate.of(template).expecting("history", "query"))

    def transform(self, query: Query) -> Query:
        history = history_text(query.history)
        return _rewritten(query, self._ask(history=history, query=query.text)) if history else query

    async def atransform(self, query: Query) -> Query:
        history = history_text(query.history)
        return _rewritten(query, await self._aask(history=history, query=query.text)) if history else query


def _rewritten(query: Query, text: str) -> Query:
    """The model's rewrite, or the query as it was when the model gave nothing usable."""
    text = text.strip()
    return query.with_text(text) if text else query


# ---------------------------------------------------------------------------- expansion


DEFAULT_MULTI_QUERY_TEMPLATE = PromptTemplate(
    "Write {number} different search queries for the question below, each from another angle (other "
    "words, a narrower or broader scope), all keeping its intent. One query per line, no numbering, "
    "nothing else.\n\nQuestion: {query}"
)

_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


class MultiQueryExpander(_ModelQueryPart):
    """Asks the model for ``number`` phrasings of the question; each is searched, so documents that
    match another wording are found too. The original question is kept first unless
    ``include_original=False``. A reply with no usable line falls back to the original alone."""

    def __init__(
        self,
        client: QueryClient,
        *,
        number: int = 3,
        include_original: bool = True,
        template: PromptTemplate | str = DEFAULT_MULTI_QUERY_TEMPLATE,
    ) -> None:
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ConfigurationError(f"MultiQueryExpander(number) must be a positive integer, got {number!r}")
        super().__init__(client, PromptTemplate.of(template).expecting("number", "query"))
        self.number = number
        self.include_original = include_original

    def expand(self, query: Query) -> list[Query]:
        return self._queries(query, self._ask(number=self.number, query=query.text))

    async def aexpand(self, query: Query) -> list[Query]:
        return self._queries(query, await self._aask(number=self.number, query=query.text))

    def _queries(self, query: Query, reply: str) -> list[Query]:
        texts: list[str] = []
        for line in reply.splitlines():
            text = _LIST_MARK.sub("", line).strip()
            if text and text != query.text and text not in texts:
                texts.append(text)
        variants = [query.with_text(t) for t in texts[: self.number]]
        if not variants:
            return [query]
        return [query, *variants] if self.include_original else variants


# ---------------------------------------------------------------------------- joining and augmenting


class ConcatenationDocumentJoiner:
    """Every document found once (the best score of its copies), best first, ties by id; at most
    ``top_k`` when set."""

    def __init__(self, top_k: int | None = None) -> None:
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise ConfigurationError(f"ConcatenationDocumentJoiner(top_k) must be a positive integer, got {top_k!r}")
        self.top_k = top_k

    def join(self, found: Sequence[tuple[Query, list[Document]]]) -> list[Document]:
        best: dict[str, Document] = {}
        for _, documents in found:
            for document in documents:
                held = best.get(document.id)
                if held is None or (document.score or 0.0) > (held.score or 0.0):
                    best[document.id] = document
        joined = sorted(best.values(), key=lambda d: (-(d.score or 0.0), d.id))
        return joined[: self.top_k] if self.top_k is not None else joined


DEFAULT_CONTEXT_TEMPLATE = PromptTemplate(
    "Context information is below.\n----------\n{context}\n----------\n"
    "Answer the question from the context only, not from prior knowledge. If the context does not hold "
    "the answer, say that you cannot answer it. Do not mention the context itself.\n\nQuestion: {query}"
)

DEFAULT_EMPTY_CONTEXT_TEMPLATE = PromptTemplate(
    "The question below is outside what you were given to answer from. Say politely that you cannot "
    "answer it.\n\nQuestion: {query}"
)


class ContextualQueryAugmenter:
    """Adds the documents to the question through ``template`` (``context`` and ``query``). When
    nothing was found the question goes through ``empty_template`` (``query``), which tells the model
    to decline, unless ``allow_empty_context`` (then the question is sent as it is)."""

    def __init__(
        self,
        *,
        template: PromptTemplate | str = DEFAULT_CONTEXT_TEMPLATE,
        empty_template: PromptTemplate | str = DEFAULT_EMPTY_CONTEXT_TEMPLATE,
        allow_empty_context: bool = False,
        separator: str = "\n\n",
    ) -> None:
        self.template = PromptTemplate.of(template).expecting("context", "query")
        self.empty_template = PromptTemplate.of(empty_template).expecting("query")
        self.allow_empty_context = allow_empty_context
        self.separator = separator

    def augment(self, query: Query, documents: Sequence[Document]) -> str:
        if not documents:
            return query.text if self.allow_empty_context else self.empty_template.render(query=query.text)
        context = self.separator.join(d.text for d in documents)
        return self.template.render(context=context, query=query.text)


# ---------------------------------------------------------------------------- the advisor


class RetrievalAugmentationAdvisor(AugmentingAdvisor):
    """Transforms the question, expands it, retrieves for each query, joins the documents and adds
    them to the user message (see the module's docstring). The original question is what the
    augmenter shows the model; the transformed ones are what is searched."""

    def __init__(
        self,
        retriever: VectorStore | AsyncVectorStore | VectorStoreRetriever,
        *,
        query_transformers: Sequence[QueryTransformer] = (),
        query_expander: QueryExpander | None = None,
        document_joiner: DocumentJoiner | None = None,
        query_augmenter: QueryAugmenter | None = None,
        order: int = DEFAULT_RETRIEVAL_ORDER,
    ) -> None:
        super().__init__(order)
        self.retriever: VectorStoreRetriever = as_retriever(retriever)
        for transformer in query_transformers:
            if not isinstance(transformer, QueryTransformer):
                raise ConfigurationError(f"{transformer!r} is not a QueryTransformer (transform and atransform)")
        if query_expander is not None and not isinstance(query_expander, QueryExpander):
            raise ConfigurationError(f"{query_expander!r} is not a QueryExpander (expand and aexpand)")
        self.query_transformers = tuple(query_transformers)
        self.query_expander = query_expander
        self.document_joiner: DocumentJoiner = document_joiner or ConcatenationDocumentJoiner()
        self.query_augmenter: QueryAugmenter = query_augmenter or ContextualQueryAugmenter()

    def augment(self, request: ChatClientRequest) -> Augmented:
        started = _query_of(request)
        if started is None:
            return request, []
        index, original = started
        query = original
        for transformer in self.query_transformers:
            query = transformer.transform(query)
        queries = self.query_expander.expand(query) if self.query_expander is not None else [query]
        extra, observers = request_filter(request), observers_of(request)
        found = [
            (q, self.retriever.retrieve(q.text, filter=extra, observers=observers, source=self.name)) for q in queries
        ]
        return self._augmented(request, index, original, found)

    async def aaugment(self, request: ChatClientRequest) -> Augmented:
        import asyncio

        started = _query_of(request)
        if started is None:
            return request, []
        index, original = started
        query = original
        for transformer in self.query_transformers:
            query = await transformer.atransform(query)
        queries = await self.query_expander.aexpand(query) if self.query_expander is not None else [query]
        extra, observers = request_filter(request), observers_of(request)
        results = await asyncio.gather(
            *(self.retriever.aretrieve(q.text, filter=extra, observers=observers, source=self.name) for q in queries)
        )
        return self._augmented(request, index, original, list(zip(queries, results, strict=True)))

    def _augmented(
        self, request: ChatClientRequest, index: int, original: Query, found: list[tuple[Query, list[Document]]]
    ) -> Augmented:
        documents = self.document_joiner.join(found)
        return with_user_text(request, index, self.query_augmenter.augment(original, documents)), documents


def _query_of(request: ChatClientRequest) -> tuple[int, Query] | None:
    """The user's question as a :class:`Query`, with the conversation before it (system texts left out)."""
    question = last_user_text(request.prompt.messages)
    if question is None:
        return None
    index, text = question
    history = tuple(m for m in request.prompt.messages[:index] if not isinstance(m, SystemMessage))
    return index, Query(text, history, request.context)
