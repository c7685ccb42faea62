"""``SimpleLoggerAdvisor``: the request and the response at DEBUG, as Spring AI's advisor of that name."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from chatclient.advisor import AdvisorOrder, BaseAdvisor, ChatClientRequest, ChatClientResponse, ContextKeys

__all__ = ["SimpleLoggerAdvisor"]

Redact = Callable[[str], str]
"""Turns the text about to be logged into the text that is logged (hide keys, emails, names...)."""

_log = logging.getLogger("chatclient.advisors")


def _keep(text: str) -> str:
    return text


class SimpleLoggerAdvisor(BaseAdvisor):
    """Logs each request's messages and each final response on ``chatclient.advisors`` at DEBUG.

    Nothing is formatted unless DEBUG is enabled for that logger, so leaving it registered costs a
    level check per call. ``redact`` sees every logged line before it is written. Its default order
    (``AdvisorOrder.DEFAULT``) is above ``AdvisorOrder.TOOL_CALLING``, so it sits inside the tool
    loop and logs every round; give an ``order`` below ``TOOL_CALLING`` to log one request and one
    answer per turn.
    """

    def __init__(
        self, *, redact: Redact = _keep, order: int = AdvisorOrder.DEFAULT, logger: logging.Logger = _log
    ) -> None:
        self.redact = redact
        self.order = order
        self._logger = logger

    def before(self, request: ChatClientRequest) -> ChatClientRequest:
        if self._logger.isEnabledFor(logging.DEBUG):
            lines = [f"{type(m).__name__}: {_message_text(m)}" for m in request.prompt.messages]
            self._logger.debug("request: %s", self.redact("\n".join(lines)))
        return request

    def after(self, response: ChatClientResponse) -> ChatClientResponse:
        if self._logger.isEnabledFor(logging.DEBUG):
            chat = response.chat_response
            finish = [g.finish_reason for g in chat.generations] if chat is not None else []
            text = response.text
            if response.is_paused:
                text = f"(paused, awaiting {response.context[ContextKeys.PENDING_TOOL_CALLS].awaiting_ids})"
            self._logger.debug(
                "response: %s (finish %s)", self.redact(text or ""), ", ".join(str(f and f.value) for f in finish)
            )
        return response


def _message_text(message: Any) -> str:
    text = getattr(message, "text", None)
    calls = getattr(message, "tool_calls", None) or ()
    called = "".join(f" [call {c.name}({c.arguments})]" for c in calls)
    responses = getattr(message, "responses", None) or ()
    answered = "".join(f" [result {r.name}: {r.response_data}]" for r in responses)
    return f"{text or ''}{called}{answered}"
