"""Session expiry details the contract suite leaves to each backend: Redis renews the expiry of all
of a session's keys inside the append script (no extra round trip), pruned marks expire with the log;
a bad ttl is refused everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatclient.errors import ConfigurationError
from chatclient.memory import InMemorySessionRepository
from chatclient.memory.log import NewEvent, turn_events
from chatclient.memory.sqlite import SqliteSessionRepository
from chatclient.messages import UserMessage
from chatclient.testing.servers import REDIS_URL, server_url


def test_redis_appends_renew_every_key_of_the_session_and_prunes_keep_it(prefix: str) -> None:
    import redis

    from chatclient.memory.redis import RedisSessionRepository

    url = server_url(REDIS_URL)
    repository = RedisSessionRepository(url, prefix=prefix, ttl=600.0)
    client = redis.Redis.from_url(url)
    try:
        repository.append("c1", [*turn_events("t1", [UserMessage("a")]), NewEvent("n1:0", "n1", "{}", "x.note")])
        keys = [f"{prefix}session:{{c1}}:{name}" for name in ("ids", "log", "marks")]
        assert all(0 < client.pttl(key) <= 600_000 for key in keys), "one expiry for the whole session"
        client.pexpire(keys[1], 5_000)  # as if the session had idled; the next append renews it
        repository.append("c1", turn_events("t2", [UserMessage("b")]))
        assert all(client.pttl(key) > 5_000 for key in keys)
        boundary = NewEvent("b1:0", "b1", '{"first_kept_seq":3,"summary":[]}', "compaction")
        repository.append("c1", [boundary])
        assert repository.prune("c1", 3) == 2
        assert 0 < client.pttl(f"{prefix}session:{{c1}}:pruned") <= 600_000, "the prune mark expires with the log"
        assert [e.seq for e in repository.events("c1")] == [3, 4]
    finally:
        repository.delete("c1")
        repository.close()
        client.close()


@pytest.mark.parametrize("ttl", [0, -1.0, float("nan"), float("inf"), "60", True])
def test_a_bad_ttl_is_refused(ttl: object, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="ttl"):
        InMemorySessionRepository(ttl=ttl)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="ttl"):
        SqliteSessionRepository(tmp_path / "s.db", ttl=ttl)  # type: ignore[arg-type]
