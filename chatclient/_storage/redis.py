"""The Redis plumbing every store shares (``pip install "chatclient[redis]"``: redis-py): the driver
imported only when a store is made, and the client the store was given or one made from its url."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConfigurationError

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["async_redis_client", "redis_client", "require_redis"]


def require_redis() -> None:
    """Import the driver, or say which extra installs it."""
    try:
        import redis  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError('The Redis stores need redis-py: pip install "chatclient[redis]"') from exc


def redis_client(url: str | None, client: redis.Redis | None, name: str) -> redis.Redis:
    """``client``, or a new one on ``url`` (the store that made it closes it)."""
    require_redis()
    import redis

    if client is not None:
        return client
    if url is None:
        raise ConfigurationError(f"{name} needs a url or a client")
    return redis.Redis.from_url(url)


def async_redis_client(url: str | None, client: redis.asyncio.Redis | None, name: str) -> redis.asyncio.Redis:
    """:func:`redis_client` on ``redis.asyncio``."""
    require_redis()
    import redis.asyncio

    if client is not None:
        return client
    if url is None:
        raise ConfigurationError(f"{name} needs a url or a client")
    return redis.asyncio.Redis.from_url(url)
