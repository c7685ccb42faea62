"""Short reprs and notebook markdown for responses and paused turns: a reader sees the answer, or
what a paused turn waits for, not a dump of the state (which holds the whole conversation)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .advisor import ChatClientResponse
    from .responses import ChatResponse
    from .tools.confirmation import PendingToolCalls

_SHORT = 60


def _clip(text: str | None, limit: int = _SHORT) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def chat_response_repr(response: ChatResponse) -> str:
    finish = [g.finish_reason.value if g.finish_reason else None for g in response.generations]
    usage = response.metadata.usage
    tokens = f", tokens={usage.total_tokens}" if usage is not None else ""
    return f"ChatResponse(text={_clip(response.text)!r}, finish={finish}{tokens})"


def chat_response_markdown(response: ChatResponse) -> str:
    meta = response.metadata
    facts = [f"model `{meta.model}`"] if meta.model else []
    finish = ", ".join(g.finish_reason.value for g in response.generations if g.finish_reason)
    if finish:
        facts.append(f"finish `{finish}`")
    if meta.usage is not None:
        facts.append(f"{meta.usage.prompt_tokens} in / {meta.usage.completion_tokens} out tokens")
    calls = [c for g in response.generations for c in g.output.tool_calls]
    if calls:
        facts.append("calls " + ", ".join(f"`{c.name}`" for c in calls))
    footer = f"\n\n*{' · '.join(facts)}*" if facts else ""
    return (response.text or "*(no text)*") + footer


def pending_repr(pending: PendingToolCalls) -> str:
    names = ", ".join(f"{c.name}({c.id})" for c in pending.calls)
    return f"PendingToolCalls(reply_id={pending.reply_id!r}, calls=[{names}], awaiting={pending.awaiting_ids})"


def pending_markdown(pending: PendingToolCalls) -> str:
    rows = [
        f"| {_cell(c.id)} | `{_cell(c.name)}` | `{_cell(c.arguments)}` | {'yes' if c.requires_confirmation else 'no'} |"
        for c in pending.calls
    ]
    header = f"**Paused**: {len(pending.awaiting_ids)} call(s) await a decision\n\n"
    table = "| id | tool | arguments | needs confirmation |\n|---|---|---|---|\n"
    return header + table + "\n".join(rows)


def client_response_repr(response: ChatClientResponse) -> str:
    pending = _pending(response)
    if pending is not None:
        return f"ChatClientResponse(paused, awaiting={pending.awaiting_ids})"
    chat = response.chat_response
    inner = chat_response_repr(chat) if chat is not None else "None"
    return f"ChatClientResponse({inner}, context_keys={len(response.context)})"


def client_response_markdown(response: ChatClientResponse) -> str:
    pending = _pending(response)
    if pending is not None:
        return pending_markdown(pending)
    chat = response.chat_response
    return chat_response_markdown(chat) if chat is not None else "*(no reply)*"


def _pending(response: ChatClientResponse) -> PendingToolCalls | None:
    from .advisor import ContextKeys

    pending: PendingToolCalls | None = response.context.get(ContextKeys.PENDING_TOOL_CALLS)
    return pending
