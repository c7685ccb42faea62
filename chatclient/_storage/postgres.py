"""The PostgreSQL plumbing every store shares (``pip install "chatclient[postgres]"``: psycopg 3 and
its pool): the pool's settings, opening it with the store's tables created under a lock, running
flows on a connection, and an unreachable server reported without its password."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigurationError
from .sql import Flow, Rows, Statement, arun_flow, run_flow

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from psycopg import AsyncConnection, Connection
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = [
    "CONNECT_TIMEOUT",
    "AsyncPool",
    "arun_on",
    "is_driver_error",
    "locked_schema",
    "open_pool",
    "pool_kwargs",
    "require_psycopg",
    "run_on",
    "schema_lock",
    "server_address",
    "unreachable",
]

T = TypeVar("T")

Failure = Callable[[str], Exception]
"""Makes the store's own error from the message saying why the server could not be reached."""


def require_psycopg() -> None:
    """Import the driver, or say which extra installs it."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(
            'The PostgreSQL stores need psycopg 3 and its pool: pip install "chatclient[postgres]"'
        ) from exc


CONNECT_TIMEOUT = 5.0
"""Seconds to connect, and to wait for a pooled connection, before the store gives up (the pool's
own default of 30 s would hold a turn that long when the server is down)."""


def pool_kwargs(
    prepare_threshold: int | None, connect_timeout: float = CONNECT_TIMEOUT, *, asynchronous: bool = False
) -> dict[str, Any]:
    # ``prepare_threshold=None`` disables server-side prepared statements (needed behind pgbouncer).
    # Autocommit: a one-statement read or take is one round trip; writes open their transaction.
    # ``check``: a connection the server dropped (a restart) is replaced before it is handed out.
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

    if connect_timeout <= 0:
        raise ConfigurationError(f"connect_timeout must be a positive number of seconds, got {connect_timeout}")
    kwargs = {
        "prepare_threshold": prepare_threshold,
        "autocommit": True,
        "connect_timeout": max(1, round(connect_timeout)),
    }
    check = AsyncConnectionPool.check_connection if asynchronous else ConnectionPool.check_connection
    return {"kwargs": kwargs, "min_size": 1, "max_size": 8, "open": True, "timeout": connect_timeout, "check": check}


def server_address(url: str | None, pool: Any = None) -> str:
    """``user@host:port/dbname`` of ``url`` (or of the pool's conninfo): never the password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(url if url is not None else getattr(pool, "conninfo", ""))
    except Exception:  # not parseable: the driver reports that itself when it connects
        return "the configured server"
    user, dbname = info.get("user"), info.get("dbname")
    address = f"{info.get('host') or 'localhost'}:{info.get('port') or 5432}"
    return f"{f'{user}@' if user else ''}{address}{f'/{dbname}' if dbname else ''}"


def unreachable(name: str, url: str | None, pool: Any, connect_timeout: float, exc: BaseException) -> str:
    """Why ``name`` could not start: the server, without the password, and the timeout waited."""
    return (
        f"{name} could not reach PostgreSQL at {server_address(url, pool)} within "
        f"connect_timeout={connect_timeout:g} s ({type(exc).__name__}: {exc}); is the server running "
        "and the address right? A slow network may need a larger connect_timeout"
    )


def is_driver_error(exc: BaseException) -> bool:
    """Raised by psycopg or its pool (a timeout, a refused connection), not by chatclient."""
    return any(cls.__module__.split(".")[0] in ("psycopg", "psycopg_pool") for cls in type(exc).__mro__)


def schema_lock(table: str) -> Statement:
    """Concurrent ``CREATE … IF NOT EXISTS`` can collide in PostgreSQL's catalog: the first statement
    of a schema transaction takes an advisory lock keyed by the store's main table."""
    return ("SELECT pg_advisory_xact_lock(hashtext(%s))", (table,))


def locked_schema(table: str, statements: Iterable[str]) -> Flow[None]:
    """``statements`` (DDL without parameters) after :func:`schema_lock`; run it in a transaction."""
    yield schema_lock(table)
    for statement in statements:
        yield (statement, ())


def run_on(conn: Connection[Any], flow: Flow[T], *, transaction: bool = True) -> T:
    def execute(statement: Statement) -> Rows:
        cur = conn.execute(*statement)
        return list(cur.fetchall()) if cur.description is not None else []

    if not transaction:  # one statement: atomic by itself
        return run_flow(flow, execute)
    with conn.transaction():
        return run_flow(flow, execute)


async def arun_on(conn: AsyncConnection[Any], flow: Flow[T], *, transaction: bool = True) -> T:
    async def execute(statement: Statement) -> Rows:
        cur = await conn.execute(*statement)
        return list(await cur.fetchall()) if cur.description is not None else []

    if not transaction:
        return await arun_flow(flow, execute)
    async with conn.transaction():
        return await arun_flow(flow, execute)


def open_pool(
    url: str | None,
    pool: ConnectionPool[Any] | None,
    *,
    name: str,
    schema: Flow[None],
    failed: Failure,
    prepare_threshold: int | None = 5,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> ConnectionPool[Any]:
    """The given ``pool``, or a new one on ``url``, with the store's tables made by ``schema``; a
    server that cannot be reached raises ``failed(message)``, and a pool opened here is closed (it
    would go on reconnecting in its threads)."""
    require_psycopg()
    from psycopg_pool import ConnectionPool

    own = pool is None
    if pool is None:
        if url is None:
            raise ConfigurationError(f"{name} needs a url or a pool")
        pool = ConnectionPool(url, **pool_kwargs(prepare_threshold, connect_timeout))
    try:
        with pool.connection() as conn:
            run_on(conn, schema)
    except Exception as exc:
        if own:  # whatever failed (the server, or the schema refusing, e.g. a missing extension)
            pool.close()
        if not is_driver_error(exc):
            raise
        raise failed(unreachable(name, url, pool, connect_timeout, exc)) from exc
    return pool


class AsyncPool:
    """An async store's pool: the given one, or one opened on ``url`` by ``await open()``, which
    also makes the store's tables (``schema`` builds the flow); ``close`` closes only a pool it opened."""

    def __init__(
        self,
        url: str | None,
        pool: AsyncConnectionPool[Any] | None,
        *,
        name: str,
        schema: Callable[[], Flow[None]],
        failed: Failure,
        prepare_threshold: int | None = 5,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        require_psycopg()
        if url is None and pool is None:
            raise ConfigurationError(f"{name} needs a url or a pool")
        self.pool, self.own = pool, pool is None
        self._url, self._name, self._schema, self._failed = url, name, schema, failed
        self._prepare_threshold, self._connect_timeout = prepare_threshold, connect_timeout

    async def open(self) -> None:
        if self.pool is None:
            from psycopg_pool import AsyncConnectionPool

            kwargs = pool_kwargs(self._prepare_threshold, self._connect_timeout, asynchronous=True) | {"open": False}
            self.pool = AsyncConnectionPool(self._url, **kwargs)  # type: ignore[arg-type]  # url checked in __init__
            await self.pool.open()
        try:
            async with self.pool.connection() as conn:
                await arun_on(conn, self._schema())
        except Exception as exc:
            message = unreachable(self._name, self._url, self.pool, self._connect_timeout, exc)
            if self.own:  # closed and forgotten: a later open() starts afresh
                pool, self.pool = self.pool, None
                await pool.close()
            if not is_driver_error(exc):
                raise
            raise self._failed(message) from exc

    def connection(self) -> AbstractAsyncContextManager[AsyncConnection[Any]]:
        """A pooled connection; refused with a clear error before ``open()``."""
        if self.pool is None:
            raise ConfigurationError(f"Call `await open()` on {self._name} before using it")
        return self.pool.connection()

    async def close(self) -> None:
        if self.own and self.pool is not None:
            await self.pool.close()
