"""The fluent client: ``client.prompt().system(..).user(..).tools(..).call().content()``.

A ``ChatClient`` holds defaults; ``prompt()`` starts a frozen request spec from them and every
fluent call returns a new spec, so a spec can be shared and branched. ``call()``, ``stream()``,
``acall()`` and ``astream()`` are lazy: the terminal method (``content()``, ``chat_response()``,
...) builds the request and runs it through the advisor chain, each time it is called.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, overload

from typing_extensions import Self

import chatclient._builders as built

from ._chain import ComposedChains, HandlerT
from ._context_keys import check_conversation_id
from ._display import Code, clip, html_code, md_code
from ._model_ref import chat_model_from
from ._option_keywords import options_class_of, options_from_keywords
from .advisor import Advisor, ChatClientRequest, ChatClientResponse, ContextKeys, ToolAdvisor
from .errors import ConfigurationError
from .messages import MediaPart, Message, SystemMessage, UserMessage
from .model import ChatModel
from .observation import NO_OBSERVERS, ChatObserver, Observers
from .options import ChatOptions, ToolCallingChatOptions
from .prompt import Prompt
from .response_spec import (
    AsyncCallResponseSpec,
    AsyncStreamResponseSpec,
    CallResponseSpec,
    StreamResponseSpec,
)
from .responses import Usage
from .templates import TemplateRenderer, render_template
from .tools.callback import ToolCallback, ToolCallbackProvider
from .tools.resolve import ToolLike, aresolve_providers, check_unique, resolve_providers, split_tools
from .usage import UsageTotals, UsageTracker, usage_minus

if TYPE_CHECKING:
    from advisors.tool_calling import ToolCallingAdvisor, ToolLoopExtension

    from .durable import TurnContinuation, UsageBudget, UsageLimits
    from .pending.state import AsyncPendingToolCallStore, PendingToolCallStore, StoredPendingToolCalls
    from .response_spec import _AsyncPrepare
    from .tools.confirmation import PendingToolCalls, ToolCallDecisions
    from .tools.rules import ApprovalHandler, Approvals, ArgumentsPredicate

__all__ = ["ChatClient", "ChatClientBuilder", "ChatClientRequestSpec"]


def _words(user: str | None) -> str | None:
    """The person's words given with a resume: a non-blank string, or none."""
    if user is None:
        return None
    if not isinstance(user, str) or not user.strip():
        raise ConfigurationError(f"resume(user=...) takes the person's message as non-blank text, not {user!r}")
    return user


@dataclass(slots=True)
class PreparedRequest:
    """One run of a spec: the request and its sorted chain, before dynamic tool sources are asked.

    Not changed once made. Not frozen: a slotted class sets its fields with plain stores, which a
    frozen one (even through :func:`~chatclient._trusted.fast_frozen`) cannot, on every request.

    ``resolve``/``aresolve`` ask the providers once, on the thread or loop that runs the request,
    and return the request with their tools added; the set then holds for the whole turn.
    """

    request: ChatClientRequest
    chain: Sequence[Advisor]
    providers: tuple[ToolCallbackProvider, ...]
    observers: Observers | None
    chains: ComposedChains | None = None
    """The client's composed chains, reused when nothing observes the request."""
    usage_tracker: UsageTracker | None = None
    resumed_usage: Usage | None = None
    """On a resume: the usage the paused reply already carried (counted when it paused)."""
    tool_options: ProvidedToolOptions | None = None
    """The client's options-with-provided-tools cache (see :class:`ProvidedToolOptions`)."""

    def composed(self, compose: Callable[..., HandlerT], model: ChatModel) -> HandlerT:
        """This request's chain as one handler in the mode ``compose`` builds (``compose_call``, ...)."""
        if self.observers or self.chains is None:
            return compose(self.chain, model, self.observers)
        return self.chains.get(compose, self.chain, model)

    def record(self, response: ChatClientResponse) -> None:
        """Add the final reply's usage to the client's running total (a resume adds only its own rounds)."""
        tracker = self.usage_tracker
        if tracker is None:
            return
        chat = response.chat_response
        usage = chat.metadata.usage if chat is not None else None
        if usage is not None and self.resumed_usage is not None:
            usage = usage_minus(usage, self.resumed_usage)
        model = chat.metadata.model if chat is not None else None
        options = self.request.prompt.options
        if model is None and options is not None:
            model = options.model
        tracker.add(usage, model)

    def resolve(self) -> ChatClientRequest:
        return self._with(resolve_providers(self._sources())) if self.providers else self.request

    async def aresolve(self) -> ChatClientRequest:
        return self._with(await aresolve_providers(self._sources())) if self.providers else self.request

    def _sources(self) -> tuple[ToolCallbackProvider, ...]:
        """The providers to ask; on a resume, past their caches where they can (``tools.resume``)."""
        if ContextKeys.RESUME not in self.request.context:
            return self.providers
        from .tools.resume import fresh_sources

        return fresh_sources(self.providers)

    def _with(self, provided: tuple[ToolCallback, ...]) -> ChatClientRequest:
        request = self.request
        options = request.prompt.options
        assert isinstance(options, ToolCallingChatOptions)
        cache = self.tool_options
        merged = cache.merged(options, provided) if cache is not None else _with_tools(options, provided)
        prompt = built.prompt(messages=request.prompt.messages, options=merged)  # both are models
        return ChatClientRequest(prompt, request.context)


