"""Answering from your own documents, offline: a scripted chat model and recorded embeddings.

The documents are embedded by the real Ollama embedding model (``providers.ollama``) whose HTTP
exchanges are replayed from ``tests/fixtures/provider-traffic/ollama/embed_a_four_texts.yaml``
(nomic-embed-text, recorded by the langchaingo project; see that folder's README): the vectors are
real, only the network is replayed, one recorded exchange per text. The chat model is scripted.

1. ``RetrievalAugmentationAdvisor`` beside memory: a helper model rewrites the question into a
   search query, the store is searched, the documents are added to the question, and the reply
   carries them (id, score, metadata) for citations. Memory keeps the user's own words.
2. Agentic retrieval: the same store offered to the model as a tool, in one line.

Run from the repository root: ``.venv/bin/python examples/retrieval.py`` (``make demo`` runs it).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2

from advisors.rag import RetrievalAugmentationAdvisor, RewriteQueryTransformer
from advisors.retriever import VectorStoreRetriever, retrieved_documents, retriever_tool
from chatclient import AssistantMessage, ChatClient
from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor
from chatclient.memory.window import messages_of
from chatclient.retrieval import Document, InMemoryVectorStore
from chatclient.testing import ScriptedChatModel, tool_call
from providers.ollama import OllamaEmbeddingModel

RECORDING = Path(__file__).resolve().parents[1] / "tests/fixtures/provider-traffic/ollama/embed_a_four_texts.yaml"


def recorded_embeddings() -> httpx2.MockTransport:
    """Serves each recorded ``/api/embed`` reply to the request for the same text (an unknown text is a 404)."""
    try:
        import yaml  # the recordings are YAML: installed by `make demo` (the `demo` extra) and by `dev`
    except ModuleNotFoundError:
        raise SystemExit("retrieval.py reads recordings kept as YAML: run it in the venv `make demo` creates") from None
    interactions = yaml.safe_load(RECORDING.read_text())["interactions"]
    replies = {i["request"]["body"]["input"]: i["response"]["body"] for i in interactions}

    def handle(request: httpx2.Request) -> httpx2.Response:
        (text,) = json.loads(request.content)["input"]
        if text not in replies:
            return httpx2.Response(404, json={"error": f"no recording for {text!r}"})
        return httpx2.Response(200, json=replies[text])

    return httpx2.MockTransport(handle)


embedding = OllamaEmbeddingModel(
    "nomic-embed-text", http_client=httpx2.Client(transport=recorded_embeddings()), max_batch_size=1
)
store = InMemoryVectorStore(embedding)
store.add(
    [
        Document("fox", "The quick brown fox jumps over the lazy dog", {"source": "typing-drills.md"}),
        Document("ml", "Machine learning is a subset of artificial intelligence", {"source": "glossary.md"}),
        Document("ollama", "Ollama makes it easy to run large language models locally", {"source": "tools.md"}),
    ]
)

# ---------------------------------------------------------------------- 1. the advisor, beside memory

helper = ChatClient.create(ScriptedChatModel(["Machine learning is a subset of artificial intelligence"]))
rag = RetrievalAugmentationAdvisor(
    VectorStoreRetriever(store, top_k=2), query_transformers=[RewriteQueryTransformer(helper)]
)
repository = InMemorySessionRepository()
model = ScriptedChatModel(["Yes. Machine learning is a subset of artificial intelligence [ml]."])
client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository), rag).build()

question = "Quick one: is ML part of AI? Answer from my notes."
reply = client.prompt(question).conversation("notes").call().chat_client_response()
print("answer:", reply.text)
for document in retrieved_documents(reply):
    print(f"  cited {document.id} ({document.metadata['source']}) score={document.score:.3f}")
sent = model.prompts[0].last_user_message
print("the model saw the context:", sent is not None and "Machine learning is a subset" in (sent.text or ""))
first_stored = messages_of(repository.events("notes"))[0]
print("memory keeps:", getattr(first_stored, "text", None))

# ---------------------------------------------------------------------- 2. a retriever as a tool

search = tool_call("search_documents", {"query": "Ollama makes it easy to run large language models locally"})
agent_model = ScriptedChatModel(
    [AssistantMessage(None, tool_calls=[search]), "Use Ollama to run models locally [ollama]."]
)
agent = ChatClient.builder(agent_model).default_tools(retriever_tool(VectorStoreRetriever(store, top_k=1))).build()
print("agent:", agent.prompt("How can I run a model on my laptop?").call().content())
(result,) = [r for m in agent_model.prompts[1].messages for r in getattr(m, "responses", ())]
print("the tool found:", [hit["id"] for hit in json.loads(str(result.response_data))])
