"""What a provider plugin imports to be built on the provider shell (see :mod:`providers._shell`).

A plugin writes its wire mapping (pure functions) and declares it::

    WIRE = WireMapping("acme", "/v1/chat", build_request, parse_response, error_details, StreamParser)

    class AcmeChatModel(ProviderModel[ProviderOptions]):
        wire = WIRE

        def __init__(self, model: str, *, api_key: str, base_url: str = "https://api.acme.example") -> None:
            super().__init__(defaults=ProviderOptions(model=model), base_url=base_url,
                             secret_headers={"authorization": Secret(f"Bearer {api_key}")})

or, for a vendor of its own, declares its provider too (a few attributes: the key and base URL rules,
the missing-key check, the SDK client and the repr then follow the built-in providers')::

    class AcmeProvider(Provider):
        vendor, key_env, default_base_url = "Acme", "ACME_API_KEY", "https://api.acme.example"
        vendor_hosts = frozenset({"api.acme.example"})

    class AcmeChatModel(ProviderModel[ProviderOptions]):
        wire = WIRE
        provider_class = AcmeProvider

        def __init__(self, model: str, *, provider: Provider | None = None, **provider_args: Any) -> None:
            super().__init__(defaults=ProviderOptions(model=model), provider=provider, **provider_args)

and gets httpx2 or an official SDK client as transport, the four modes, ``close``/``aclose`` and the
context managers, retries, deadlines, one error table (:func:`error_from_event` for an error inside a
stream), key redaction, ``extra_body``/``extra_headers`` and the options merge.
``chatclient.testing.conformance.ChatModelConformance`` checks all of it.
"""

from ._errors import ErrorDetails, error_from_event
from ._extras import ProviderOptions
from ._provider import Provider
from ._retry import RetryPolicy
from ._secrets import Secret
from ._shell import BuildRequest, ParseResponse, ProviderModel, StreamDecoder, WireMapping

__all__ = [
    "BuildRequest",
    "ErrorDetails",
    "ParseResponse",
    "Provider",
    "ProviderModel",
    "ProviderOptions",
    "RetryPolicy",
    "Secret",
    "StreamDecoder",
    "WireMapping",
    "error_from_event",
]
