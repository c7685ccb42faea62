"""The contract every session repository keeps, as a pytest class to subclass for your own store.

``class TestMyStore(SessionRepositoryContract)`` with a ``repository`` fixture that yields an
:class:`~chatclient.memory.AsyncSessionRepository` (wrap a sync one in :class:`SyncAsAsync`: its
calls then run on real threads, so the race tests race threads). Each test uses fresh session ids.

The lossless test stores the turns of the ``provider_turns`` fixture (:class:`ProviderTurn`: the
messages as a provider's mapping parsed them, and the provider's renderer of its next request) and
checks that what comes back renders the same request byte for byte. This repository's own tests
fill it from the recorded provider traffic; by default it is :func:`every_message_kind`, unrendered.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from ..errors import ConfigurationError
from ..memory.expiry import Session
from ..memory.log import (
    AppendResult,
    IdempotencyMismatch,
    NewEvent,
    SessionEvent,
    VersionConflict,
    encode_message,
    turn_events,
)
from ..memory.repository import AsyncSessionRepository, SessionRepository
from ..messages import (
    AssistantMessage,
    ImagePart,
    JsonPart,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

__all__ = [
    "RACERS",
    "CompactionContract",
    "ExpiringFactory",
    "ExpiryContract",
    "FakeClock",
    "LeaseContract",
    "ProviderTurn",
    "PruneContract",
    "SessionRepositoryContract",
    "SyncAsAsync",
    "every_message_kind",
    "turn_shapes",
]

T = TypeVar("T")
RACERS = 32


class SyncAsAsync:
    """A sync repository seen through the async protocol; each call runs on its own worker thread."""

    def __init__(self, sync: SessionRepository, threads: int = RACERS) -> None:
        self.sync = sync
        self._pool = ThreadPoolExecutor(max_workers=threads)

    async def _run(self, call: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    async def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        return await self._run(lambda: self.sync.append(session_id, events, expected_version=expected_version))

    async def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        return await self._run(lambda: self.sync.events(session_id, after_seq=after_seq, last=last, types=types))

    async def version(self, session_id: str) -> int:
        return await self._run(lambda: self.sync.version(session_id))

    async def delete(self, session_id: str) -> None:
        await self._run(lambda: self.sync.delete(session_id))

    async def delete_expired(self, now: float | None = None) -> int:
        return await self._run(lambda: self.sync.delete_expired(now))

    async def prune(self, session_id: str, below_seq: int) -> int:
        return await self._run(lambda: self.sync.prune(session_id, below_seq))

    async def create(
        self, session_id: str | None = None, *, ttl: float | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Session:
        return await self._run(lambda: self.sync.create(session_id, ttl=ttl, metadata=metadata))

    async def get(self, session_id: str) -> Session | None:
        return await self._run(lambda: self.sync.get(session_id))

    async def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        lease: Any = self.sync
        return bool(await self._run(lambda: lease.try_lease(session_id, token, ttl)))

    async def release_lease(self, session_id: str, token: str) -> bool:
        lease: Any = self.sync
        return bool(await self._run(lambda: lease.release_lease(session_id, token)))

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def every_message_kind() -> list[Message]:
    """One message of every kind, with the provider metadata that must survive byte for byte."""
    return [
        SystemMessage("Be brief.", metadata={"cache_control": {"type": "ephemeral"}}),
        UserMessage("Weather in Paris? ünïcødé ✓ \u2028", metadata={"id": "u1"}),
        AssistantMessage(
            None,
            tool_calls=[ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris" }')],
            metadata={  # under the keys the providers' mappings write
                "anthropic_thinking_blocks": [
                    {"type": "thinking", "thinking": "Look it up.", "signature": "EqQBCkgIARABGAIiQ=="},
                    {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
                ],
                "openai_responses.reasoning": [{"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAA…"}],
                "openai_responses.builtin_items": [{"type": "web_search_call", "id": "ws_1", "status": "completed"}],
                "reasoning": "Call the tool.",
                "reasoning_field": "reasoning_content",
            },
        ),
        ToolResponseMessage(
            [
                ToolResponse(
                    id="call_1",
                    name="get_weather",
                    response_data="Sunny",
                    parts=(TextPart("Sunny"), JsonPart({"t": 21.5}), ImagePart.from_bytes(b"\x89PNG", "image/png")),
                    result_metadata={"source": "test"},
                    metadata={"decision": "approved"},
                )
            ]
        ),
        AssistantMessage("Sunny, 21.5 °C.", metadata={"finish_reason": "stop", "n": 1.0}),
    ]


@dataclass(frozen=True)
class ProviderTurn:
    """One turn as a provider produced it: ``messages`` parsed from its wire replies by its mapping
    (so the metadata keys are the ones it writes), ``next_request`` the bytes it would send with
    those messages as history (``None``: check the messages only), ``source`` where they came from."""

    name: str
    messages: list[Message]
    next_request: Callable[[Sequence[Message]], bytes] | None = None
    source: str = ""


def _batch(turn: str, n: int) -> list[NewEvent]:
    return turn_events(turn, [UserMessage(f"{turn} message {i}") for i in range(n)])


class SessionRepositoryContract:
    """Subclass and provide the ``repository`` fixture."""

    @pytest.fixture
    def session(self) -> str:
        return f"s-{uuid.uuid4().hex}"

    async def test_unknown_session_reads_empty(self, repository: AsyncSessionRepository, session: str) -> None:
        assert await repository.events(session) == []
        assert await repository.version(session) == 0

    async def test_events_are_numbered_without_gaps_and_version_is_the_last(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        first = await repository.append(session, _batch("t1", 3))
        second = await repository.append(session, _batch("t2", 2))
        assert (first, second) == (AppendResult(3, 3, 0), AppendResult(5, 2, 0))
        events = await repository.events(session)
        assert [e.seq for e in events] == [1, 2, 3, 4, 5]
        assert [e.event_id for e in events] == ["t1:0", "t1:1", "t1:2", "t2:0", "t2:1"]
        assert all(e.session_id == session for e in events)
        assert await repository.version(session) == 5
        assert [e.seq for e in await repository.events(session, after_seq=3)] == [4, 5]
        assert [e.seq for e in await repository.events(session, last=2)] == [4, 5]
        assert [e.seq for e in await repository.events(session, after_seq=1, last=10)] == [2, 3, 4, 5]

    async def test_a_replayed_batch_changes_nothing(self, repository: AsyncSessionRepository, session: str) -> None:
        await repository.append(session, _batch("t1", 3), expected_version=0)
        again = await repository.append(session, _batch("t1", 3), expected_version=0)  # a retry after a lost reply
        assert again == AppendResult(3, 0, 3)
        assert len(await repository.events(session)) == 3

    async def test_same_id_with_another_payload_is_refused(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        await repository.append(session, _batch("t1", 1))
        with pytest.raises(IdempotencyMismatch):
            await repository.append(session, [NewEvent("t1:0", "t1", encode_message(UserMessage("other")))])
        with pytest.raises(IdempotencyMismatch):
            await repository.append(session, [*_batch("t2", 1), *_batch("t2", 1)])
        assert await repository.version(session) == 1

    @pytest.mark.parametrize("bad", ["", " ", "a\x00b", "x" * 513, "é" * 257])
    async def test_an_id_no_backend_could_hold_is_refused_the_same_everywhere(
        self, repository: AsyncSessionRepository, bad: str
    ) -> None:
        with pytest.raises(ConfigurationError):
            await repository.append(bad, _batch("t1", 1))
        entries: list[Callable[[], Awaitable[object]]] = [
            lambda: repository.events(bad),
            lambda: repository.events(bad, types=["message"]),
            lambda: repository.version(bad),
            lambda: repository.delete(bad),
            lambda: repository.get(bad),
            lambda: repository.prune(bad, 1),
            lambda: repository.create(bad),
        ]
        for entry in entries:  # reads too: a driver's own refusal (or an empty answer) is not the contract
            with pytest.raises(ConfigurationError):
                await entry()
        longest = "x" * 512  # the documented limit, in UTF-8 bytes, is accepted
        assert (await repository.append(longest, _batch("t1", 1))).appended == 1
        await repository.delete(longest)

    async def test_a_stale_expected_version_writes_nothing(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        await repository.append(session, _batch("t1", 2))
        with pytest.raises(VersionConflict) as raised:
            await repository.append(session, _batch("t2", 3), expected_version=1)
        assert raised.value.current == 2
        assert [e.turn_id for e in await repository.events(session)] == ["t1", "t1"]

    async def test_every_message_kind_round_trips_byte_for_byte(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        messages = every_message_kind()
        await repository.append(session, turn_events("t1", messages))
        events = await repository.events(session)
        assert [e.payload for e in events] == [encode_message(m) for m in messages]
        assert [e.message() for e in events] == messages

    @pytest.fixture
    def provider_turns(self) -> list[ProviderTurn]:
        """Override with the turns your providers produce (this repository fills it from recordings)."""
        return [ProviderTurn("every message kind", every_message_kind())]

    async def test_provider_turns_come_back_as_the_same_next_request(
        self, repository: AsyncSessionRepository, session: str, provider_turns: list[ProviderTurn]
    ) -> None:
        assert provider_turns, "no provider turns to round-trip"
        for n, turn in enumerate(provider_turns):
            conversation = f"{session}-{n}"
            await repository.append(conversation, turn_events(f"t{n}", turn.messages))
            events = await repository.events(conversation)
            assert [e.payload for e in events] == [encode_message(m) for m in turn.messages], turn.name
            reloaded = [e.message() for e in events]
            assert reloaded == turn.messages, turn.name
            if turn.next_request is not None:
                assert turn.next_request(reloaded) == turn.next_request(turn.messages), turn.name

    async def test_delete_removes_the_session_and_its_events(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        other = f"{session}-other"
        await repository.append(session, _batch("t1", 2))
        await repository.append(other, _batch("t1", 1))
        await repository.delete(session)
        assert (await repository.events(session), await repository.version(session)) == ([], 0)
        assert await repository.version(other) == 1
        assert (await repository.append(session, _batch("t1", 1))).version == 1  # starts afresh

    async def test_racers_with_one_expected_version_have_exactly_one_winner(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        await repository.append(session, _batch("t0", 1))

        async def racer(n: int) -> bool:
            try:
                await repository.append(session, _batch(f"r{n}", 2), expected_version=1)
            except VersionConflict:
                return False
            return True

        wins = await asyncio.gather(*(racer(n) for n in range(RACERS)))
        assert sum(wins) == 1
        assert [e.seq for e in await repository.events(session)] == [1, 2, 3]

    async def test_racers_without_a_version_all_land_and_replays_land_once(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        # A first append to a new session from every racer at once: none fails, nothing is lost.
        await asyncio.gather(*(repository.append(session, _batch(f"r{n}", 2)) for n in range(RACERS)))
        events = await repository.events(session)
        assert [e.seq for e in events] == list(range(1, 2 * RACERS + 1))
        turns = [e.turn_id for e in events]
        assert all(turns[i] == turns[i + 1] for i in range(0, len(turns), 2))  # each batch contiguous
        same = f"{session}-replays"
        await asyncio.gather(*(repository.append(same, _batch("t1", 4)) for _ in range(RACERS)))
        assert [e.event_id for e in await repository.events(same)] == ["t1:0", "t1:1", "t1:2", "t1:3"]


# ------------------------------------------------------------------------------------ compaction

TurnShape = list[int]
"""A turn's shape: the number of tool calls in each of its tool rounds (``[]``: a plain turn)."""


