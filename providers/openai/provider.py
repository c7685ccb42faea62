"""``OpenAIProvider``: OpenAI's key, base URL and SDK client, for Chat Completions and Responses alike."""

from __future__ import annotations

from providers._provider import Provider

__all__ = ["DEFAULT_BASE_URL", "OpenAIProvider"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIProvider(Provider):
    """OpenAI, or any server that speaks its API (``base_url=``).

    The key comes from ``api_key`` or ``OPENAI_API_KEY``, the base URL from ``base_url``,
    ``OPENAI_BASE_URL`` or :data:`DEFAULT_BASE_URL`. ``OPENAI_API_KEY`` goes only to the server it
    belongs to: OpenAI, or the ``OPENAI_BASE_URL`` set beside it; an explicit ``base_url`` to another
    server gets no key unless ``api_key`` is given, so a local server never receives your OpenAI key.
    ``client``/``async_client`` take an ``openai.OpenAI``/``AsyncOpenAI`` (or ``AzureOpenAI``).
    """

    vendor = "OpenAI"
    key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    vendor_hosts = frozenset({"api.openai.com"})
    env_key_own_host_only = True
