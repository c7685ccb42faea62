"""``AnthropicProvider``: Anthropic's key, base URL and SDK client."""

from __future__ import annotations

from providers._provider import Provider

__all__ = ["DEFAULT_BASE_URL", "AnthropicProvider"]

DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicProvider(Provider):
    """Anthropic: the key from ``api_key`` or ``ANTHROPIC_API_KEY`` (sent as ``x-api-key``), the base
    URL from ``base_url``, ``ANTHROPIC_BASE_URL`` or :data:`DEFAULT_BASE_URL`; ``client`` takes an
    ``anthropic.Anthropic``/``AsyncAnthropic``."""

    vendor = "Anthropic"
    key_env = "ANTHROPIC_API_KEY"
    base_url_env = "ANTHROPIC_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    vendor_hosts = frozenset({"api.anthropic.com"})
    key_header = "x-api-key"
    key_prefix = ""