def turn_shapes() -> Any:
    """Hypothesis: conversations of 1 to 8 turns, each with 0 to 3 tool rounds of 1 to 3 calls."""
    from hypothesis import strategies as st

    return st.lists(st.lists(st.integers(1, 3), max_size=3), min_size=1, max_size=8)


def shaped_turn(turn: str, shape: TurnShape) -> list[Message]:
    """The messages of a turn of ``shape``: the user message, each round, the answer."""
    messages: list[Message] = [UserMessage(f"{turn} question")]
    for r, calls in enumerate(shape):
        ids = [f"{turn}-{r}-{c}" for c in range(calls)]
        calls_made = [ToolCall(id=i, name="look", arguments="{}") for i in ids]
        messages.append(AssistantMessage(None, tool_calls=calls_made))
        results = [ToolResponse(id=i, name="look", response_data=f"result {i}") for i in ids]
        messages.append(ToolResponseMessage(results))
    messages.append(AssistantMessage(f"{turn} answer"))
    return messages


def assert_whole_turns(messages: Sequence[Message]) -> None:
    """A view the model can take: no leading tool result, every tool call answered by the next message."""
    assert not messages or not isinstance(messages[0], ToolResponseMessage), "the view starts with a tool result"
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            after = messages[index + 1] if index + 1 < len(messages) else None
            assert isinstance(after, ToolResponseMessage), f"tool call at {index} left unanswered"
            assert {r.id for r in after.responses} == {c.id for c in message.tool_calls}


