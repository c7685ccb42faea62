"""Wire formats for browsers: a turn's typed events as the Vercel AI SDK UI message stream or as AG-UI.

The encoders are pure (events in, server-sent events out) and need nothing beyond chatclient; the
Starlette endpoints that serve a turn and take the approval back are in ``chatclient.ui.asgi`` (the
``ui`` extra). See docs/ui.md.
"""

from ._shared import approval_decision, approval_id, parse_approval_id
from .agui import AGUIEncoder, aencode_agui, encode_agui
from .vercel import (
    UI_MESSAGE_STREAM_HEADERS,
    UIMessageStreamEncoder,
    aencode_ui_message_stream,
    encode_ui_message_stream,
)

__all__ = [
    "AGUIEncoder",
    "UIMessageStreamEncoder",
    "UI_MESSAGE_STREAM_HEADERS",
    "aencode_agui",
    "aencode_ui_message_stream",
    "approval_decision",
    "approval_id",
    "encode_agui",
    "encode_ui_message_stream",
    "parse_approval_id",
]
