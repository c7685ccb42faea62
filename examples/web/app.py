"""A chat page with a real approval card, offline: ``python examples/web/app.py`` then open the URL.

"Book the 9:40 to Oslo" makes the (scripted) travel agent call ``book_flight``, which needs a person's
confirmation: the turn pauses, its state goes to a pending store (a SQLite file with ``--db``, else
memory), and the page shows the call with approve and deny buttons and a reason box. The answer goes
back to the server, which resumes the stored turn; the agent then answers from what it received, so a
denial's reason shows up in its reply. Reload the page while a call waits: the card comes back from
the store. ``GET /api/stats`` counts the bookings made, so you can see nothing ran before the click.

Needs the ``ui`` extra and uvicorn (``pip install 'chatclient[ui]' uvicorn``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from chatclient import AssistantMessage, ChatClient, ToolResponseMessage, UserMessage, tool
from chatclient.errors import PendingStateNotFoundError
from chatclient.pending.state import InMemoryPendingToolCallStore, SqlitePendingToolCallStore
from chatclient.prompt import Prompt
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.ui.asgi import ChatEndpoints

PAGE = Path(__file__).with_name("index.html")


class Bookings:
    """The travel agent's one tool, gated, with a counter of the bookings it really made."""

    def __init__(self) -> None:
        self.made = 0

    @tool(description="Book a seat on a flight", requires_confirmation=True)
    def book_flight(self, departure: str, destination: str) -> str:
        self.made += 1
        return f"Booked the {departure} to {destination}, seat 14C."


def travel_agent(prompt: Prompt) -> AssistantMessage | str:
    """Plays the model: books when asked, and answers a tool result by echoing what it received."""
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        result = last.responses[0].response_data
        if result.startswith("Booked"):
            return f"Done. {result}"
        return f"I have not booked it. I received: “{result}” Tell me what to do instead."
    text = last.text if isinstance(last, UserMessage) else ""
    wanted = re.search(r"book .*?(\d{1,2}:\d{2}).*? to (\w+)", text, re.IGNORECASE)
    if wanted is None:
        return "I can book flights: try “Book the 9:40 to Oslo”."
    departure, destination = wanted.groups()
    return AssistantMessage(
        f"I can book the {departure} to {destination} for you. ",
        tool_calls=[tool_call("book_flight", {"departure": departure, "destination": destination})],
    )


def create_app(db: Path | None = None) -> Starlette:
    """The page, the chat endpoint, and where a reloaded page finds its waiting approvals."""
    bookings = Bookings()
    store = SqlitePendingToolCallStore(db) if db is not None else InMemoryPendingToolCallStore(ttl=3600)
    client = ChatClient.builder(ScriptedChatModel(travel_agent, text_chunk_size=6)).default_tools(bookings).build()
    paused: dict[str, str] = {}  # chat id -> the state its turn waits in (a real app keeps this per session)
    chat = ChatEndpoints(client, store, on_pause=paused.__setitem__)

    async def page(request: Request) -> Response:
        return FileResponse(PAGE, media_type="text/html")

    async def approvals(request: Request) -> Response:
        state_id = paused.get(request.path_params["chat_id"])
        if state_id is None:
            return JSONResponse([])
        try:
            return JSONResponse(await chat.approval_requests(state_id))
        except PendingStateNotFoundError:  # decided meanwhile, or expired
            return JSONResponse([])

    async def stats(request: Request) -> Response:
        return JSONResponse({"bookings": bookings.made})

    app = Starlette(
        routes=[
            Route("/", page),
            *chat.routes("/api/chat"),
            Route("/api/chat/{chat_id}/approvals", approvals),
            Route("/api/stats", stats),
        ]
    )
    app.state.bookings = bookings
    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--db", type=Path, help="a SQLite file for the pending states (default: memory)")
    args = parser.parse_args()
    uvicorn.run(create_app(args.db), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
