"""Short reprs and notebook rendering (markdown and HTML) for responses, paused turns, the client
and stream events: a reader sees the answer, or what a paused turn waits for, not a dump of the
state (which holds the whole conversation).

Everything a model or a user wrote is escaped in HTML (``html.escape``) and kept inside code spans
in markdown, so a tool argument ``<script>`` is shown, never run. Nothing here runs at
construction: the classes call these functions only from their repr methods.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .advisor import ChatClientResponse
    from .client import ChatClient
    from .responses import ChatResponse
    from .tools.confirmation import PendingToolCalls

_SHORT = 60

Code = Callable[[str], str]
"""Renders a value as inline code: markdown backticks or an escaped HTML ``<code>``."""


def _clip(text: str | None, limit: int = _SHORT) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def md_code(value: Any) -> str:
    """A markdown code span that a backtick inside ``value`` cannot close early."""
    text = str(value).replace("\n", " ")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def html_code(value: Any) -> str:
    return f"<code>{escape(str(value))}</code>"


# ---------------------------------------------------------------------------- ChatResponse


def chat_response_repr(response: ChatResponse) -> str:
    finish = [g.finish_reason.value if g.finish_reason else None for g in response.generations]
    usage = response.metadata.usage
    tokens = f", tokens={usage.total_tokens}" if usage is not None else ""
    return f"ChatResponse(text={_clip(response.text)!r}, finish={finish}{tokens})"


def _response_facts(response: ChatResponse, code: Code) -> list[str]:
    meta = response.metadata
    facts = [f"model {code(meta.model)}"] if meta.model else []
    finish = ", ".join(g.finish_reason.value for g in response.generations if g.finish_reason)
    if finish:
        facts.append(f"finish {code(finish)}")
    if meta.usage is not None:
        facts.append(f"{meta.usage.prompt_tokens} in / {meta.usage.completion_tokens} out tokens")
    calls = [c for g in response.generations for c in g.output.tool_calls]
    if calls:
        facts.append("calls " + ", ".join(code(c.name) for c in calls))
    return facts


def chat_response_markdown(response: ChatResponse) -> str:
    facts = _response_facts(response, md_code)
    footer = f"\n\n*{' · '.join(facts)}*" if facts else ""
    return (response.text or "*(no text)*") + footer


def chat_response_html(response: ChatResponse) -> str:
    facts = _response_facts(response, html_code)
    text = escape(response.text) if response.text else "<em>(no text)</em>"
    footer = f'<div style="opacity:0.7;font-size:smaller">{" · ".join(facts)}</div>' if facts else ""
    return f'<div class="chatclient-response"><div style="white-space:pre-wrap">{text}</div>{footer}</div>'


# ---------------------------------------------------------------------------- PendingToolCalls


def pending_repr(pending: PendingToolCalls) -> str:
    names = ", ".join(f"{c.name}({c.id})" for c in pending.calls)
    return f"PendingToolCalls(reply_id={pending.reply_id!r}, calls=[{names}], awaiting={pending.awaiting_ids})"


def _paused_header(pending: PendingToolCalls) -> str:
    return f"{len(pending.awaiting_ids)} call(s) await a decision"


def pending_markdown(pending: PendingToolCalls) -> str:
    rows = [
        f"| {_cell(c.id)} | {_cell(md_code(c.name))} | {_cell(md_code(c.arguments))} | "
        f"{'yes' if c.requires_confirmation else 'no'} |"
        for c in pending.calls
    ]
    header = f"**Paused**: {_paused_header(pending)}\n\n"
    table = "| id | tool | arguments | needs confirmation |\n|---|---|---|---|\n"
    return header + table + "\n".join(rows)


def pending_html(pending: PendingToolCalls) -> str:
    rows = "".join(
        f"<tr><td>{escape(c.id)}</td><td>{html_code(c.name)}</td><td>{html_code(c.arguments)}</td>"
        f"<td>{'yes' if c.requires_confirmation else 'no'}</td></tr>"
        for c in pending.calls
    )
    head = "<tr><th>id</th><th>tool</th><th>arguments</th><th>needs confirmation</th></tr>"
    return (
        f'<div class="chatclient-paused"><p><strong>Paused</strong>: {_paused_header(pending)}</p>'
        f"<table><thead>{head}</thead><tbody>{rows}</tbody></table></div>"
    )


# ---------------------------------------------------------------------------- ChatClientResponse


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


def client_response_html(response: ChatClientResponse) -> str:
    pending = _pending(response)
    if pending is not None:
        return pending_html(pending)
    chat = response.chat_response
    return chat_response_html(chat) if chat is not None else "<em>(no reply)</em>"


def _pending(response: ChatClientResponse) -> PendingToolCalls | None:
    from .advisor import ContextKeys

    pending: PendingToolCalls | None = response.context.get(ContextKeys.PENDING_TOOL_CALLS)
    return pending


# ---------------------------------------------------------------------------- ChatClient


def _model_label(client: ChatClient) -> tuple[str, str | None]:
    model = client.model
    options = model.default_options
    return type(model).__name__, (options.model if options is not None else None)


def _client_parts(client: ChatClient) -> tuple[list[str], list[tuple[str, bool]], int, str | None]:
    """Advisor names (the tool loop included), tools with their confirmation flag, the number of
    dynamic tool providers, and the default system text."""
    defaults = client._defaults
    advisors = [a.name for a in defaults.advisor_list]
    advisors.append(client._tool_calling_advisor.name)
    tools = [(t.name, bool(t.metadata.requires_confirmation)) for t in defaults.tool_callbacks]
    return advisors, tools, len(defaults.tool_providers), defaults.system_text


def client_repr(client: ChatClient) -> str:
    kind, name = _model_label(client)
    advisors, tools, providers, _ = _client_parts(client)
    model = f"{kind}({name!r})" if name else kind
    extra = f", tool_providers={providers}" if providers else ""
    names = ", ".join(t for t, _ in tools)
    return f"ChatClient(model={model}, advisors=[{', '.join(advisors)}], tools=[{names}]{extra})"


def _client_lines(client: ChatClient, code: Code) -> tuple[str, list[str]]:
    kind, name = _model_label(client)
    advisors, tools, providers, system = _client_parts(client)
    title = f"ChatClient on {code(kind)}" + (f" ({code(name)})" if name else "")
    gated = " (needs confirmation)"
    lines = [
        "advisors: " + ", ".join(code(a) for a in advisors),
        "tools: " + (", ".join(code(t) + (gated if g else "") for t, g in tools) or "none"),
    ]
    if providers:
        lines.append(f"tool providers: {providers}")
    if system:
        lines.append(f"system: {code(_clip(system))}")
    return title, lines


def client_markdown(client: ChatClient) -> str:
    title, lines = _client_lines(client, md_code)
    return f"**{title}**\n\n" + "\n".join(f"- {line}" for line in lines)


def client_html(client: ChatClient) -> str:
    title, lines = _client_lines(client, html_code)
    items = "".join(f"<li>{line}</li>" for line in lines)
    return f'<div class="chatclient-client"><strong>{title}</strong><ul>{items}</ul></div>'


# ---------------------------------------------------------------------------- stream events


def event_repr(event: Any) -> str:
    from . import events as ev

    kind = type(event).__name__
    if isinstance(event, (ev.TextDelta, ev.ReasoningDelta)):
        index = f", index={event.index}" if event.index else ""
        return f"{kind}({_clip(event.text)!r}{index})"
    if isinstance(event, ev.ToolCallStarted):
        return f"{kind}(id={event.id!r}, name={event.name!r})"
    if isinstance(event, ev.ToolCallDelta):
        return f"{kind}(id={event.id!r}, arguments={_clip(event.arguments)!r})"
    if isinstance(event, ev.ToolCallReady):
        return f"{kind}({event.name}({_clip(event.arguments)}), id={event.id!r}, round={event.round})"
    if isinstance(event, ev.ToolResultReady):
        error = ", error" if event.is_error else ""
        return f"{kind}({event.name} -> {_clip(event.result)!r}, id={event.id!r}, round={event.round}{error})"
    if isinstance(event, ev.RoundFinished):
        finish = event.finish_reason.value if event.finish_reason else None
        return f"{kind}(round={event.round}, finish={finish!r}, tokens={event.usage.total_tokens})"
    if isinstance(event, ev.TurnPaused):
        return f"{kind}(awaiting={event.pending.awaiting_ids})"
    if isinstance(event, ev.TurnFinished):
        return f"{kind}({client_response_repr(event.response)})"
    return object.__repr__(event)


def _event_line(event: Any, code: Code) -> tuple[str, str]:
    """The event's label and a one-line summary, its values rendered by ``code``."""
    from . import events as ev

    if isinstance(event, ev.TextDelta):
        return "text", code(_clip(event.text))
    if isinstance(event, ev.ReasoningDelta):
        return "reasoning", code(_clip(event.text))
    if isinstance(event, ev.ToolCallStarted):
        return "tool call started", f"{code(event.name)} ({code(event.id)})"
    if isinstance(event, ev.ToolCallDelta):
        return "arguments", f"{code(_clip(event.arguments))} ({code(event.id)})"
    if isinstance(event, ev.ToolCallReady):
        return "tool call", f"{code(event.name)} {code(_clip(event.arguments))} ({code(event.id)}, round {event.round})"
    if isinstance(event, ev.ToolResultReady):
        label = "tool error" if event.is_error else "tool result"
        return label, f"{code(event.name)} → {code(_clip(event.result))} ({code(event.id)}, round {event.round})"
    if isinstance(event, ev.RoundFinished):
        finish = event.finish_reason.value if event.finish_reason else "none"
        return "round finished", f"round {event.round}, finish {code(finish)}, {event.usage.total_tokens} tokens"
    return type(event).__name__, code(event_repr(event))


def event_markdown(event: Any) -> str:
    from . import events as ev

    if isinstance(event, ev.TurnPaused):
        return pending_markdown(event.pending)
    if isinstance(event, ev.TurnFinished):
        return client_response_markdown(event.response)
    label, summary = _event_line(event, md_code)
    return f"**{label}** {summary}"


def event_html(event: Any) -> str:
    from . import events as ev

    if isinstance(event, ev.TurnPaused):
        return pending_html(event.pending)
    if isinstance(event, ev.TurnFinished):
        return client_response_html(event.response)
    label, summary = _event_line(event, html_code)
    return f'<div class="chatclient-event"><strong>{label}</strong> {summary}</div>'
