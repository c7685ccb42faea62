"""Tool search (progressive disclosure): offer a search tool instead of a large catalogue.

The first round offers one tool, ``tool_search(query)`` (plus any tools marked always-on); its result
names the tools that match, and later rounds offer those (every name found in the turn by default,
or only the latest search's). A catalogue whose definitions are small (under ~1,000 tokens) is sent
as it is: a search round would cost more than it saves.

Built only from the loop's hooks: ``do_before_call`` narrows each round's tools, ``do_finalize_loop``
reports what each round offered. The found set is derived from the turn's messages, never kept
aside, so a paused turn resumes against the same tools, and a turn restored from memory reads the
same. Use :class:`ToolSearchToolCallingAdvisor` in place of the tool loop, or add a
:class:`ToolSearchExtension` to any ``ToolCallingAdvisor``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from typing_extensions import Self

from chatclient.advisor import AdvisorOrder, ChatClientRequest, ChatClientResponse
from chatclient.errors import ConfigurationError, ToolArgumentsError
from chatclient.messages import AssistantMessage, Message, SystemMessage, ToolResponseMessage
from chatclient.options import ToolCallingChatOptions
from chatclient.pending.state import NonceLedger
from chatclient.tools.callback import ToolCallback
from chatclient.tools.definition import ToolContext, ToolDefinition
from chatclient.tools.manager import ToolCallingManager

from .tool_calling import LoopState, ToolCallingAdvisor, ToolLoopExtension
from .tool_index import Bm25Index, IndexFactory, ToolIndex

__all__ = [
    "METADATA_KEY",
    "ToolSearchExtension",
    "ToolSearchOptions",
    "ToolSearchToolCallingAdvisor",
    "ToolSearchToolCallingAdvisorBuilder",
    "estimate_tokens",
    "found_tool_names",
]

METADATA_KEY = "tool_search"
"""Key of the per-round report in the final response's ``metadata.extra``."""

_FOUND_PREFIX = "Found: "
_ROUNDS_NOTE = "tool_search.rounds"


def estimate_tokens(text: str) -> int:
    """About four characters a token: close enough for JSON definitions to decide the bypass."""
    return (len(text) + 3) // 4


@dataclass(frozen=True)
class ToolSearchOptions:
    """How tool search behaves; the defaults are the measured ones (see docs/tool-search.md)."""

    index: IndexFactory = Bm25Index
    top_k: int = 5
    min_score_ratio: float = 0.5
    """Hits scoring under this fraction of the best hit are dropped."""
    accumulate: bool = True
    """Offer every tool found in the turn (``False``: only the latest search round's)."""
    always_on: frozenset[str] = frozenset()
    """Tools offered in every round, found or not."""
    bypass_below_tokens: int = 1000
    """Catalogues whose definitions total fewer tokens are sent whole, without search."""
    token_counter: Callable[[str], int] = estimate_tokens
    tool_name: str = "tool_search"
    tool_description: str = "Find tools by what they do; returns names of tools you can then call."
    system_suffix: str | None = "If no listed tool fits, find one with tool_search first."

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, not {self.top_k}")
        if not 0.0 <= self.min_score_ratio <= 1.0:
            raise ValueError(f"min_score_ratio must lie in [0, 1], not {self.min_score_ratio}")


def found_tool_names(
    messages: Iterable[Message], *, tool_name: str = "tool_search", accumulate: bool = True
) -> list[str]:
    """The tool names the searches among ``messages`` returned, in the order found, without repeats
    (``accumulate=False``: only those of the latest message holding search results)."""
    rounds: list[list[str]] = []
    for message in messages:
        if isinstance(message, ToolResponseMessage):
            searches = [r for r in message.responses if r.name == tool_name and not r.is_error]
            if searches:
                rounds.append([name for r in searches for name in _names_in(r.response_data)])
    chosen = rounds if accumulate else rounds[-1:]
    return list(dict.fromkeys(name for names in chosen for name in names))


