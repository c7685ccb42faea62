"""Hello, chatclient: a call, a stream and a typed reply, offline on a scripted model.

Run: ``make demo`` or ``python examples/hello.py``. To talk to a real model, replace the
``ScriptedChatModel`` by a provider's ``ChatModel``; nothing else changes.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

from chatclient import ChatClient
from chatclient.testing import ScriptedChatModel


class City(BaseModel):
    name: str
    country: str


def main() -> None:
    model = ScriptedChatModel(
        [
            "Hello! How can I help?",
            "Streaming arrives in small deltas.",
            '[{"name": "Paris", "country": "France"}, {"name": "Kyoto", "country": "Japan"}]',
            "Async works the same way.",
        ],
        text_chunk_size=6,
    )
    client = ChatClient.builder(model).default_system("You are a terse assistant.").build()

    print("call:  ", client.prompt("Hi!").call().content())
    print("stream:", " | ".join(client.prompt("Stream, please.").stream().content()))
    cities = client.prompt("Name two cities.").call().entity(list[City])
    print("entity:", cities)
    print("acall: ", asyncio.run(client.prompt("And async?").acall().content()))
    print("the model received:", [m.text for m in model.prompts[0].messages if hasattr(m, "text")])


if __name__ == "__main__":
    main()