def _with_tools(options: ToolCallingChatOptions, provided: tuple[ToolCallback, ...]) -> ToolCallingChatOptions:
    callbacks = check_unique((*options.tool_callbacks, *provided))
    return options.model_copy(update={"tool_callbacks": callbacks})


_MergedOptions = tuple[
    ChatOptions | None, ChatOptions | None, Mapping[str, Any], Mapping[str, Any], tuple[ToolCallback, ...], ChatOptions
]
"""What a request's options were merged from (the model's, its own, its tool context, the client's
tool context, its tools) and the result."""


def _same(a: tuple[ToolCallback, ...], b: tuple[ToolCallback, ...]) -> bool:
    """The same tools, object for object (not merely equal ones)."""
    return a is b or (len(a) == len(b) and all(map(operator.is_, a, b)))


class ProvidedToolOptions:
    """A request's options with its providers' tools added, kept for the last options and tool set
    seen: a provider that lists once hands back the same tools on every request (an MCP provider's
    cached set), so the merge (a name check over every tool, an options copy) is not redone per
    request, and the tool loop finds the same tool set each round and each request."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: tuple[ToolCallingChatOptions, tuple[ToolCallback, ...], ToolCallingChatOptions] | None = None

    def merged(self, options: ToolCallingChatOptions, provided: tuple[ToolCallback, ...]) -> ToolCallingChatOptions:
        last = self.last
        if last is not None and last[0] is options and _same(last[1], provided):
            return last[2]
        merged = _with_tools(options, provided)
        self.last = (options, provided, merged)
        return merged


@dataclass(frozen=True)
class ChatClientRequestSpec:
    """One request being described. Immutable: each method returns a new spec.

    ``system``/``user`` replace the client's defaults; ``messages``, ``tools``, ``advisors``,
    ``tool_loop_extensions`` and ``observers`` add to them; ``tool_context`` and advisor params merge
    (this request's keys win); ``options`` merge field by field over the client's and the model's
    defaults. Tools are resolved when they are given (``tools(...)``), so a spec reused for many
    requests pays for it once; tool providers are asked once per request.
    """

    client: ChatClient
    system_text: str | None = None
    user_text: str | None = None
    user_media: tuple[MediaPart, ...] = ()
    message_list: tuple[Message, ...] = ()
    tool_callbacks: tuple[ToolCallback, ...] = ()
    tool_providers: tuple[ToolCallbackProvider, ...] = ()
    default_tool_context: Mapping[str, Any] = field(default_factory=dict)
    """The client's default tool context; ``tool_context_map`` is this request's own."""
    tool_context_map: Mapping[str, Any] = field(default_factory=dict)
    advisor_list: tuple[Advisor, ...] = ()
    advisor_params: Mapping[str, Any] = field(default_factory=dict)
    chat_options: ChatOptions | None = None
    resume_state: tuple[PendingToolCalls | StoredPendingToolCalls | TurnContinuation, ToolCallDecisions] | None = None
    usage_budget: UsageBudget | None = None
    resume_words: str | None = None
    approvals: Approvals | None = None
    extension_list: tuple[ToolLoopExtension, ...] = ()
    observer_set: Observers = NO_OBSERVERS
    system_params: Mapping[str, Any] | None = None
    """Set when ``system_text`` is a template (``system(text, params=...)``), rendered when the request is built."""
    user_params: Mapping[str, Any] | None = None
    renderer: TemplateRenderer | None = None
    """Renders the templates (Spring's ``{name}`` syntax when unset)."""

    # ------------------------------------------------------------------ fluent methods

    def system(self, text: str, *, params: Mapping[str, Any] | None = None) -> ChatClientRequestSpec:
        """The system text; with ``params`` it is a template (``"You are {role}"``, see :mod:`chatclient.templates`)."""
        if params is None and self.system_params is None:
            return self._copy(system_text=text)
        return self._copy(system_text=text, system_params=_params(params, "system"))

    def user(
        self, text: str, *, params: Mapping[str, Any] | None = None, media: Sequence[MediaPart] = ()
    ) -> ChatClientRequestSpec:
        """The user's text, with any images and documents to send with it (``ImagePart``, ``FilePart``).
        With ``params`` the text is a template (``"Tell me about {topic}"``), rendered when the request is
        built: a parameter missing from ``params``, or one it does not use, is a ``ConfigurationError`` then."""
        if params is None and self.user_params is None:
            return self._copy(user_text=text, user_media=tuple(media) if media else ())
        return self._copy(user_text=text, user_media=tuple(media) if media else (), user_params=_params(params, "user"))

    def template_renderer(self, renderer: TemplateRenderer) -> ChatClientRequestSpec:
        """How this request's templates are rendered (e.g. ``JinjaRenderer()``); Spring's ``{name}`` by default."""
        if not isinstance(renderer, TemplateRenderer):
            raise TypeError(f"template_renderer() takes an object with render(template, params), got {renderer!r}")
        return replace(self, renderer=renderer)

    def _copy(self, **changes: Any) -> ChatClientRequestSpec:
        """``dataclasses.replace`` for the methods every request calls (``client.prompt("...")`` is
        ``user``): the fields are copied as they are, without ``replace``'s field walk and frozen
        ``__init__`` (16 ``object.__setattr__`` calls). Only for fields whose values need no check."""
        copy = object.__new__(ChatClientRequestSpec)
        object.__setattr__(copy, "__dict__", {**self.__dict__, **changes})
        return copy

    def messages(self, *messages: Message | Sequence[Message]) -> ChatClientRequestSpec:
        """Conversation messages placed after the system text and before the user text."""
        flat: list[Message] = []
        for item in messages:
            flat.extend(item if isinstance(item, Sequence) else (item,))
        return replace(self, message_list=(*self.message_list, *flat))

    def tools(self, *tools: ToolLike) -> ChatClientRequestSpec:
        """``@tool`` functions, objects with ``@tool`` methods, ``ToolCallback``s, providers (sync
        or async, asked once per request)."""
        callbacks, providers = split_tools(tools)
        return replace(
            self,
            tool_callbacks=check_unique((*self.tool_callbacks, *callbacks)) if callbacks else self.tool_callbacks,
            tool_providers=(*self.tool_providers, *providers),
        )

    def tool_context(self, context: Mapping[str, Any] | None = None, /, **values: Any) -> ChatClientRequestSpec:
        """Values handed to tools that take a ``ToolContext``; merged over the client's default
        context and the options' ``tool_context`` (these keys win)."""
        return replace(self, tool_context_map={**self.tool_context_map, **(context or {}), **values})

    def advisors(self, *advisors: Advisor, params: Mapping[str, Any] | None = None) -> ChatClientRequestSpec:
        """Add advisors to the chain and/or values to the request context (``params``)."""
        return replace(
            self,
            advisor_list=(*self.advisor_list, *advisors),
            advisor_params={**self.advisor_params, **(params or {})},
        )

    def conversation(self, conversation_id: str) -> ChatClientRequestSpec:
        """The conversation this request belongs to: memory advisors (``chatclient.memory``) load
        and store its history under this id."""
        return self.advisors(params={ContextKeys.CONVERSATION_ID: check_conversation_id(conversation_id)})

    def tool_loop_extensions(self, *extensions: ToolLoopExtension) -> ChatClientRequestSpec:
        """Hooks for this request's tool loop, after the loop's own (see ``ToolLoopExtension``)."""
        return replace(self, extension_list=(*self.extension_list, *extensions))

    def observers(self, *observers: ChatObserver) -> ChatClientRequestSpec:
        """Observers of this request, after the client's (see :mod:`chatclient.observation`)."""
        return replace(self, observer_set=Observers((*self.observer_set.observers, *observers)))

    @overload
    def options(self, options: ChatOptions, /) -> ChatClientRequestSpec: ...

    @overload
    def options(
        self,
        options: ChatOptions | None = None,
        /,
        *,
        model: str | None = ...,
        temperature: float | None = ...,
        max_tokens: int | None = ...,
        top_p: float | None = ...,
        top_k: int | None = ...,
        stop_sequences: Sequence[str] | None = ...,
        frequency_penalty: float | None = ...,
        presence_penalty: float | None = ...,
        timeout: float | None = ...,
        tool_choice: str | None = ...,
        tool_context: Mapping[str, Any] = ...,
        **provider_options: Any,
    ) -> ChatClientRequestSpec: ...

    def options(self, options: ChatOptions | None = None, /, **keywords: Any) -> ChatClientRequestSpec:
        """Options merged field by field over the client's: an options object, keywords
        (``temperature=0.2``, checked against the model's own options class), or both (keywords win)."""
        merged = self.chat_options
        if options is not None:
            merged = options.merged_over(merged)
        if keywords:
            options_class = options_class_of(self.client._model.default_options)
            merged = options_from_keywords(options_class, keywords, "options").merged_over(merged)
        return replace(self, chat_options=merged)

    def timeout(self, seconds: float | None) -> ChatClientRequestSpec:
        """Bound each model round of this request to ``seconds``, retries included, and each batch of its
        tool calls too (``ChatOptions.timeout``)."""
        return self.options(ChatOptions(timeout=seconds))

    def resume(
        self, pending: PendingToolCalls, decisions: ToolCallDecisions, *, user: str | None = None
    ) -> ChatClientRequestSpec:
        """Continue a turn that paused for confirmation, with a decision per paused call.

        ``pending`` must come from the application's own storage (a ``PendingToolCallStore`` hands
        each state out once; ``unseal`` verifies a state that went through a client), never from
        what a client request claims. A state is resumed once: a second resume of the same state
        raises ``PendingStateReusedError`` and runs nothing. The conversation is the paused one:
        this request's system and user texts and messages are not added, and advisors outside the
        loop see the prompt the turn began with. The decided calls run first (allowed ones
        concurrently), then the loop goes on to the answer; it is the same turn, with the same id.
        Decisions an approver may not make raise ``ToolCallUnauthorizedError`` before anything runs
        and the state may be resumed again; a state already taken from its store is then gone from
        it, so resume stored states with :meth:`resume_from`.

        ``user``: what the person said with the decisions ("Book the 9:40 instead"): a user message
        after the calls' results, in the same turn, which the model reads next and memory stores.
        """
        return replace(self, resume_state=(pending, decisions), resume_words=_words(user))

    def resume_from(
        self,
        store: PendingToolCallStore | AsyncPendingToolCallStore,
        state_id: str,
        decisions: ToolCallDecisions,
        *,
        after_crash: bool = False,
        user: str | None = None,
    ) -> ChatClientRequestSpec:
        """As :meth:`resume`, for a state saved in ``store`` under ``state_id``: the state is taken
        from the store only after the decisions passed every check — they fit the reply, and each
        approver may decide (see ``ToolCallAuthorizer``) — so a refused decision
        (``ToolCallUnauthorizedError``, nothing ran) leaves it there for the right person. Of several
        resumes of one id, the store's atomic take lets exactly one run; the others raise
        ``PendingStateNotFoundError`` and run nothing. An async store (``AsyncPendingToolCallStore``)
        is peeked at and taken with ``await`` on the request's own loop, so resume from it with
        ``acall()``/``astream()``; ``call()``/``stream()`` raise ``ConfigurationError`` before anything runs.

        A store that keeps a journal (every built-in one) records the turn's progress on the state:
        the state stays until the turn completes, so the same ``resume_from`` after a failure continues
        the turn (same decisions required; no tool runs again; of concurrent retries one wins).
        ``after_crash=True`` takes over a state whose tools were started by a process that is gone:
        those calls are reported to the model as interrupted, outcome unknown (see docs/durable.md).
        ``user``: the person's words, as in :meth:`resume`.
        """
        if not callable(getattr(store, "peek", None)):
            raise ConfigurationError(
                f"{type(store).__name__} has no peek(state_id): resume_from reads the state before it takes it, "
                "so the store must implement PendingToolCallStore.peek"
            )
        from .pending.state import StoredPendingToolCalls, check_state_id

        check_state_id(state_id)
        source = StoredPendingToolCalls(store, state_id, after_crash)
        return replace(self, resume_state=(source, decisions), resume_words=_words(user))

    def continue_turn(self, continuation: TurnContinuation) -> ChatClientRequestSpec:
        """Finish a turn that stopped after tools ran (``err.continuation`` of the error that stopped
        it): the next model round reads exactly the recorded results and no tool runs again. As with
        a resume, this request's texts and messages are not added; pass the same tools again."""
        from .durable import TurnContinuation as _Continuation

        if not isinstance(continuation, _Continuation):
            raise ConfigurationError(
                f"continue_turn() takes an error's continuation, not {type(continuation).__name__}"
            )
        if continuation.stored is not None:
            assert continuation.decisions is not None
            return replace(self, resume_state=(continuation.stored, continuation.decisions))
        from .tools.confirmation import ToolCallDecisions as _Decisions

        return replace(self, resume_state=(continuation, _Decisions()))

    def approval_handler(self, handler: ApprovalHandler, *, timeout: float | None = None) -> ChatClientRequestSpec:
        """Decide gated calls in-process: ``handler(pending)`` (sync or ``async def``) returns the
        decisions and the turn goes on without a pause (``None``: pause as usual). Its decisions are
        checked, audited and redeemed as a resume's; one that raises or outlasts ``timeout`` seconds
        denies the gated calls, saying why. See ``chatclient.tools.rules``."""
        from .tools.rules import Approvals as _Approvals

        if not callable(handler):
            raise ConfigurationError(f"approval_handler takes a callable, not {type(handler).__name__}")
        if timeout is not None and not timeout > 0:
            raise ConfigurationError(f"approval_handler timeout must be positive seconds or None, got {timeout!r}")
        return replace(self, approvals=(self.approvals or _Approvals()).with_handler(handler, timeout))

    def always_allow(
        self,
        tool: str,
        *,
        when: ArgumentsPredicate | None = None,
        arguments: Mapping[str, Any] | None = None,
        approver: object | None = None,
    ) -> ChatClientRequestSpec:
        """A standing rule: calls to ``tool`` (a name or a pattern such as ``lookup_*``) whose arguments
        match (``arguments``: equal values; ``when``: a predicate over them) run without a pause, as
        ``approver``'s decision (checked by the authorizer every time it applies)."""
        return self._rule(tool, True, when, arguments, approver, None)

    def always_deny(
        self,
        tool: str,
        *,
        when: ArgumentsPredicate | None = None,
        arguments: Mapping[str, Any] | None = None,
        message: str | None = None,
        approver: object | None = None,
    ) -> ChatClientRequestSpec:
        """A standing rule: matching calls to ``tool`` are denied without a pause; the model reads ``message``."""
        return self._rule(tool, False, when, arguments, approver, message)

    def _rule(
        self,
        tool: str,
        allow: bool,
        when: ArgumentsPredicate | None,
        arguments: Mapping[str, Any] | None,
        approver: object | None,
        message: str | None,
    ) -> ChatClientRequestSpec:
        from .tools.rules import ApprovalRule
        from .tools.rules import Approvals as _Approvals

        if not isinstance(tool, str) or not tool:
            raise ConfigurationError(f"a rule names a tool (or a pattern), not {tool!r}")
        if when is not None and not callable(when):
            raise ConfigurationError(f"when= takes a predicate over the call's arguments, not {when!r}")
        rule = ApprovalRule.made_by(
            tool,
            allow,
            approver,
            when=when,
            arguments=dict(arguments) if arguments is not None else None,
            message=message,
        )
        return replace(self, approvals=(self.approvals or _Approvals()).with_rules(rule))

    def approval_rules(self, rules: Any) -> ChatClientRequestSpec:
        """Where conversations keep their rules (``ConversationRules(repository)``, or the async
        ``AsyncConversationRules``): read when a reply would pause, written by ``remember=`` decisions."""
        from .tools.rules import Approvals as _Approvals

        if not callable(getattr(rules, "list", None)) or not callable(getattr(rules, "add", None)):
            raise ConfigurationError(f"approval_rules takes a ConversationRules, not {type(rules).__name__}")
        return replace(self, approvals=(self.approvals or _Approvals()).with_store(rules))

    def usage_limits(
        self, per_turn: UsageLimits | None = None, *, per_conversation: UsageLimits | None = None
    ) -> ChatClientRequestSpec:
        """Budgets checked before each model round of this request's turn; a breach raises
        ``UsageLimitExceededError`` whose ``continuation`` finishes the turn under a raised budget.
        ``per_conversation`` counts the conversation's stored usage too (it needs a memory advisor)."""
        from .durable import UsageBudget as _Budget

        return replace(self, usage_budget=_Budget(per_turn, per_conversation))

    # ------------------------------------------------------------------ terminals (lazy)

    def call(self) -> CallResponseSpec:
        return CallResponseSpec(self.client._model, self._prepare)

    def stream(self) -> StreamResponseSpec:
        return StreamResponseSpec(self.client._model, self._prepare)

    def acall(self) -> AsyncCallResponseSpec:
        return AsyncCallResponseSpec(self.client._model, self._prepare, self._async_prepare())

    def astream(self) -> AsyncStreamResponseSpec:
        return AsyncStreamResponseSpec(self.client._model, self._prepare, self._async_prepare())

    # ------------------------------------------------------------------ assembly

    def _async_prepare(self) -> _AsyncPrepare | None:
        """:meth:`_aprepare` when this spec resumes from an async pending store; else ``None``: every
        other async request is prepared by :meth:`_prepare` directly, with no coroutine per call."""
        if self.resume_state is None:
            return None
        from .pending.state import StoredPendingToolCalls

        source = self.resume_state[0]
        return self._aprepare if isinstance(source, StoredPendingToolCalls) and source.is_async else None

    async def _aprepare(
        self, extra_context: Mapping[str, Any] | None = None, extra_advisors: Sequence[Advisor] = ()
    ) -> PreparedRequest:
        """:meth:`_prepare` on the request's loop: the state in the async pending store is peeked at
        with ``await`` here (the loop peeks again and takes it, awaited, in the same flow)."""
        from .pending.state import StoredPendingToolCalls

        assert self.resume_state is not None
        source = self.resume_state[0]
        assert isinstance(source, StoredPendingToolCalls)
        return self._prepare(extra_context, extra_advisors, peeked=await source.apeek())

    def _prepare(  # noqa: C901 (every request runs it: its steps stay inline, no call per step)
        self,
        extra_context: Mapping[str, Any] | None = None,
        extra_advisors: Sequence[Advisor] = (),
        *,
        peeked: PendingToolCalls | None = None,
    ) -> PreparedRequest:
        """The request and the sorted advisor chain for one run (``extra_advisors``: this run's own,
        e.g. ``entity(T, retries=N)``'s validation; each replaces a registered advisor of its class,
        so two validators never nest). ``peeked``: a resumed state already read from an async store."""
        context = {**self.advisor_params, **(extra_context or {})}
        resumed_usage: Usage | None = None
        if self.resume_state is not None:
            from .durable import TurnContinuation as _Continuation
            from .pending.state import StoredPendingToolCalls

            source = self.resume_state[0]
            context[ContextKeys.RESUME] = self.resume_state
            messages: Sequence[Message]
            if isinstance(source, _Continuation):
                messages, resumed_usage = source.progress.history, source.progress.usage
                if source.conversation_id:
                    from .tools.resume import bind_conversation

                    bind_conversation(context, source.conversation_id)
            else:
                if isinstance(source, StoredPendingToolCalls):
                    pending = peeked if peeked is not None else source.peek()
                else:
                    pending = source
                messages = pending.turn_request
                resumed_usage = pending.usage
                if pending.conversation_id:  # paused under a memory advisor: resumed in that conversation only
                    from .tools.resume import bind_resume

                    bind_resume(context, pending)
        else:
            messages = self._messages()
        if self.extension_list:
            context[ContextKeys.TOOL_LOOP_EXTENSIONS] = self.extension_list
        if self.usage_budget is not None:
            context[ContextKeys.USAGE_BUDGET] = self.usage_budget
        if self.approvals is not None:
            context[ContextKeys.APPROVALS] = self.approvals
        if self.resume_words is not None:
            context[ContextKeys.RESUME_USER] = self.resume_words
        observers = self.observer_set
        if observers:
            context[ContextKeys.OBSERVERS] = observers
        prompt = built.prompt(messages=tuple(messages), options=self._options())  # both are models
        advisors = self.advisor_list
        if extra_advisors:
            replaced = {type(a) for a in extra_advisors}
            advisors = (*(a for a in advisors if type(a) not in replaced), *extra_advisors)
        chain = self.client._chain_for(advisors, context)
        if self.resume_state is not None and not any(isinstance(a, ToolAdvisor) for a in chain):
            raise ConfigurationError("resume() needs the tool-calling advisor in the chain, but it is switched off")
        request = ChatClientRequest(prompt, context)
        client = self.client
        providers = self.tool_providers
        return PreparedRequest(
            request=request,
            chain=chain,
            providers=providers,
            observers=observers or None,
            chains=client._chains,
            usage_tracker=client._usage,
            resumed_usage=resumed_usage,
            tool_options=client._tool_options if providers else None,
        )

    def _messages(self) -> list[Message]:
        messages: list[Message] = []
        if self.system_text is not None:
            system = self.system_text
            if self.system_params is not None:
                system = _rendered(system, self.system_params, self.renderer, "system")
            messages.append(SystemMessage(system))
        messages.extend(self.message_list)
        text = self.user_text
        if self.user_params is not None and text is not None:
            text = _rendered(text, self.user_params, self.renderer, "user")
        if text is not None:
            if type(text) is str and not self.user_media:  # the usual case: nothing to validate but the type
                messages.append(built.user_message(role="user", text=text, metadata={}, media=()))
            else:
                messages.append(UserMessage(text, media=self.user_media))
        if not messages:
            raise ConfigurationError("The request has no messages: give it a user or system text, or messages")
        return messages

    def _options(self) -> ChatOptions:
        """This request's options, merged once: its own over the client's over the model's, plus
        the tools and the tool context. A request that changes none of them reuses the client's
        last result (options are frozen); so does one whose own tools and options are those of the
        client's last other request (``prompt(q).tools(fn)`` per request: a ``@tool`` function gives
        the same callback each time)."""
        client = self.client
        model_defaults = client._model.default_options
        defaults = client._defaults
        chat_options, tools, context = self.chat_options, self.tool_callbacks, self.tool_context_map
        if tools is defaults.tool_callbacks and chat_options is defaults.chat_options and not context:
            cached = client._options_cache
            if cached is not None and cached[0] is model_defaults:
                return cached[1]
            merged = self._merge_options(model_defaults)
            client._options_cache = (model_defaults, merged)
            return merged
        last = client._last_options
        if (
            last is not None
            and last[0] is model_defaults
            and last[1] is chat_options
            and last[2] is context
            and last[3] is self.default_tool_context
            and _same(last[4], tools)
        ):
            return last[5]
        merged = self._merge_options(model_defaults)
        client._last_options = (model_defaults, chat_options, context, self.default_tool_context, tools, merged)
        return merged

    def _merge_options(self, model_defaults: ChatOptions | None) -> ChatOptions:
        options = self.chat_options
        if model_defaults is not None:
            options = options.merged_over(model_defaults) if options is not None else model_defaults
        existing: tuple[ToolCallback, ...] = ()
        options_context: Mapping[str, Any] = {}
        if isinstance(options, ToolCallingChatOptions):
            existing = options.tool_callbacks
            options_context = options.tool_context
        callbacks = check_unique((*existing, *self.tool_callbacks)) if existing else self.tool_callbacks
        context = {**self.default_tool_context, **options_context, **self.tool_context_map}
        tools = ToolCallingChatOptions(tool_callbacks=callbacks, tool_context=context)
        return tools.merged_over(options)


def _params(params: Mapping[str, Any] | None, role: str) -> Mapping[str, Any] | None:
    """``params`` as given (copied), checked to be a mapping of names; rendering waits for the build."""
    if params is None:
        return None
    if not isinstance(params, Mapping) or not all(isinstance(key, str) for key in params):
        raise TypeError(f"{role}(params=...) takes a mapping of parameter names to values, got {params!r}")
    return dict(params)


def _rendered(template: str, params: Mapping[str, Any], renderer: TemplateRenderer | None, role: str) -> str:
    try:
        return render_template(template, params, renderer)
    except ConfigurationError as exc:
        raise ConfigurationError(f"The {role} text: {exc}") from exc


class ChatClient:
    """Entry point. ``ChatClient.create(model)`` or ``ChatClient.builder(model)...build()``.

    A client is immutable and safe to share between threads and tasks.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        defaults: ChatClientRequestSpec | None = None,
        tool_calling_advisor: ToolCallingAdvisor | None = None,
        usage_tracker: UsageTracker | None = None,
    ) -> None:
        self._model = model if isinstance(model, ChatModel) else chat_model_from(model, {}, "ChatClient")
        spec = defaults or ChatClientRequestSpec(self)
        # The builder's tool context is the client's default; a request's own merges over it.
        self._defaults = replace(
            spec,
            client=self,
            default_tool_context={**spec.default_tool_context, **spec.tool_context_map},
            tool_context_map={},
        )
        if tool_calling_advisor is None:
            from ._layout import own_package

            with own_package("advisors"):  # a user's own top-level `advisors` would hide ours
                from advisors.tool_calling import ToolCallingAdvisor

            tool_calling_advisor = ToolCallingAdvisor()
        self._tool_calling_advisor = tool_calling_advisor
        self._solo_chain: tuple[Advisor, ...] = (tool_calling_advisor,)
        self._options_cache: tuple[ChatOptions | None, ChatOptions] | None = None
        self._last_options: _MergedOptions | None = None
        self._shared_usage = usage_tracker
        self._usage = usage_tracker if usage_tracker is not None else UsageTracker()
        self._chains = ComposedChains()
        self._tool_options = ProvidedToolOptions()

    @classmethod
    def create(cls, model: ChatModel | str, **registry_args: Any) -> ChatClient:
        """A client on ``model``: a ``ChatModel``, or a registry string such as ``"openai:gpt-4o-mini"``
        built by ``providers.create`` with ``registry_args`` (``base_url=``, ``api_key=``, ...)."""
        return cls(chat_model_from(model, registry_args, "ChatClient.create"))

    @classmethod
    def builder(cls, model: ChatModel | str, **registry_args: Any) -> ChatClientBuilder:
        """A builder of a client on ``model`` (a ``ChatModel`` or a registry string, as :meth:`create`)."""
        return ChatClientBuilder(chat_model_from(model, registry_args, "ChatClient.builder"))

    @property
    def model(self) -> ChatModel:
        return self._model

    @property
    def usage(self) -> UsageTotals:
        """The usage of every reply this client returned so far, per model (a snapshot).

        Counted when a terminal returns its final reply (a stream: when it ends); a paused turn
        counts its rounds when it pauses and its resume only the rounds after, so nothing counts
        twice. A call that raised counts nothing. Safe to read while other threads and tasks call.
        """
        return self._usage.totals()

    def reset_usage(self) -> UsageTotals:
        """Start the running total again from zero; returns the totals up to now."""
        return self._usage.reset()

    def prompt(self, content: str | Prompt | None = None) -> ChatClientRequestSpec:
        """Start a request from this client's defaults. A string is the user text; a ``Prompt``
        adds its messages and merges its options."""
        spec = self._defaults
        if isinstance(content, str):
            spec = spec.user(content)
        elif isinstance(content, Prompt):
            spec = spec.messages(content.messages)
            if content.options is not None:
                spec = spec.options(content.options)
        return spec

    def mutate(self) -> ChatClientBuilder:
        """A builder seeded with this client's defaults, to derive a different client."""
        builder = ChatClientBuilder(self._model)
        builder._spec = replace(self._defaults, client=_PENDING_CLIENT)
        builder._tool_calling_advisor = self._tool_calling_advisor
        builder._usage_tracker = self._shared_usage
        return builder

    def __repr__(self) -> str:
        return _client_repr(self)

    def _repr_markdown_(self) -> str:
        """A notebook shows the model, the default advisors (the tool loop included) and tools."""
        return _client_markdown(self)

    def _repr_html_(self) -> str:
        return _client_html(self)

    def _chain_for(self, advisors_in: Sequence[Advisor], context: Mapping[str, Any]) -> Sequence[Advisor]:
        """The sorted chain for one request: its advisors (defaults included) plus the tool loop."""
        auto = context.get(ContextKeys.TOOL_CALLING_AUTO_REGISTER, True) is not False
        if not advisors_in:  # the usual request: the tool loop alone, nothing to check or sort
            return self._solo_chain if auto else ()  # one tuple for all: its chains are found by identity
        advisors = list(advisors_in)
        tool_advisors = [a for a in advisors if isinstance(a, ToolAdvisor)]
        if len(tool_advisors) > 1:
            names = ", ".join(a.name for a in tool_advisors)
            raise ConfigurationError(
                f"At most one tool-calling advisor is allowed in a chain, found {len(tool_advisors)}: {names}"
            )
        if not tool_advisors and auto:
            advisors.append(self._tool_calling_advisor)
        advisors.sort(key=_order)  # stable: equal orders keep registration order
        return advisors


def _order(advisor: Advisor) -> int:
    return advisor.order


class ChatClientBuilder:
    """Defaults shared by every request of the client being built."""

    def __init__(self, model: ChatModel) -> None:
        self._model = chat_model_from(model, {}, "ChatClientBuilder")
        self._spec = ChatClientRequestSpec(_PENDING_CLIENT)
        self._tool_calling_advisor: ToolCallingAdvisor | None = None
        self._usage_tracker: UsageTracker | None = None

    def default_system(self, text: str, *, params: Mapping[str, Any] | None = None) -> Self:
        """The system text of every request; with ``params``, a template (see :meth:`ChatClientRequestSpec.system`)."""
        self._spec = self._spec.system(text, params=params)
        return self

    def default_user(self, text: str, *, params: Mapping[str, Any] | None = None) -> Self:
        self._spec = self._spec.user(text, params=params)
        return self

    def template_renderer(self, renderer: TemplateRenderer) -> Self:
        """How every request's templates are rendered (e.g. ``JinjaRenderer()``); Spring's ``{name}`` by default."""
        self._spec = self._spec.template_renderer(renderer)
        return self

    def default_tools(self, *tools: ToolLike) -> Self:
        self._spec = self._spec.tools(*tools)
        return self

    def default_tool_context(self, context: Mapping[str, Any] | None = None, /, **values: Any) -> Self:
        self._spec = self._spec.tool_context(context, **values)
        return self

    def default_advisors(self, *advisors: Advisor, params: Mapping[str, Any] | None = None) -> Self:
        self._spec = self._spec.advisors(*advisors, params=params)
        return self

    @overload
    def default_options(self, options: ChatOptions, /) -> Self: ...

    @overload
    def default_options(
        self,
        options: ChatOptions | None = None,
        /,
        *,
        model: str | None = ...,
        temperature: float | None = ...,
        max_tokens: int | None = ...,
        top_p: float | None = ...,
        top_k: int | None = ...,
        stop_sequences: Sequence[str] | None = ...,
        frequency_penalty: float | None = ...,
        presence_penalty: float | None = ...,
        timeout: float | None = ...,
        tool_choice: str | None = ...,
        tool_context: Mapping[str, Any] = ...,
        **provider_options: Any,
    ) -> Self: ...

    def default_options(self, options: ChatOptions | None = None, /, **keywords: Any) -> Self:
        """Options of every request: an options object, keywords checked against the model's own
        options class (``temperature=0.2``), or both (keywords win)."""
        spec = self._spec
        if options is not None:
            spec = spec.options(options)
        if keywords:
            options_class = options_class_of(self._model.default_options)
            spec = spec.options(options_from_keywords(options_class, keywords, "default_options"))
        self._spec = spec
        return self

    def default_tool_loop_extensions(self, *extensions: ToolLoopExtension) -> Self:
        """Hooks for the tool loop of every request (see ``ToolLoopExtension``)."""
        self._spec = self._spec.tool_loop_extensions(*extensions)
        return self

    def observers(self, *observers: ChatObserver) -> Self:
        """Observers of every request (see :mod:`chatclient.observation`)."""
        self._spec = self._spec.observers(*observers)
        return self

    def approval_handler(self, handler: ApprovalHandler, *, timeout: float | None = None) -> Self:
        """Decide gated calls in-process on every request (see ``ChatClientRequestSpec.approval_handler``)."""
        self._spec = self._spec.approval_handler(handler, timeout=timeout)
        return self

    def always_allow(
        self,
        tool: str,
        *,
        when: ArgumentsPredicate | None = None,
        arguments: Mapping[str, Any] | None = None,
        approver: object | None = None,
    ) -> Self:
        """A standing rule of this client, in code (so ``when=`` may be any predicate)."""
        self._spec = self._spec.always_allow(tool, when=when, arguments=arguments, approver=approver)
        return self

    def always_deny(
        self,
        tool: str,
        *,
        when: ArgumentsPredicate | None = None,
        arguments: Mapping[str, Any] | None = None,
        message: str | None = None,
        approver: object | None = None,
    ) -> Self:
        """A standing deny rule of this client, in code."""
        self._spec = self._spec.always_deny(tool, when=when, arguments=arguments, message=message, approver=approver)
        return self

    def approval_rules(self, rules: Any) -> Self:
        """Where conversations keep their approval rules (``ConversationRules(repository)``)."""
        self._spec = self._spec.approval_rules(rules)
        return self

    def tool_calling_advisor(self, advisor: ToolCallingAdvisor) -> Self:
        """The tool loop auto-registered into each chain (e.g. with a configured manager)."""
        self._tool_calling_advisor = advisor
        return self

    def usage_tracker(self, tracker: UsageTracker) -> Self:
        """Count this client's usage in ``tracker``, e.g. one total shared by several clients
        (a client derived with ``mutate()`` shares it too); by default each client has its own."""
        self._usage_tracker = tracker
        return self

    def build(self) -> ChatClient:
        return ChatClient(
            self._model,
            defaults=self._spec,
            tool_calling_advisor=self._tool_calling_advisor,
            usage_tracker=self._usage_tracker,
        )


class _PendingClient:
    """Stands in for the client while a builder collects defaults; replaced on ``build()``."""


_PENDING_CLIENT: Any = _PendingClient()


# ---------------------------------------------------------------------------- rendering


def _model_label(client: ChatClient) -> tuple[str, str | None]:
    model = client.model
    options = model.default_options
    return type(model).__name__, (options.model if options is not None else None)


def _client_parts(client: ChatClient) -> tuple[list[str], list[tuple[str, bool]], int, str | None]:
    """Advisor names (the tool loop included), tools with their confirmation flag, the number of
    dynamic tool providers, and the default system text."""
    defaults = client._defaults
    advisors = [a.name for a in defaults.advisor_list]
    advisors.append(client._tool_calling_advisor.name)
    tools = [(t.name, bool(t.metadata.requires_confirmation)) for t in defaults.tool_callbacks]
    return advisors, tools, len(defaults.tool_providers), defaults.system_text


def _client_repr(client: ChatClient) -> str:
    kind, name = _model_label(client)
    advisors, tools, providers, _ = _client_parts(client)
    model = f"{kind}({name!r})" if name else kind
    extra = f", tool_providers={providers}" if providers else ""
    names = ", ".join(t for t, _ in tools)
    return f"ChatClient(model={model}, advisors=[{', '.join(advisors)}], tools=[{names}]{extra})"


def _client_lines(client: ChatClient, code: Code) -> tuple[str, list[str]]:
    kind, name = _model_label(client)
    advisors, tools, providers, system = _client_parts(client)
    title = f"ChatClient on {code(kind)}" + (f" ({code(name)})" if name else "")
    gated = " (needs confirmation)"
    lines = [
        "advisors: " + ", ".join(code(a) for a in advisors),
        "tools: " + (", ".join(code(t) + (gated if g else "") for t, g in tools) or "none"),
    ]
    if providers:
        lines.append(f"tool providers: {providers}")
    if system:
        lines.append(f"system: {code(clip(system))}")
    return title, lines


def _client_markdown(client: ChatClient) -> str:
    title, lines = _client_lines(client, md_code)
    return f"**{title}**\n\n" + "\n".join(f"- {line}" for line in lines)


def _client_html(client: ChatClient) -> str:
    title, lines = _client_lines(client, html_code)
    items = "".join(f"<li>{line}</li>" for line in lines)
    return f'<div class="chatclient-client"><strong>{title}</strong><ul>{items}</ul></div>'
