"""``QuestionAnswerAdvisor``: answer from an application's documents (Spring AI's advisor of that name).

Before the model is asked, the user's question is searched in a vector store and the closest
documents are added to the user message through a template; the documents (ids, scores, metadata)
travel back in the response context for citations (:func:`~advisors.retriever.retrieved_documents`).
It sits inside memory and outside the tool loop (``DEFAULT_RETRIEVAL_ORDER``): memory stores the
user's own words, and one turn retrieves once however many tool rounds it takes.
"""

from __future__ import annotations

from collections.abc import Callable

from chatclient.envelope import ChatClientRequest
from chatclient.retrieval.document import Document
from chatclient.retrieval.filters import Filter
from chatclient.retrieval.store import DEFAULT_TOP_K, AsyncVectorStore, VectorStore
from chatclient.templates import PromptTemplate

from .retriever import (
    DEFAULT_RETRIEVAL_ORDER,
    Augmented,
    AugmentingAdvisor,
    VectorStoreRetriever,
    last_user_text,
    observers_of,
    request_filter,
    with_user_text,
)

__all__ = ["DEFAULT_QUESTION_ANSWER_TEMPLATE", "QuestionAnswerAdvisor", "document_text"]

DEFAULT_QUESTION_ANSWER_TEMPLATE = PromptTemplate(
    "{query}\n\n"
    "Use the context below, between the lines of dashes, to answer.\n"
    "----------\n"
    "{context}\n"
    "----------\n"
    "Answer from this context and the conversation, not from prior knowledge. If the context does not "
    "hold the answer, say that you cannot answer it."
)
"""The user message sent to the model: the question (``query``) and the documents (``context``)."""


def document_text(document: Document) -> str:
    """A document as the model sees it in the context: its text."""
    return document.text


class QuestionAnswerAdvisor(AugmentingAdvisor):
    """Retrieves documents for the user's question from ``store`` and adds them to the question
    through ``template`` (parameters ``query`` and ``context``; each document shown by
    ``document_formatter``, joined by blank lines). A request's own filter comes from the
    ``RETRIEVAL_FILTER`` advisor param. A question with no text (media only) is passed on as it is."""

    def __init__(
        self,
        store: VectorStore | AsyncVectorStore | VectorStoreRetriever,
        *,
        top_k: int = DEFAULT_TOP_K,
        score_threshold: float | None = None,
        filter: Filter | None = None,
        template: PromptTemplate | str = DEFAULT_QUESTION_ANSWER_TEMPLATE,
        document_formatter: Callable[[Document], str] = document_text,
        order: int = DEFAULT_RETRIEVAL_ORDER,
    ) -> None:
        super().__init__(order)
        if isinstance(store, VectorStoreRetriever):
            self.retriever = store
        else:
            self.retriever = VectorStoreRetriever(store, top_k=top_k, score_threshold=score_threshold, filter=filter)
        self.template = PromptTemplate.of(template).expecting("query", "context")
        self.document_formatter = document_formatter

    def augment(self, request: ChatClientRequest) -> Augmented:
        question = last_user_text(request.prompt.messages)
        if question is None:
            return request, []
        index, text = question
        found = self.retriever.retrieve(
            text, filter=request_filter(request), observers=observers_of(request), source=self.name
        )
        return self._augmented(request, index, text, found)

    async def aaugment(self, request: ChatClientRequest) -> Augmented:
        question = last_user_text(request.prompt.messages)
        if question is None:
            return request, []
        index, text = question
        found = await self.retriever.aretrieve(
            text, filter=request_filter(request), observers=observers_of(request), source=self.name
        )
        return self._augmented(request, index, text, found)

    def _augmented(self, request: ChatClientRequest, index: int, text: str, found: list[Document]) -> Augmented:
        context = "\n\n".join(self.document_formatter(d) for d in found)
        return with_user_text(request, index, self.template.render(query=text, context=context)), found
