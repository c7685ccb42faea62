"""Writing advisors: one before/after advisor for all four modes, one inside the tool loop.

``Redactor`` sits outside the loop (it sees one request per call) and hides a secret from the
model. ``RoundLogger`` sits inside the loop (order above ``AdvisorOrder.TOOL_CALLING``) and sees
every model round. Both work unchanged for call, stream, acall and astream. Run it:
``python examples/custom_advisor.py``.
"""

from __future__ import annotations

import asyncio

from chatclient import (
    AdvisorOrder,
    AssistantMessage,
    BaseAdvisor,
    ChatClient,
    ChatClientRequest,
    ChatClientResponse,
    UserMessage,
    tool,
)
from chatclient.client import ChatClientRequestSpec
from chatclient.testing import ScriptedChatModel, tool_call


class Redactor(BaseAdvisor):
    """Replaces a secret in user messages before they leave the process."""

    order = AdvisorOrder.DEFAULT

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def before(self, request: ChatClientRequest) -> ChatClientRequest:
        messages = [
            UserMessage(m.text.replace(self.secret, "[redacted]")) if isinstance(m, UserMessage) else m
            for m in request.prompt.messages
        ]
        return request.with_prompt(request.prompt.with_messages(messages))


class RoundLogger(BaseAdvisor):
    """Logs every model round of the tool loop."""

    order = AdvisorOrder.TOOL_CALLING + 100

    def __init__(self) -> None:
        self.lines: list[str] = []

    def before(self, request: ChatClientRequest) -> ChatClientRequest:
        self.lines.append(f"round with {len(request.prompt.messages)} messages")
        return request

    def after(self, response: ChatClientResponse) -> ChatClientResponse:
        chat = response.chat_response
        calls = [c.name for c in chat.tool_calls] if chat else []
        self.lines.append(f"  -> tool calls {calls}" if calls else f"  -> answer {chat.text if chat else None!r}")
        return response


@tool
def account_balance(account: str) -> str:
    """Balance of an account."""
    return f"{account}: 1,024.00 EUR"


def script() -> list[AssistantMessage | str]:
    return [
        AssistantMessage(None, tool_calls=[tool_call("account_balance", {"account": "main"})]),
        "You have 1,024 EUR.",
    ]


def answer(mode: str, spec: ChatClientRequestSpec) -> str | None:
    """The same request in each of the four modes."""
    if mode == "call":
        return spec.call().content()
    if mode == "stream":
        return "".join(spec.stream().content())
    if mode == "acall":
        return asyncio.run(spec.acall().content())

    async def collect() -> str:
        return "".join([delta async for delta in spec.astream().content()])

    return asyncio.run(collect())


def main() -> None:
    for mode in ("call", "stream", "acall", "astream"):
        model = ScriptedChatModel(script())
        logger = RoundLogger()
        client = (
            ChatClient.builder(model)
            .default_tools(account_balance)
            .default_advisors(Redactor("IBAN DE89 3704"), logger)
            .build()
        )
        reply = answer(mode, client.prompt("What is on IBAN DE89 3704?"))
        sent = model.prompts[0].messages[-1]
        print(f"[{mode}] answer={reply!r} model saw={sent.text if isinstance(sent, UserMessage) else sent!r}")
        for line in logger.lines:
            print("   ", line)


if __name__ == "__main__":
    main()
