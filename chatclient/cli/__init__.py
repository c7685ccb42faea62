"""The command line: ``chatclient chat openai:gpt-4o-mini``.

Only ``python -m chatclient`` and the ``chatclient`` console script import this package;
``import chatclient`` never loads it. A user's mistake (a bad model string, a missing key, a
``--tools`` that does not load) is one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .errors import UsageError

__all__ = ["main"]

USAGE_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chatclient", description="Chat with a model from the terminal.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    chat = commands.add_parser(
        "chat",
        help="chat with a model: streams replies, shows tool calls, asks before gated ones",
        description="Chat with a model. Type a message and Enter; /exit or Ctrl-D quits.",
    )
    chat.add_argument("model", help="provider:model, e.g. openai:gpt-4o-mini or ollama:qwen3:0.6b")
    chat.add_argument("--system", help="the system text of every turn")
    chat.add_argument("--base-url", help="the provider's base URL (an OpenAI-compatible server, a proxy)")
    chat.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE:OBJECT",
        help="tools to offer: a @tool function, a list of tools, or an object (or class) with @tool methods; "
        "repeatable",
    )
    chat.add_argument(
        "-o",
        "--option",
        dest="options",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a model option, e.g. -o temperature=0.2 -o tool_choice=required; the value is read as JSON "
        "where it parses, else as text; repeatable",
    )
    chat.add_argument("--memory-file", metavar="PATH", help="keep the conversation in this SQLite file")
    chat.add_argument(
        "--conversation", default="terminal", help="the conversation id in the memory (default: %(default)s)"
    )
    chat.add_argument(
        "--no-reasoning", dest="reasoning", action="store_false", help="do not show the model's reasoning (thinking)"
    )
    chat.add_argument(
        "--approver",
        default="terminal",
        metavar="NAME",
        help="who allows or denies gated calls, recorded with each decision (default: %(default)s)",
    )
    chat.add_argument(
        "--approver-role",
        action="append",
        default=[],
        metavar="ROLE",
        help="a role the approver holds, for tools that need one (requires_confirmation='ROLE'); repeatable",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .chat import ChatSession, build_client, parse_options

    try:
        client = build_client(
            args.model,
            system=args.system,
            base_url=args.base_url,
            tools=args.tools,
            memory_file=args.memory_file,
            options=parse_options(args.options),
        )
    except UsageError as exc:
        sys.stderr.write(f"chatclient: error: {exc}\n")
        return USAGE_ERROR
    from chatclient.tools import Approver

    approver = Approver(args.approver, roles=args.approver_role)
    session = ChatSession(
        client, conversation=args.conversation, label=args.model, reasoning=args.reasoning, approver=approver
    )
    return session.run()
