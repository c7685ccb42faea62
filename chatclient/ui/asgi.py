"""Serving turns to a browser with Starlette: a turn streams out, a person's approval comes back.

Needs the ``ui`` extra (``pip install 'chatclient[ui]'``): Starlette is imported by this module only.

:class:`ChatEndpoints` serves one ``ChatClient`` in both wire formats. A request either starts a turn
(the last message is the user's) or answers a paused one (the approvals it carries); the answer
resumes the stored state with ``resume_from``, so the store hands each state out once and checks every
decision before anything runs. The browser never sends the conversation the server trusts: only
the new text, or approval ids that name a stored state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..client import ChatClient, ChatClientRequestSpec
from ..pending.state import AsyncPendingToolCallStore, PendingToolCallStore
from ..tools.confirmation import PendingToolCalls, ToolCallDecision, ToolCallDecisions
from ._shared import (
    approval_decision,
    approval_id,
    awaiting,
    call_input,
    error_text,
    off_the_loop,
    parse_approval_id,
    saved,
)
from .agui import aencode_agui
from .vercel import UI_MESSAGE_STREAM_HEADERS, aencode_ui_message_stream

__all__ = ["BadUIRequest", "ChatEndpoints"]

Store = Union[PendingToolCallStore, AsyncPendingToolCallStore]  # noqa: UP007


class BadUIRequest(ValueError):
    """A request body the endpoints cannot act on; answered with HTTP 400 and this message."""


class ChatEndpoints:
    """A ``ChatClient``'s turns for browsers: the Vercel AI SDK UI message stream and AG-UI.

    ``store`` keeps paused turns (sync or async ``PendingToolCallStore``). ``approver(request)`` names
    the authenticated person who decides (recorded with each decision and checked by the client's
    ``ToolCallAuthorizer``). ``prepare(spec, chat_id)`` adjusts each request, e.g.
    ``spec.conversation(chat_id)`` for memory. ``on_pause(chat_id, state_id)`` learns where a paused
    turn was saved, so the application can show it again after a reload (:meth:`approval_requests`).
    """

    def __init__(
        self,
        client: ChatClient,
        store: Store,
        *,
        approver: Callable[[Request], object | None] | None = None,
        prepare: Callable[[ChatClientRequestSpec, str], ChatClientRequestSpec] | None = None,
        on_pause: Callable[[str, str], None] | None = None,
        on_error: Callable[[BaseException], str] = error_text,
    ) -> None:
        self.client = client
        self.store = store
        self._approver = approver
        self._prepare = prepare
        self._on_pause = on_pause
        self._on_error = on_error

    def routes(self, path: str = "/api/chat") -> list[Route]:
        """``POST path`` (UI message stream) and ``POST path/agui`` (AG-UI)."""
        return [
            Route(path, self.ui_message_stream, methods=["POST"]),
            Route(f"{path}/agui", self.agui, methods=["POST"]),
        ]

    async def ui_message_stream(self, request: Request) -> Response:
        """A turn in the UI message stream; the body is what the SDK's ``DefaultChatTransport`` posts
        (``{id, messages}``): a last user message starts a turn, a last assistant message whose tool
        parts are ``approval-responded`` resumes one."""
        try:
            body = await _json_object(request)
            chat_id = _text(body, "id")
            last = _last_message(body)
            message_id = None
            if last.get("role") == "user":
                spec = self.client.prompt(_user_text(last.get("parts")))
            elif last.get("role") == "assistant":
                answers = [_vercel_answer(part) for part in _list(last.get("parts"), "parts") if _is_answered(part)]
                spec = self._resume(request, answers)
                message_id = last.get("id") if isinstance(last.get("id"), str) else None
            else:
                raise BadUIRequest("The last message must be the user's or an assistant's with approvals")
            spec = self._prepared(spec, chat_id)
        except BadUIRequest as error:
            return JSONResponse({"error": str(error)}, status_code=400)
        events = spec.astream().events()
        stream = aencode_ui_message_stream(
            events, message_id=message_id, save=self._saver(chat_id), on_error=self._on_error
        )
        return StreamingResponse(stream, headers=dict(UI_MESSAGE_STREAM_HEADERS))

    async def agui(self, request: Request) -> Response:
        """A run in AG-UI; the body is a ``RunAgentInput``: ``resume`` entries answer the interrupts of
        a paused run, else the last message is the user's."""
        try:
            body = await _json_object(request)
            thread_id = _text(body, "threadId")
            run_id = body.get("runId") if isinstance(body.get("runId"), str) else None
            resume = body.get("resume")
            if resume:
                spec = self._resume(request, [_agui_answer(entry) for entry in _list(resume, "resume")])
            else:
                last = _last_message(body)
                if last.get("role") != "user":
                    raise BadUIRequest("Without resume entries, the last message must be the user's")
                spec = self.client.prompt(_user_text(last.get("content")))
            spec = self._prepared(spec, thread_id)
        except BadUIRequest as error:
            return JSONResponse({"error": str(error)}, status_code=400)
        stream = aencode_agui(
            spec.astream().events(), thread_id=thread_id, run_id=run_id, save=self._saver(thread_id),
            on_error=self._on_error,
        )  # fmt: skip
        return StreamingResponse(stream, media_type="text/event-stream", headers={"cache-control": "no-cache"})

    async def approval_requests(self, state_id: str) -> list[dict[str, Any]]:
        """The calls of a stored paused turn that wait for a person, as a page shows them again after a
        reload: ``approvalId``, ``toolCallId``, ``toolName``, ``input``. Raises the store's
        ``PendingStateNotFoundError`` when the state is gone (decided, or expired)."""
        pending: PendingToolCalls = await _peek(self.store, state_id)
        return [
            {"approvalId": approval_id(state_id, call.id), "toolCallId": call.id, "toolName": call.name,
             "input": call_input(call.arguments)}
            for call in awaiting(pending.calls)
        ]  # fmt: skip

    def _resume(self, request: Request, answers: Sequence[tuple[str, bool, str | None]]) -> ChatClientRequestSpec:
        """The request that resumes the one stored state all ``answers`` name."""
        if not answers:
            raise BadUIRequest("No approval to act on")
        decisions: list[ToolCallDecision] = []
        state_ids: set[str] = set()
        for ref, approved, reason in answers:
            try:
                state_id, call_id = parse_approval_id(ref)
            except ValueError as error:
                raise BadUIRequest(str(error)) from None
            state_ids.add(state_id)
            decisions.append(approval_decision(call_id, approved, reason))
        if len(state_ids) != 1:
            raise BadUIRequest("The approvals name more than one paused turn; answer one turn per request")
        approver = self._approver(request) if self._approver is not None else None
        try:
            batch = ToolCallDecisions.of(decisions, approver=approver)
            return self.client.prompt().resume_from(self.store, state_ids.pop(), batch)
        except ValueError as error:  # a duplicated decision, a malformed state id
            raise BadUIRequest(str(error)) from None

    def _prepared(self, spec: ChatClientRequestSpec, chat_id: str) -> ChatClientRequestSpec:
        return self._prepare(spec, chat_id) if self._prepare is not None else spec

    def _saver(self, chat_id: str) -> Callable[[PendingToolCalls], Any]:
        async def save(pending: PendingToolCalls) -> str:
            state_id = await saved(self.store.save, pending)
            if self._on_pause is not None:
                self._on_pause(chat_id, state_id)
            return state_id

        return save