def _names_in(text: str) -> list[str]:
    if not text.startswith(_FOUND_PREFIX):
        return []
    return [name.strip() for name in text[len(_FOUND_PREFIX) :].split(",") if name.strip()]


@dataclass
class _Catalogue:
    """One request's tools, with what tool search needs of them (built once per tool set)."""

    callbacks: tuple[ToolCallback, ...]
    by_name: dict[str, ToolCallback]
    definition_tokens: int
    bypass: bool
    index: ToolIndex | None
    search_tool: ToolCallback | None = None
    """One per catalogue, so what providers cache per tool stays cached from round to round."""


class _SearchTool(ToolCallback):
    """``tool_search(query)``: names of the catalogue's tools that match, best first."""

    def __init__(self, catalogue: _Catalogue, options: ToolSearchOptions) -> None:
        self._catalogue = catalogue
        self._options = options
        self._definition = ToolDefinition(
            name=options.tool_name,
            description=options.tool_description,
            input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        )

    @property
    def definition(self) -> ToolDefinition:
        return self._definition

    def validate_arguments(self, arguments: str) -> None:
        self._query(arguments)

    def call(self, arguments: str, context: ToolContext | None = None) -> str:
        query = self._query(arguments)
        index = self._catalogue.index
        assert index is not None
        hits = index.search(query, self._options.top_k)
        if hits:
            floor = hits[0][1] * self._options.min_score_ratio
            hits = [hit for hit in hits if hit[1] >= floor]
        if not hits:
            return f"No tool matched {query!r}; try other words."
        return _FOUND_PREFIX + ", ".join(name for name, _ in hits)

    def _query(self, arguments: str) -> str:
        try:
            parsed = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ToolArgumentsError(
                f"The arguments for tool '{self.name}' are not valid JSON ({exc})", tool_name=self.name
            ) from exc
        query = parsed.get("query") if isinstance(parsed, dict) else None
        if not isinstance(query, str) or not query.strip():
            raise ToolArgumentsError(
                f"Tool '{self.name}' needs a 'query': a few words saying what the tool should do",
                tool_name=self.name,
            )
        return query


@dataclass
class _Round:
    offered: int
    names: list[str] = field(default_factory=list)


@dataclass
class _Note:
    catalogue: _Catalogue
    rounds: dict[int, _Round] = field(default_factory=dict)


