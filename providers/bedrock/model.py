"""``BedrockChatModel``: AWS Bedrock Runtime's ``Converse`` and ``ConverseStream``."""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import quote

import httpx2

from chatclient.options import ChatOptions

from .._provider import Provider
from .._shell import ProviderModel, StreamDecoder, WireMapping
from ._errors import error_details
from ._mapping import PROVIDER, parse_response
from ._request import build_request
from .options import BedrockChatOptions
from .provider import BedrockProvider

__all__ = ["BedrockChatModel"]


def _stream_parser(headers: httpx2.Headers) -> StreamDecoder:
    from ._stream_parser import EventStreamParser  # with the first stream: a plain call loads no stream events

    return EventStreamParser(headers.get("x-amzn-requestid"))


WIRE = WireMapping(PROVIDER, "/model/{model}/converse", build_request, parse_response, error_details, _stream_parser,
                   framing="bytes", accept="application/json")  # fmt: skip


class BedrockChatModel(ProviderModel[BedrockChatOptions]):
    """Chat with a model on AWS Bedrock through the Converse API (``model``: a model id or an
    inference profile, ``"us.anthropic.claude-sonnet-4-20250514-v1:0"``, or its ARN).

    Who it talks to is a :class:`~providers.bedrock.provider.BedrockProvider`: pass ``provider=``, or
    its keywords here (``region=``, ``aws_access_key_id=``..., ``api_key=`` for a Bedrock API key).
    Reasoning blocks come back in the message metadata and go back, signed, on the next round of a
    tool loop; images and documents are sent as bytes; ``output_schema`` is Converse's native
    structured output (``outputConfig``, on the models that support it).
    """

    wire = WIRE
    provider_class: ClassVar[type[Provider]] = BedrockProvider

    def __init__(
        self,
        model: str | None = None,
        *,
        provider: Provider | None = None,
        options: ChatOptions | None = None,
        **provider_args: Any,
    ) -> None:
        own = BedrockChatOptions(model=model) if model is not None else BedrockChatOptions()
        defaults = own.merged_over(options)
        assert isinstance(defaults, BedrockChatOptions)
        super().__init__(defaults=defaults, provider=provider, **provider_args)

    def request_path(self, options: ChatOptions, *, stream: bool) -> str:
        """``/model/<id>/converse`` or ``/converse-stream``: the id URL-encoded (``:`` and ``/`` of
        an ARN included), as the API wants it."""
        model = quote(options.model or "", safe="")
        return f"/model/{model}/converse-stream" if stream else f"/model/{model}/converse"