def _summariser() -> Any:
    from ..client import ChatClient
    from .scripted import ScriptedChatModel

    return ChatClient.create(ScriptedChatModel(lambda prompt: f"summary of {len(prompt.messages)} messages"))


def strategies() -> list[Any]:
    from ..memory.compaction import RecursiveSummary, SlidingWindow, TokenBudget, TurnWindow

    return [SlidingWindow(5), TurnWindow(2), TokenBudget(60), RecursiveSummary(_summariser(), keep_turns=2)]


async def read_view(repository: AsyncSessionRepository, session: str, window: int | None = None) -> Any:
    from ..memory._compacting import aread_log
    from ..memory.compaction import view_of

    boundary, events = await aread_log(repository, session, window)
    return view_of(events, boundary), (events[-1].seq if events else 0)


class CompactionContract:
    """Compaction over a repository: boundaries are appended, the log stays, the view is right, and
    no window or strategy ever cuts a turn. Needs the ``repository`` fixture."""

    @pytest.fixture
    def session(self) -> str:
        return f"s-{uuid.uuid4().hex}"

    async def _fill(self, repository: AsyncSessionRepository, session: str, shapes: Sequence[TurnShape]) -> None:
        for n, shape in enumerate(shapes):
            await repository.append(session, turn_events(f"t{n}", shaped_turn(f"t{n}", shape)))

    async def test_types_select_events_and_find_the_latest_boundary(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        await self._fill(repository, session, [[], [1]])
        await repository.append(session, [NewEvent("b1:0", "b1", "{}", "x.note")])
        await self._fill(repository, f"{session}-other", [[]])
        await repository.append(session, turn_events("t9", [UserMessage("later")]))
        assert [e.seq for e in await repository.events(session, types=("x.note",))] == [7]
        assert [e.seq for e in await repository.events(session, types=("x.note",), after_seq=7)] == []
        assert [e.seq for e in await repository.events(session, types=("x.note",), last=1)] == [7]
        assert len(await repository.events(session, types=("message",))) == 7
        assert [e.seq for e in await repository.events(session, types=("message", "x.note"), last=2)] == [7, 8]
        assert await repository.events(session, types=()) == []

    @pytest.mark.parametrize("strategy", range(4), ids=["sliding", "turns", "tokens", "summary"])
    async def test_a_boundary_keeps_the_log_and_the_view_is_summary_then_later_turns(
        self, repository: AsyncSessionRepository, session: str, strategy: int
    ) -> None:
        from ..memory._compacting import acompact
        from ..memory.compaction import Compaction, TurnCount

        compaction = Compaction(TurnCount(3), strategies()[strategy])
        await self._fill(repository, session, [[], [2], [], [1, 1]])
        view, version = await read_view(repository, session)
        assert await acompact(repository, session, compaction, view, version)
        log = await repository.events(session)
        assert len(log) == version + 1 and log[-1].type == "compaction", "one boundary appended, nothing removed"
        assert not await acompact(repository, session, compaction, view, version), "a stale version lands nothing"
        await self._fill(repository, session, [])
        await repository.append(session, turn_events("t4", shaped_turn("t4", [1])))
        after, _ = await read_view(repository, session)
        kept = [t.turn_id for t in after.turns]
        assert kept[-1] == "t4" and "t0" not in kept and kept == sorted(kept)
        if strategy == 3:
            assert [m.role for m in after.summary] == ["user", "assistant"]
            assert after.messages()[:2] == list(after.summary)
        assert_whole_turns(after.messages())

    async def test_concurrent_compactions_of_one_version_land_once(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        from ..memory._compacting import acompact
        from ..memory.compaction import Compaction, TurnCount, TurnWindow

        await self._fill(repository, session, [[], [], [], []])
        view, version = await read_view(repository, session)
        compaction = Compaction(TurnCount(2), TurnWindow(1))
        racers = (acompact(repository, session, compaction, view, version) for _ in range(RACERS))
        landed = await asyncio.gather(*racers)
        assert sum(landed) == 1
        assert [e.type for e in await repository.events(session, after_seq=version)] == ["compaction"]

    async def test_windows_and_every_strategy_never_cut_a_turn(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        from hypothesis import HealthCheck, given, settings

        from ..memory._compacting import acompact
        from ..memory.compaction import Compaction, TurnCount

        drawn: list[list[TurnShape]] = []

        @settings(max_examples=12, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(turn_shapes())
        def draw(shapes: list[TurnShape]) -> None:
            drawn.append(shapes)

        draw()  # Hypothesis picks the shapes; the store is async, so they are checked below
        for n, shapes in enumerate(drawn):
            conversation = f"{session}-{n}"
            await self._fill(repository, conversation, shapes)
            total = await repository.version(conversation)
            for last in range(1, total + 1):
                view, _ = await read_view(repository, conversation, last)
                assert_whole_turns(view.messages())
                assert all(t.events[0].starts_turn for t in view.turns)
            for k, strategy in enumerate(strategies()):
                branch = f"{conversation}-{k}"
                await self._fill(repository, branch, shapes)
                view, version = await read_view(repository, branch)
                await acompact(repository, branch, Compaction(TurnCount(1), strategy), view, version)
                after, _ = await read_view(repository, branch)
                assert_whole_turns(after.messages())
                assert after.turns and after.turns[-1].turn_id == f"t{len(shapes) - 1}", "the latest turn stays"
                assert len(await repository.events(branch)) in (version, version + 1), "the log stays whole"


# ------------------------------------------------------------------------------- expiry, pruning


class FakeClock:
    """A repository clock the test sets (``now``, Unix seconds): appends take their time from it."""

    def __init__(self, now: float | None = None) -> None:
        self.now = time.time() if now is None else now

    def __call__(self) -> float:
        return self.now


ExpiringFactory = Callable[[float, FakeClock], Awaitable[AsyncSessionRepository]]
"""``await expiring(ttl, clock)``: a repository with that session ttl whose appends read ``clock``."""


class ExpiryContract:
    """Sessions expire ``ttl`` after their last append, read as empty until purged, start afresh
    when appended to again, and ``delete_expired`` removes them. Needs an ``expiring`` fixture
    (:data:`ExpiringFactory`), ``server_expiry`` (``True`` where the server expires keys by its own
    clock, Redis: the test then waits past a short ttl) and ``server_now`` (below). Elsewhere an
    event's age is the distance from its append time (the fake clock) to the clock the backend
    judges by (the repository's, or PostgreSQL's ``now()``, both near real time): no test waits."""

    @pytest.fixture
    def session(self) -> str:
        return f"s-{uuid.uuid4().hex}"

    @pytest.fixture
    def server_expiry(self) -> bool:
        return False

    @pytest.fixture
    def server_now(self) -> bool:
        """``True`` where the server's clock judges the age of events the repository's clock
        stamped (PostgreSQL's ``now()``): a past append time cannot fake a gap between appends."""
        return False

    async def test_an_idle_session_expires_and_an_active_one_stays(
        self, expiring: ExpiringFactory, server_expiry: bool, server_now: bool, session: str
    ) -> None:
        from ..errors import ConfigurationError

        idle, active, fresh, restarted = (f"{session}-{n}" for n in ("idle", "active", "fresh", "restarted"))
        if server_expiry:
            repository = await expiring(0.2, FakeClock())
            await repository.append(idle, _batch("t1", 2))
            await repository.append(restarted, _batch("t1", 2))
            await asyncio.sleep(0.5)  # past the 0.2 s ttl; the outcome does not depend on timing beyond it
            await repository.append(fresh, _batch("t1", 1))
        else:
            clock = FakeClock(time.time() - 1000.0)
            repository = await expiring(600.0, clock)
            for conversation in (idle, restarted, *([active] if not server_now else [])):
                await repository.append(conversation, _batch("t1", 2))  # 1000 s ago
            boundary = NewEvent("b0:0", "b0", '{"first_kept_seq":1,"summary":[]}', "compaction")
            await repository.append(idle, [boundary])
            clock.now = time.time() - 500.0  # an age the server's clock cannot be shown: there, active is recent
            if server_now:
                await repository.append(active, _batch("t1", 2))
            await repository.append(active, _batch("t2", 1))  # within the ttl of its last append: it goes on
            clock.now = time.time()
            await repository.append(fresh, _batch("t1", 1))
            with pytest.raises(ConfigurationError, match="no compaction boundary"):
                await repository.prune(idle, 1)  # expired: it reads as empty, boundary and all
            assert [e.seq for e in await repository.events(active)] == [1, 2, 3], "an active session stays whole"
            assert await repository.version(active) == 3
        assert await repository.events(idle) == [] and await repository.version(idle) == 0, "expired reads empty"
        assert await repository.events(idle, types=("message",)) == []
        assert await repository.events(idle, last=1) == []
        again = await repository.append(restarted, _batch("t9", 1))
        assert again == AppendResult(1, 1, 0), "an expired log is not resumed: the append starts afresh"
        assert [e.event_id for e in await repository.events(restarted)] == ["t9:0"]
        removed = await repository.delete_expired()
        assert removed == (0 if server_expiry else 1), "the idle session goes; the restarted one is live"
        assert await repository.delete_expired() == 0
        assert await repository.version(fresh) == 1
        assert (await repository.append(idle, _batch("t1", 1))).version == 1, "gone: a new log"

    async def test_create_is_idempotent_and_get_reads_the_session(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        from ..errors import ConfigurationError

        created = await repository.create(metadata={"owner": "ada", "n": [1, 2]})
        assert len(created.id) >= 16 and created.ttl is None and created.metadata == {"owner": "ada", "n": [1, 2]}
        assert await repository.create(created.id, metadata={"owner": "bob"}) == created, "an existing one stays"
        assert await repository.get(created.id) == created
        assert await repository.version(created.id) == 0 and await repository.events(created.id) == []
        assert await repository.get(session) is None
        await repository.append(session, _batch("t1", 1))
        known = await repository.get(session)
        assert known is not None and (known.id, known.ttl, dict(known.metadata)) == (session, None, {})
        with pytest.raises(ConfigurationError, match="ttl"):
            await repository.create(f"{session}-2", ttl=60.0)  # this repository expires nothing
        with pytest.raises(ConfigurationError, match="JSON"):
            await repository.create(f"{session}-2", metadata={"x": object()})
        assert await repository.get(f"{session}-2") is None, "a refused create writes nothing"
        await repository.delete(created.id)
        assert await repository.get(created.id) is None

    async def test_a_session_ttl_overrides_the_repository_one(
        self, expiring: ExpiringFactory, server_expiry: bool, session: str
    ) -> None:
        short, long, plain = (f"{session}-{n}" for n in ("short", "long", "plain"))
        if server_expiry:
            repository = await expiring(600.0, FakeClock())
            await repository.create(short, ttl=0.2)
            await repository.create(long, ttl=6000.0)
            await repository.create(plain)
            await asyncio.sleep(0.5)  # past the 0.2 s ttl; the outcome does not depend on timing beyond it
        else:
            clock = FakeClock(time.time() - 300.0)
            repository = await expiring(200.0, clock)
            await repository.create(short, ttl=100.0)  # created 300 s ago: an empty session ages from creation
            await repository.create(long, ttl=6000.0)
            await repository.create(plain)  # the repository's 200 s
            clock.now = time.time()
        assert await repository.get(short) is None
        found = await repository.get(long)
        assert found is not None and found.ttl == 6000.0
        assert (await repository.get(plain) is None) == (not server_expiry)
        assert await repository.delete_expired() == (0 if server_expiry else 2)
        assert await repository.get(long) is not None

    async def test_without_a_ttl_nothing_expires(self, repository: AsyncSessionRepository, session: str) -> None:
        await repository.append(session, _batch("t1", 1))
        assert await repository.delete_expired() == 0
        assert await repository.delete_expired(now=time.time() + 10 * 365 * 86400.0) == 0
        assert await repository.version(session) == 1


class PruneContract:
    """``prune`` removes events below the latest compaction boundary's first kept event and never
    further; the view is the same before and after. Needs the ``repository`` fixture."""

    @pytest.fixture
    def session(self) -> str:
        return f"s-{uuid.uuid4().hex}"

    async def test_prune_below_the_boundary_keeps_the_view(
        self, repository: AsyncSessionRepository, session: str
    ) -> None:
        from ..errors import ConfigurationError
        from ..memory._compacting import acompact
        from ..memory.compaction import Compaction, TurnCount, TurnWindow, first_kept_seq

        for n, shape in enumerate([[], [2], [], [1, 1]]):
            await repository.append(session, turn_events(f"t{n}", shaped_turn(f"t{n}", shape)))
        with pytest.raises(ConfigurationError, match="no compaction boundary"):
            await repository.prune(session, 2)
        view, version = await read_view(repository, session)
        assert await acompact(repository, session, Compaction(TurnCount(2), TurnWindow(1)), view, version)
        await repository.append(session, turn_events("t4", [UserMessage("later"), AssistantMessage("ok")]))
        before, version = await read_view(repository, session)
        boundary = (await repository.events(session, types=("compaction",), last=1))[0]
        kept = first_kept_seq(boundary)
        with pytest.raises(ConfigurationError, match="would cut the view"):
            await repository.prune(session, kept + 1)
        with pytest.raises(ConfigurationError):
            await repository.prune(session, 0)
        assert await repository.version(session) == version, "a refused prune removes nothing"
        assert await repository.prune(session, kept) == kept - 1
        assert await repository.prune(session, kept) == 0, "pruning again finds nothing left below"
        after, version_after = await read_view(repository, session)
        assert after.messages() == before.messages() and version_after == version, "the same view"
        assert [e.seq for e in await repository.events(session)] == list(range(kept, version + 1))
        assert await repository.version(session) == version, "numbers are not reused"
        assert (await repository.append(session, turn_events("t5", [UserMessage("next")]))).version == version + 1


# ----------------------------------------------------------------------------------------- leases


class LeaseContract:
    """The lease behind ``concurrency="serialize"``: one holder at a time, released only by its
    holder, taken over once expired. Needs the ``repository`` fixture (with ``try_lease``)."""

    @pytest.fixture
    def session(self) -> str:
        return f"s-{uuid.uuid4().hex}"

    async def test_one_of_many_racers_holds_the_lease_and_only_it_releases(self, repository: Any, session: str) -> None:
        held = await asyncio.gather(*(repository.try_lease(session, f"token-{n}", 60.0) for n in range(RACERS)))
        assert sum(held) == 1
        holder = f"token-{held.index(True)}"
        other = f"token-{(held.index(True) + 1) % RACERS}"
        assert await repository.try_lease(session, holder, 60.0), "the holder may renew"
        assert not await repository.try_lease(session, other, 60.0)
        assert not await repository.release_lease(session, other), "only the holder releases"
        assert await repository.release_lease(session, holder)
        assert not await repository.release_lease(session, holder)
        assert await repository.try_lease(session, other, 60.0), "free again once released"
        assert await repository.try_lease(f"{session}-other", holder, 60.0), "leases are per session"

    @pytest.mark.parametrize("bad", ["", "a\x00b", "x" * 513])
    async def test_a_lease_on_an_id_no_backend_could_hold_is_refused(self, repository: Any, bad: str) -> None:
        with pytest.raises(ConfigurationError):
            await repository.try_lease(bad, "token", 60.0)
        with pytest.raises(ConfigurationError):
            await repository.release_lease(bad, "token")

    async def test_an_expired_lease_is_taken_over(self, repository: Any, session: str) -> None:
        assert await repository.try_lease(session, "crashed", 0.01)
        await asyncio.sleep(0.2)  # well past the 10 ms lease; the outcome does not depend on timing beyond it
        assert await repository.try_lease(session, "next", 60.0)
        assert not await repository.release_lease(session, "crashed")