class ToolSearchExtension(ToolLoopExtension):
    """The hooks of tool search, for any ``ToolCallingAdvisor`` (``extensions=[...]``)."""

    _CACHE_SIZE = 16

    def __init__(self, options: ToolSearchOptions | None = None) -> None:
        self.options = options or ToolSearchOptions()
        self._catalogues: dict[tuple[ToolCallback, ...], _Catalogue] = {}
        self._by_definitions: dict[tuple[str, ...], _Catalogue] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ hooks

    def do_before_call(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        options = request.prompt.options
        if not isinstance(options, ToolCallingChatOptions) or not options.tool_callbacks:
            return request
        catalogue = self._catalogue(options.tool_callbacks)
        if catalogue.bypass:
            self._note(state, catalogue, _Round(len(catalogue.callbacks)))
            return request
        offered = self.offered(catalogue, state.turn_messages)
        self._note(state, catalogue, _Round(len(offered), [t.name for t in offered]))
        prompt = request.prompt.with_options(options.model_copy(update={"tool_callbacks": offered}))
        suffix = self.options.system_suffix
        if suffix:
            prompt = prompt.with_messages(_with_suffix(prompt.messages, suffix))
        return request.with_prompt(prompt)

    def do_finalize_loop(self, response: ChatClientResponse, state: LoopState) -> ChatClientResponse:
        chat = response.chat_response
        note: _Note | None = state.notes.get(_ROUNDS_NOTE)
        if chat is None or note is None:
            return response
        rounds, catalogue = note.rounds, note.catalogue
        self._fill_earlier_rounds(rounds, catalogue, state)
        report = {
            "catalogue": len(catalogue.callbacks),
            "catalogue_tokens": catalogue.definition_tokens,
            "bypassed": catalogue.bypass,
            "rounds": [
                {"round": number, "offered": entry.offered, **({"tools": entry.names} if entry.names else {})}
                for number, entry in sorted(rounds.items())
            ],
        }
        return response.with_chat_response(chat.with_metadata(extra={**chat.metadata.extra, METADATA_KEY: report}))

    # ------------------------------------------------------------------ the offered set

    def offered(self, catalogue: _Catalogue, turn_messages: Sequence[Message]) -> tuple[ToolCallback, ...]:
        """The search tool, the always-on tools, then the tools found so far in the turn."""
        options = self.options
        found = found_tool_names(turn_messages, tool_name=options.tool_name, accumulate=options.accumulate)
        names = dict.fromkeys([*(n for n in catalogue.by_name if n in options.always_on), *found])
        chosen = [catalogue.by_name[n] for n in names if n in catalogue.by_name and n != options.tool_name]
        if catalogue.search_tool is None:
            catalogue.search_tool = _SearchTool(catalogue, options)
        return (catalogue.search_tool, *chosen)

    def _catalogue(self, callbacks: tuple[ToolCallback, ...]) -> _Catalogue:
        """Cached by the tools themselves, then by their definitions: a source that hands out new
        callback objects per request (an MCP server) still gets its index built once."""
        cached = self._catalogues.get(callbacks)
        if cached is not None:
            return cached
        options = self.options
        definitions = [c.definition for c in callbacks]
        texts = tuple(json.dumps(d.model_dump(), separators=(",", ":")) for d in definitions)
        by_name = {c.name: c for c in callbacks}
        if options.tool_name in by_name:
            raise ConfigurationError(
                f"A tool is named {options.tool_name!r}, like the search tool: rename it, or name the search "
                "tool otherwise (ToolSearchToolCallingAdvisor.builder().search_tool(name=...))"
            )
        same = self._by_definitions.get(texts)
        if same is not None:
            catalogue = _Catalogue(callbacks, by_name, same.definition_tokens, same.bypass, same.index)
        else:
            tokens = sum(options.token_counter(text) for text in texts)
            bypass = tokens < options.bypass_below_tokens
            catalogue = _Catalogue(callbacks, by_name, tokens, bypass, None if bypass else options.index(definitions))
        with self._lock:
            _bounded_put(self._catalogues, callbacks, catalogue, self._CACHE_SIZE)
            _bounded_put(self._by_definitions, texts, catalogue, self._CACHE_SIZE)
        return catalogue

    # ------------------------------------------------------------------ reporting

    @staticmethod
    def _note(state: LoopState, catalogue: _Catalogue, entry: _Round) -> None:
        note = state.notes.get(_ROUNDS_NOTE)
        if note is None:
            note = state.notes[_ROUNDS_NOTE] = _Note(catalogue)
        note.catalogue = catalogue  # the latest round's: the one the report describes
        note.rounds[state.round] = entry

    def _fill_earlier_rounds(self, rounds: dict[int, _Round], catalogue: _Catalogue, state: LoopState) -> None:
        """Rounds before a resume ran in another call: what they offered follows from the turn."""
        first = min(rounds, default=1)
        if first <= 1:
            return
        turn = state.turn_messages
        replies = [i for i, m in enumerate(turn) if isinstance(m, AssistantMessage) and m.tool_calls]
        for number, position in enumerate(replies[: first - 1], start=1):
            if catalogue.bypass:
                rounds[number] = _Round(len(catalogue.callbacks))
            else:
                offered = self.offered(catalogue, turn[:position])
                rounds[number] = _Round(len(offered), [t.name for t in offered])


K = TypeVar("K")


def _bounded_put(cache: dict[K, _Catalogue], key: K, value: _Catalogue, size: int) -> None:
    """Insert, dropping the oldest entry when full (a catalogue rarely changes: no LRU needed)."""
    if len(cache) >= size:
        cache.pop(next(iter(cache)))
    cache[key] = value


def _with_suffix(messages: Sequence[Message], suffix: str) -> tuple[Message, ...]:
    for position, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            if message.text.endswith(suffix):
                return tuple(messages)
            updated = SystemMessage(f"{message.text}\n{suffix}", metadata=message.metadata)
            return (*messages[:position], updated, *messages[position + 1 :])
    return (SystemMessage(suffix), *messages)


class ToolSearchToolCallingAdvisor(ToolCallingAdvisor):
    """The tool loop with tool search: ``ToolSearchToolCallingAdvisor()`` or ``.builder()...build()``.

    Put it in the chain (``.default_advisors(...)``) in place of the auto-registered loop.
    """

    def __init__(
        self,
        tool_calling_manager: ToolCallingManager | None = None,
        *,
        options: ToolSearchOptions | None = None,
        extensions: Sequence[ToolLoopExtension] = (),
        nonce_ledger: NonceLedger | None = None,
        order: int = AdvisorOrder.TOOL_CALLING,
        name: str = "ToolSearchToolCallingAdvisor",
    ) -> None:
        self.search = ToolSearchExtension(options)
        super().__init__(tool_calling_manager, extensions=extensions, nonce_ledger=nonce_ledger, order=order, name=name)

    @staticmethod
    def builder() -> ToolSearchToolCallingAdvisorBuilder:
        return ToolSearchToolCallingAdvisorBuilder()

    @property
    def options(self) -> ToolSearchOptions:
        return self.search.options

    def do_before_call(self, request: ChatClientRequest, state: LoopState) -> Any:
        return self.search.do_before_call(request, state)

    def do_finalize_loop(self, response: ChatClientResponse, state: LoopState) -> Any:
        return self.search.do_finalize_loop(response, state)


class ToolSearchToolCallingAdvisorBuilder:
    """Fluent options for :class:`ToolSearchToolCallingAdvisor`."""

    def __init__(self) -> None:
        self._options = ToolSearchOptions()
        self._manager: ToolCallingManager | None = None
        self._extensions: tuple[ToolLoopExtension, ...] = ()
        self._nonce_ledger: NonceLedger | None = None

    def index(self, factory: IndexFactory) -> Self:
        """``Bm25Index`` (default), ``RegexIndex``, ``EmbeddingIndex.factory(embed)`` or your own."""
        return self._set(index=factory)

    def top_k(self, k: int) -> Self:
        return self._set(top_k=k)

    def min_score_ratio(self, ratio: float) -> Self:
        return self._set(min_score_ratio=ratio)

    def latest_search_only(self, latest: bool = True) -> Self:
        return self._set(accumulate=not latest)

    def always_on(self, *names: str) -> Self:
        return self._set(always_on=self._options.always_on | frozenset(names))

    def bypass_below_tokens(self, tokens: int) -> Self:
        """``0`` always searches."""
        return self._set(bypass_below_tokens=tokens)

    def token_counter(self, counter: Callable[[str], int]) -> Self:
        return self._set(token_counter=counter)

    def search_tool(self, name: str | None = None, description: str | None = None) -> Self:
        current = self._options
        return self._set(tool_name=name or current.tool_name, tool_description=description or current.tool_description)

    def system_suffix(self, suffix: str | None) -> Self:
        return self._set(system_suffix=suffix)

    def tool_calling_manager(self, manager: ToolCallingManager) -> Self:
        self._manager = manager
        return self

    def extensions(self, *extensions: ToolLoopExtension) -> Self:
        self._extensions = (*self._extensions, *extensions)
        return self

    def nonce_ledger(self, ledger: NonceLedger) -> Self:
        self._nonce_ledger = ledger
        return self

    def build(self) -> ToolSearchToolCallingAdvisor:
        return ToolSearchToolCallingAdvisor(
            self._manager, options=self._options, extensions=self._extensions, nonce_ledger=self._nonce_ledger
        )

    def _set(self, **changes: Any) -> Self:
        self._options = replace(self._options, **changes)
        return self