async def _peek(store: Store, state_id: str) -> PendingToolCalls:
    state: PendingToolCalls = await off_the_loop(store.peek, state_id)
    return state


async def _json_object(request: Request) -> Mapping[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise BadUIRequest("The body is not JSON") from None
    if not isinstance(body, dict):
        raise BadUIRequest("The body must be a JSON object")
    return body


def _text(body: Mapping[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise BadUIRequest(f"{key!r} must be a non-empty string")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise BadUIRequest(f"{what!r} must be a list")
    return value


def _last_message(body: Mapping[str, Any]) -> Mapping[str, Any]:
    messages = _list(body.get("messages"), "messages")
    if not messages or not isinstance(messages[-1], dict):
        raise BadUIRequest("'messages' must end with a message object")
    return messages[-1]


def _user_text(content: object) -> str:
    """The text of a user message: a string (AG-UI) or a list of parts whose text parts count."""
    if isinstance(content, str):
        text = content
    else:
        texts = [p.get("text") for p in _list(content, "content") if _typed(p, "text")]
        text = "".join(t for t in texts if isinstance(t, str))
    if not text.strip():
        raise BadUIRequest("The user's message has no text")
    return text


def _typed(part: object, kind: str) -> bool:
    return isinstance(part, dict) and part.get("type") == kind


def _is_answered(part: object) -> bool:
    return isinstance(part, dict) and part.get("state") == "approval-responded"


def _vercel_answer(part: Mapping[str, Any]) -> tuple[str, bool, str | None]:
    """``(approval id, approved, reason)`` from a tool part the SDK's ``addToolApprovalResponse`` set."""
    approval = part.get("approval")
    if not isinstance(approval, dict) or not isinstance(approval.get("id"), str):
        raise BadUIRequest("An approval-responded tool part needs approval.id")
    if not isinstance(approval.get("approved"), bool):
        raise BadUIRequest("approval.approved must be true or false")
    return approval["id"], approval["approved"], _reason(approval.get("reason"))


def _agui_answer(entry: object) -> tuple[str, bool, str | None]:
    """``(interrupt id, approved, reason)`` from a resume entry; a cancelled one is a denial."""
    if not isinstance(entry, dict) or not isinstance(entry.get("interruptId"), str):
        raise BadUIRequest("A resume entry needs an interruptId")
    if entry.get("status") == "cancelled":
        return entry["interruptId"], False, "The person cancelled the request."
    payload = entry.get("payload")
    if (
        entry.get("status") != "resolved"
        or not isinstance(payload, dict)
        or not isinstance(payload.get("approved"), bool)
    ):
        raise BadUIRequest('A resume entry is "cancelled", or "resolved" with a payload {"approved": bool, "reason"?}')
    return entry["interruptId"], payload["approved"], _reason(payload.get("reason"))


def _reason(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise BadUIRequest("A reason must be a string")
