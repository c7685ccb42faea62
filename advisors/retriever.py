"""A retriever over a vector store, what the retrieval advisors share, and a retriever offered as a tool.

:class:`VectorStoreRetriever` searches a store (sync or async) for a query, with the request's own
metadata filter (the ``RETRIEVAL_FILTER`` advisor param) added to its own, and reports each search
to the request's observers (a ``retrieval`` span when tracing). The advisors put what they retrieved
in the response context under ``RETRIEVED_DOCUMENTS``; :func:`retrieved_documents` reads it, so an
application can cite ids, scores and metadata. :func:`retriever_tool` offers the same search to the
model as a tool, for agentic retrieval.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from chatclient.advisor import AdvisorOrder, AsyncCallNext, AsyncStreamNext, CallNext, StreamNext
from chatclient.envelope import ChatClientRequest, ChatClientResponse, ContextKeys
from chatclient.errors import ConfigurationError
from chatclient.events import StreamEvent, TurnFinished
from chatclient.messages import Message, UserMessage
from chatclient.observation import Observers, RetrievalInfo
from chatclient.retrieval.document import Document
from chatclient.retrieval.filters import And, Filter
from chatclient.retrieval.store import DEFAULT_TOP_K, AsyncVectorStore, SearchRequest, VectorStore
from chatclient.tools.callback import ToolCallback
from chatclient.turn import Turn

__all__ = [
    "DEFAULT_RETRIEVAL_ORDER",
    "RETRIEVAL_FILTER",
    "RETRIEVED_DOCUMENTS",
    "VectorStoreRetriever",
    "retrieved_documents",
    "retriever_tool",
]

RETRIEVED_DOCUMENTS: Final = "chatclient.retrieval.documents"
"""On the response context: the documents a retrieval advisor added to the prompt (best first, with
``id``, ``score`` and ``metadata``), for citations. Read it with :func:`retrieved_documents`."""

RETRIEVAL_FILTER: Final = "chatclient.retrieval.filter"
"""An advisor param: a metadata filter for this request's retrieval, added (AND) to the retriever's
own: ``.advisors(params={RETRIEVAL_FILTER: Key("tenant") == "acme"})``."""

ORIGINAL_TEXT: Final = "chatclient.retrieval.original_text"
"""On an augmented user message's metadata: the user's own words. The advisor puts them back in the
turn it returns (``turn_messages``), so memory stores what the user wrote, not the augmented prompt;
a resumed turn too, as the key travels with the paused prompt."""

DEFAULT_RETRIEVAL_ORDER: Final = AdvisorOrder.MEMORY + 50
"""Inside memory (which stores the user's own words, not the augmented prompt) and outside the tool
loop (one retrieval per turn, not per tool round)."""


def _is_async(store: object) -> bool:
    return inspect.iscoroutinefunction(getattr(store, "search", None))


class VectorStoreRetriever:
    """Searches ``store`` for a query: ``top_k`` documents with ``score >= score_threshold`` passing
    ``filter``. A sync store serves every mode (async modes search it in a worker thread); an async
    store (``AsyncVectorStore``) serves ``acall()``/``astream()`` only."""

    def __init__(
        self,
        store: VectorStore | AsyncVectorStore,
        *,
        top_k: int = DEFAULT_TOP_K,
        score_threshold: float | None = None,
        filter: Filter | None = None,
    ) -> None:
        if not callable(getattr(store, "search", None)):
            raise ConfigurationError(f"A retriever needs a vector store (with search()), got {store!r}")
        SearchRequest(query="", top_k=top_k, score_threshold=score_threshold, filter=filter)  # checks them
        self.store = store
        self.top_k = top_k
        self.score_threshold = score_threshold
        self.filter = filter
        self.is_async = _is_async(store)

    @property
    def store_name(self) -> str:
        return type(self.store).__name__

    def request(self, query: str, extra_filter: Filter | None = None) -> SearchRequest:
        """The search for ``query``, with ``extra_filter`` (a request's own) added to this retriever's."""
        combined = self.filter
        if extra_filter is not None:
            combined = extra_filter if combined is None else And((combined, extra_filter))
        return SearchRequest(query=query, top_k=self.top_k, score_threshold=self.score_threshold, filter=combined)

    def retrieve(
        self, query: str, *, filter: Filter | None = None, observers: Observers | None = None, source: str = ""
    ) -> list[Document]:
        if self.is_async:
            raise ConfigurationError(
                f"{self.store_name} is an async store: retrieve with acall()/astream(), or give a sync store"
            )
        request = self.request(query, filter)
        if not observers:
            return list(self.store.search(request))  # type: ignore[arg-type]  # sync: checked above
        info = RetrievalInfo(query, self.top_k, self.store_name, source)
        tokens = observers.retrieval_started(info)
        try:
            found = list(self.store.search(request))  # type: ignore[arg-type]
        except BaseException as exc:
            observers.retrieval_finished(tokens, info, None, exc)
            raise
        observers.retrieval_finished(tokens, info, found, None)
        return found

    async def aretrieve(
        self, query: str, *, filter: Filter | None = None, observers: Observers | None = None, source: str = ""
    ) -> list[Document]:
        request = self.request(query, filter)
        info = RetrievalInfo(query, self.top_k, self.store_name, source)
        tokens = observers.retrieval_started(info) if observers else None
        try:
            found = list(await self._asearch(request))
        except BaseException as exc:
            if observers and tokens is not None:
                observers.retrieval_finished(tokens, info, None, exc)
            raise
        if observers and tokens is not None:
            observers.retrieval_finished(tokens, info, found, None)
        return found

    async def _asearch(self, request: SearchRequest) -> list[Document]:
        if self.is_async:
            return await self.store.search(request)  # type: ignore[no-any-return,misc]
        from chatclient._storage.threads import in_thread

        store: Any = self.store
        return await in_thread(lambda: store.search(request))  # a sync store may block (SQLite, a server)


def as_retriever(source: VectorStore | AsyncVectorStore | VectorStoreRetriever) -> VectorStoreRetriever:
    return source if isinstance(source, VectorStoreRetriever) else VectorStoreRetriever(source)


def retrieved_documents(response: ChatClientResponse) -> list[Document]:
    """The documents a retrieval advisor added to this reply's prompt, best first (empty when none)."""
    found = response.context.get(RETRIEVED_DOCUMENTS)
    return list(found) if isinstance(found, (list, tuple)) else []


# ---------------------------------------------------------------------------- the advisors' shared part


def last_user_text(messages: Sequence[Message]) -> tuple[int, str] | None:
    """The index and text of the last user message (the question being answered), if it has text."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, UserMessage):
            return (index, message.text) if message.text else None
    return None


def with_user_text(request: ChatClientRequest, index: int, text: str) -> ChatClientRequest:
    """``request`` with the user message at ``index`` replaced by ``text`` (its media kept, its own
    words under ``ORIGINAL_TEXT`` in its metadata)."""
    messages = list(request.prompt.messages)
    message = messages[index]
    assert isinstance(message, UserMessage)
    metadata = {**message.metadata, ORIGINAL_TEXT: message.text}
    messages[index] = message.model_copy(update={"text": text, "metadata": metadata})
    return request.with_prompt(request.prompt.with_messages(messages))


def _original(message: Message) -> Message:
    if not isinstance(message, UserMessage) or ORIGINAL_TEXT not in message.metadata:
        return message
    metadata = {k: v for k, v in message.metadata.items() if k != ORIGINAL_TEXT}
    return message.model_copy(update={"text": message.metadata[ORIGINAL_TEXT], "metadata": metadata})


def restored(response: ChatClientResponse, documents: list[Document] | None) -> ChatClientResponse:
    """``response`` with the user's own words back in its turn, and the documents in its context."""
    updates: dict[str, Any] = {}
    turn = response.context.get(ContextKeys.TURN)
    if isinstance(turn, Turn) and any(
        isinstance(m, UserMessage) and ORIGINAL_TEXT in m.metadata for m in turn.messages
    ):
        updates[ContextKeys.TURN] = replace(turn, messages=tuple(_original(m) for m in turn.messages))
    if documents is not None:
        updates[RETRIEVED_DOCUMENTS] = tuple(documents)
    return response.with_context(updates) if updates else response


def request_filter(request: ChatClientRequest) -> Filter | None:
    value = request.context.get(RETRIEVAL_FILTER)
    if value is None:
        return None
    SearchRequest(query="", filter=value)  # a clear error for anything but a filter expression
    result: Filter = value
    return result


def observers_of(request: ChatClientRequest) -> Observers | None:
    observers = request.context.get(ContextKeys.OBSERVERS)
    return observers if isinstance(observers, Observers) and observers else None


Augmented = tuple[ChatClientRequest, list[Document]]


class AugmentingAdvisor:
    """An advisor that rewrites the request once (``augment``/``aaugment``: retrieve, then add the
    documents to the prompt) and puts the documents in the response context, in all four modes.

    A resumed turn (after a confirmation pause) is not augmented again: its prompt is the paused
    turn's, already augmented. The turn returned holds the user's own words (see ``ORIGINAL_TEXT``)."""

    def __init__(self, order: int) -> None:
        self._order = order

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def order(self) -> int:
        return self._order

    def augment(self, request: ChatClientRequest) -> Augmented:
        raise NotImplementedError

    async def aaugment(self, request: ChatClientRequest) -> Augmented:
        raise NotImplementedError

    def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse:
        if ContextKeys.RESUME in request.context:
            return restored(next_(request), None)
        augmented, documents = self.augment(request)
        return restored(next_(augmented), documents)

    async def aadvise_call(self, request: ChatClientRequest, next_: AsyncCallNext) -> ChatClientResponse:
        if ContextKeys.RESUME in request.context:
            return restored(await next_(request), None)
        augmented, documents = await self.aaugment(request)
        return restored(await next_(augmented), documents)

    def advise_stream(self, request: ChatClientRequest, next_: StreamNext) -> Iterator[StreamEvent]:
        documents: list[Document] | None = None
        if ContextKeys.RESUME not in request.context:
            request, documents = self.augment(request)
        for event in next_(request):
            yield TurnFinished(restored(event.response, documents)) if isinstance(event, TurnFinished) else event

    async def aadvise_stream(self, request: ChatClientRequest, next_: AsyncStreamNext) -> AsyncIterator[StreamEvent]:
        documents: list[Document] | None = None
        if ContextKeys.RESUME not in request.context:
            request, documents = await self.aaugment(request)
        async for event in next_(request):
            yield TurnFinished(restored(event.response, documents)) if isinstance(event, TurnFinished) else event


# ---------------------------------------------------------------------------- a retriever as a tool


def document_record(document: Document) -> dict[str, Any]:
    """What the model sees of a document found by the tool: id, score, metadata and text."""
    return {"id": document.id, "score": document.score, "metadata": dict(document.metadata), "text": document.text}


DEFAULT_TOOL_DESCRIPTION = (
    "Search the knowledge base for passages relevant to a query. Returns the closest passages with "
    "their id, similarity score and metadata; cite the ids you use."
)


def retriever_tool(
    source: VectorStore | AsyncVectorStore | VectorStoreRetriever,
    *,
    name: str = "search_documents",
    description: str = DEFAULT_TOOL_DESCRIPTION,
    formatter: Callable[[Document], Mapping[str, Any]] = document_record,
) -> ToolCallback:
    """A tool that searches ``source`` (a store, or a configured retriever) for the model's query:
    ``client.prompt(q).tools(retriever_tool(store))``. The model decides when to search and what for."""
    from chatclient.tools.decorator import tool
    from chatclient.tools.resolve import resolve_tools

    retriever = as_retriever(source)

    def answer(found: list[Document]) -> str:
        return json.dumps([dict(formatter(d)) for d in found], ensure_ascii=False)

    if retriever.is_async:

        async def asearch(query: str) -> str:
            return answer(await retriever.aretrieve(query, source=name))

        function: Callable[..., Any] = asearch
    else:

        def search(query: str) -> str:
            return answer(retriever.retrieve(query, source=name))

        function = search
    (callback,) = resolve_tools([tool(name=name, description=description)(function)])
    return callback
