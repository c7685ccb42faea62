"""The OpenTelemetry observer: GenAI spans, events and metrics from the observer seam.

Spans (§0 of the design notes): ``invoke_agent`` for each client call, stream or resume (the root);
``advisor {name}`` for each advisor invocation; ``chat {model}`` for each model call, retries
inside it as events; ``execute_tool {name}`` for each tool that runs. The confirmation pause, each
decision and the resume are events on the ``invoke_agent`` spans, and a resume's span is linked
to the paused one through the W3C trace context the pause leaves in ``PendingToolCalls.metadata``
(it travels with the pending state, so the resume may run in another process).

The cost when nothing records is one non-recording root span per call: every other point first
asks whether its parent records and does nothing else if not (metrics are recorded regardless; a
no-op instrument costs a fraction of a microsecond). Content is built only for a recording span
with capture switched on.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import chatclient.tracing._content as _content
import chatclient.tracing._names as n

from .._version import __version__
from ..errors import ConfigurationError
from ..observation import (
    QUIET,
    AdvisorInfo,
    CallInfo,
    ChatObserver,
    DecisionRecord,
    FallbackInfo,
    ModelCallInfo,
    RetrievalInfo,
    RetryInfo,
    ToolInvocationInfo,
)

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, TracerProvider

    from ..envelope import ChatClientResponse
    from ..messages import ToolResult
    from ..prompt import Prompt
    from ..responses import ChatResponse
    from ..tools.confirmation import PendingToolCalls

__all__ = ["OpenTelemetryObserver", "capture_from_env"]

_log = logging.getLogger("chatclient.tracing")

_CAPTURE_VALUES = {"NO_CONTENT": False, "SPAN_ONLY": True, "EVENT_ONLY": False, "SPAN_AND_EVENT": True}


def capture_from_env() -> bool:
    """``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``: ``SPAN_ONLY``/``SPAN_AND_EVENT`` put
    content on spans (also ``true``); unset, ``NO_CONTENT`` or ``EVENT_ONLY`` (no log events are
    emitted) keep it off; anything else keeps it off with a warning."""
    raw = os.environ.get(n.CAPTURE_ENV, "").strip()
    if not raw:
        return False
    value = _CAPTURE_VALUES.get(raw.upper())
    if value is None and raw.lower() in ("true", "false"):
        value = raw.lower() == "true"
    if value is None:
        _log.warning("%s=%r is not one of %s; content is not captured", n.CAPTURE_ENV, raw, ", ".join(_CAPTURE_VALUES))
        return False
    return value


@dataclass(slots=True)
class _Call:
    """One client call: its root span and what its metrics count."""

    span: Span | None
    started: float
    restore: tuple[Context, Context] | None
    outer: _Call | None = None
    """The call this one runs inside (a client called from a tool), current again after it."""
    inference_calls: int = 0
    tool_calls: int = 0
    paused_at: float | None = None
    conversation_id: str | None = None
    """``gen_ai.conversation.id`` for its ``chat`` spans: only the application's (never invented)."""
    entered: list[Context] = field(default_factory=list)
    """The contexts its spans made current: whichever is current when the call ends is undone
    (a stream abandoned mid-way ends the call before its inner spans)."""


@dataclass(slots=True)
class _Op:
    """A model call, advisor or tool: its span (``None`` when nothing records) and start time."""

    span: Span | None
    started: float
    restore: tuple[Context, Context] | None
    attempts: int = 1
    last_chunk: float = 0.0
    metric_attrs: dict[str, Any] = field(default_factory=dict)


_CALL: ContextVar[_Call | None] = ContextVar("chatclient_tracing_call", default=None)
_MODEL: ContextVar[_Op | None] = ContextVar("chatclient_tracing_model", default=None)


class OpenTelemetryObserver(ChatObserver):
    """GenAI traces and metrics for every request of a client.

    ``ChatClient.builder(model).observers(OpenTelemetryObserver())`` uses the global OpenTelemetry
    providers (set them with the SDK as usual; until then nothing records and the cost is one
    no-op span per call). ``tracer_provider``/``meter_provider`` inject others (tests).
    ``capture_content`` puts messages, tool definitions, arguments, results, decision reasons and
    exception messages on the spans; ``None`` reads ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.
    ``agent_name`` names the root span ``invoke_agent {agent_name}``.
    ``time_per_output_chunk`` records ``gen_ai.client.operation.time_per_output_chunk`` (the time
    between consecutive chunks of a streamed reply): off by default, as it is a record per chunk.

    Why an observer you register, and not a process-wide patch: it is explicit, per client (two
    clients may trace differently), testable with injected providers, and costs nothing for a
    client without it. ``opentelemetry-api`` is the optional extra ``chatclient[otel]``, imported
    only when this observer is built, so ``import chatclient`` stays light.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool | None = None,
        agent_name: str | None = None,
        time_per_output_chunk: bool = False,
    ) -> None:
        try:
            from opentelemetry import context, metrics, trace
            from opentelemetry.trace import SpanKind, Status, StatusCode
            from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise ConfigurationError("Tracing needs opentelemetry-api: pip install 'chatclient[otel]'") from exc
        self._context, self._trace = context, trace
        self._kinds = SpanKind
        self._status, self._error = Status, StatusCode.ERROR
        self._propagator = TraceContextTextMapPropagator()
        self._tracer = trace.get_tracer(n.INSTRUMENTATION_NAME, __version__, tracer_provider)
        self.capture_content = capture_from_env() if capture_content is None else capture_content
        self.agent_name = agent_name
        meter = metrics.get_meter(n.INSTRUMENTATION_NAME, __version__, meter_provider)
        self._m_duration = meter.create_histogram(
            n.METRIC_OPERATION_DURATION, "s", "GenAI operation duration",
            explicit_bucket_boundaries_advisory=n.DURATION_BUCKETS,
        )  # fmt: skip
        self._m_tokens = meter.create_histogram(
            n.METRIC_TOKEN_USAGE, "{token}", "Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=n.TOKEN_BUCKETS,
        )  # fmt: skip
        self._m_first_chunk = meter.create_histogram(
            n.METRIC_TIME_TO_FIRST_CHUNK, "s", "Time to the first chunk of a streamed reply",
            explicit_bucket_boundaries_advisory=n.DURATION_BUCKETS,
        )  # fmt: skip
        self.watch_chunks = time_per_output_chunk
        self._m_per_chunk = meter.create_histogram(
            n.METRIC_TIME_PER_OUTPUT_CHUNK, "s", "Time between chunks of a streamed reply, after the first",
            explicit_bucket_boundaries_advisory=n.DURATION_BUCKETS,
        )  # fmt: skip
        self._m_agent = meter.create_histogram(
            n.METRIC_AGENT_DURATION, "s", "Duration of a client call, tool loop included",
            explicit_bucket_boundaries_advisory=n.AGENT_DURATION_BUCKETS,
        )  # fmt: skip
        self._m_inference_calls = meter.create_histogram(
            n.METRIC_AGENT_INFERENCE_CALLS, "{inference_call}", "Model calls per client call",
            explicit_bucket_boundaries_advisory=n.COUNT_BUCKETS,
        )  # fmt: skip
        self._m_tool_calls = meter.create_histogram(
            n.METRIC_AGENT_TOOL_CALLS, "{tool_call}", "Tool calls per client call",
            explicit_bucket_boundaries_advisory=n.COUNT_BUCKETS,
        )  # fmt: skip
        self._m_tool = meter.create_histogram(
            n.METRIC_TOOL_DURATION, "s", "Tool execution duration",
            explicit_bucket_boundaries_advisory=n.DURATION_BUCKETS,
        )  # fmt: skip
        self._agent_attrs: dict[str, Any] = {n.AGENT_NAME: agent_name} if agent_name else {}
        self._root_name = f"{n.OP_INVOKE_AGENT} {agent_name}" if agent_name else n.OP_INVOKE_AGENT
        self._metrics_on = False
        self._active = tracer_provider is not None or meter_provider is not None
        if os.environ.get("OTEL_PYTHON_TRACER_PROVIDER"):
            trace.get_tracer_provider()  # the API sets a provider named in the environment on first use

    # ------------------------------------------------------------------ context handling

    def _enter(self, span: Span) -> tuple[Context, Context]:
        """Make ``span`` current (so nested spans, the user's included, are its children)."""
        previous = self._context.get_current()
        ours = self._trace.set_span_in_context(span, previous)
        self._context.attach(ours)
        call = _CALL.get()
        if call is not None:
            call.entered.append(ours)
        return ours, previous

    def _leave(self, restore: tuple[Context, Context] | None) -> None:
        """Put back the context from before ``_enter``, unless something else is current by now
        (a stream closed from elsewhere): never a detach that fails in a different context."""
        if restore is not None and self._context.get_current() is restore[0]:
            self._context.attach(restore[1])

    def _leave_call(self, call: _Call) -> None:
        """Put back the context from before the call, if the current one is the call's or one of
        its spans' (then those spans' own leaving finds another current context and does nothing)."""
        if call.restore is None:
            return
        current = self._context.get_current()
        if current is call.restore[0] or any(current is entered for entered in call.entered):
            self._context.attach(call.restore[1])

    def _recording_parent(self) -> bool:
        return bool(self._trace.get_current_span().is_recording())

    def _fail(self, span: Span, error: BaseException) -> None:
        span.set_attribute(n.ERROR_TYPE, error_type(error))
        span.set_status(self._status(self._error, str(error) if self.capture_content else None))

    # ------------------------------------------------------------------ client call: invoke_agent

    def is_active(self) -> bool:
        """False while no tracer or meter provider is configured (only the API's no-op proxies):
        then the client runs as if this observer were not registered. Once one is set (for good,
        the API allows it once) this stays true and each call's root span decides."""
        if not self._active:
            provider_set = getattr(self._trace, "_TRACER_PROVIDER", True) is not None
            self._active = provider_set or self._metrics_live()
        return self._active

    def _metrics_live(self) -> bool:
        """Whether the metrics go anywhere: an injected meter provider, or a global one set by now
        (the API's proxy instruments stay empty until then; once set it is set for good)."""
        if not self._metrics_on:
            self._metrics_on = getattr(self._m_agent, "_real_instrument", True) is not None
        return self._metrics_on

    def call_started(self, info: CallInfo) -> Any:
        started = time.perf_counter()
        span = self._tracer.start_span(self._root_name, kind=self._kinds.INTERNAL)
        if not span.is_recording():
            if not self._metrics_live():
                return QUIET  # the root gate: nothing records, the call runs unobserved
            call = _Call(None, started, None, _CALL.get())
        else:
            conversation_id = _conversation_id(info)
            attrs = self._agent_attributes(info)
            if conversation_id is not None:
                attrs[n.CONVERSATION_ID] = conversation_id
            span.set_attributes(attrs)
            if self.capture_content:
                span.set_attribute(n.INPUT_MESSAGES, _content.input_messages(info.prompt.messages))
            call = _Call(span, started, None, _CALL.get(), conversation_id=conversation_id)
            call.restore = self._enter(span)
        _CALL.set(call)
        return call

    def _agent_attributes(self, info: CallInfo) -> dict[str, Any]:
        attrs: dict[str, Any] = {n.OPERATION_NAME: n.OP_INVOKE_AGENT, **self._agent_attrs}
        options = info.prompt.options
        if options is not None and options.model:
            attrs[n.REQUEST_MODEL] = options.model
        attrs[n.STREAM] = info.mode in ("stream", "astream")
        return attrs

    def call_finished(
        self, token: _Call, info: CallInfo, response: ChatClientResponse | None, error: BaseException | None
    ) -> None:
        if token is QUIET:
            return
        if _CALL.get() is token:
            _CALL.set(token.outer)
        duration = time.perf_counter() - token.started
        attrs = dict(self._agent_attrs)
        span = token.span
        if span is not None:
            chat = response.chat_response if response is not None else None
            if chat is not None:
                _set_response(span, chat, self.capture_content)
            if error is not None:
                self._fail(span, error)
            self._leave_call(token)
            span.end()
        if error is not None:
            attrs[n.ERROR_TYPE] = error_type(error)
        self._m_agent.record(duration, attrs)
        self._m_inference_calls.record(token.inference_calls, self._agent_attrs)
        if token.tool_calls:
            self._m_tool_calls.record(token.tool_calls, self._agent_attrs)

    # ------------------------------------------------------------------ advisors

    def advisor_started(self, info: AdvisorInfo) -> _Op | None:
        if not self._recording_parent():
            return None
        span = self._tracer.start_span(
            f"{n.ADVISOR_SPAN_PREFIX} {info.name}",
            kind=self._kinds.INTERNAL,
            attributes={n.ADVISOR_NAME: info.name, n.ADVISOR_ORDER: info.order},
        )
        return _Op(span, 0.0, self._enter(span))

    def advisor_finished(self, token: _Op | None, info: AdvisorInfo, error: BaseException | None) -> None:
        if token is None or token.span is None:
            return
        if error is not None:
            self._fail(token.span, error)
        self._leave(token.restore)
        token.span.end()

    # ------------------------------------------------------------------ model calls: chat {model}

    def model_started(self, info: ModelCallInfo) -> _Op:
        call = _CALL.get()
        if call is not None:
            call.inference_calls += 1
        provider, api_type = provider_of(info.chat_model)
        metric_attrs: dict[str, Any] = {n.OPERATION_NAME: n.OP_CHAT, n.PROVIDER_NAME: provider}
        if info.model:
            metric_attrs[n.REQUEST_MODEL] = info.model
        started = time.perf_counter()
        if not self._recording_parent():
            return _Op(None, started, None, metric_attrs=metric_attrs)
        attrs = {**metric_attrs, **_server_attributes(info.chat_model), **_request_attributes(info.prompt)}
        if api_type:
            attrs[n.OPENAI_API_TYPE] = api_type
        if info.streaming:
            attrs[n.REQUEST_STREAM] = True
        if call is not None and call.conversation_id is not None:
            attrs[n.CONVERSATION_ID] = call.conversation_id
        if self.capture_content:
            attrs[n.INPUT_MESSAGES] = _content.input_messages(info.prompt.messages)
            callbacks = getattr(info.prompt.options, "tool_callbacks", ())
            if callbacks:
                attrs[n.TOOL_DEFINITIONS] = _content.tool_definitions(callbacks)
        name = f"{n.OP_CHAT} {info.model}" if info.model else n.OP_CHAT
        span = self._tracer.start_span(name, kind=self._kinds.CLIENT, attributes=attrs)
        op = _Op(span, started, self._enter(span), metric_attrs=metric_attrs)
        _MODEL.set(op)
        return op

    def model_first_chunk(self, token: _Op, info: ModelCallInfo) -> None:
        token.last_chunk = now = time.perf_counter()
        elapsed = now - token.started
        self._m_first_chunk.record(elapsed, token.metric_attrs)
        if token.span is not None:
            token.span.set_attribute(n.RESPONSE_TIME_TO_FIRST_CHUNK, elapsed)

    def model_chunk(self, token: _Op, info: ModelCallInfo) -> None:
        now = time.perf_counter()
        self._m_per_chunk.record(now - token.last_chunk, token.metric_attrs)
        token.last_chunk = now

    def model_finished(
        self, token: _Op, info: ModelCallInfo, response: ChatResponse | None, error: BaseException | None
    ) -> None:
        duration = time.perf_counter() - token.started
        attrs = token.metric_attrs
        if response is not None and response.metadata.model:
            attrs = {**attrs, n.RESPONSE_MODEL: response.metadata.model}
        span = token.span
        if span is not None:
            if _MODEL.get() is token:
                _MODEL.set(None)
            if response is not None:
                _set_response(span, response, self.capture_content)
            if token.attempts > 1:
                span.set_attribute(n.REQUEST_ATTEMPTS, token.attempts)
            if error is not None:
                self._fail(span, error)
            self._leave(token.restore)
            span.end()
        usage = response.metadata.usage if response is not None else None
        if usage is not None:
            self._m_tokens.record(usage.prompt_tokens, {**attrs, n.TOKEN_TYPE: "input"})
            self._m_tokens.record(usage.completion_tokens, {**attrs, n.TOKEN_TYPE: "output"})
        if error is not None:
            attrs = {**attrs, n.ERROR_TYPE: error_type(error)}
        self._m_duration.record(duration, attrs)

    def retry(self, info: RetryInfo) -> None:
        op = _MODEL.get()
        if op is None or op.span is None:
            return
        op.attempts += 1
        op.span.add_event(
            n.RETRY_EVENT,
            {n.RETRY_ATTEMPT: info.attempt, n.ERROR_TYPE: error_type(info.error), n.RETRY_WAIT: info.wait},
        )

    def fallback(self, info: FallbackInfo) -> None:
        """A fallback chain's model failed: an event on the round's chat span, naming the next model."""
        op = _MODEL.get()
        if op is None or op.span is None:
            return
        defaults = info.next.default_options
        name = defaults.model if defaults is not None else None
        model = f"{type(info.next).__name__}({name})" if name else type(info.next).__name__
        op.span.add_event(
            n.FALLBACK_EVENT,
            {n.ERROR_TYPE: error_type(info.error), n.FALLBACK_POSITION: info.position, n.FALLBACK_MODEL: model},
        )

    # ------------------------------------------------------------------ tools: execute_tool {name}

    def tool_started(self, info: ToolInvocationInfo) -> _Op | None:
        call = _CALL.get()
        if call is not None:
            call.tool_calls += 1
        if not self._recording_parent():
            return None
        attrs: dict[str, Any] = {
            n.OPERATION_NAME: n.OP_EXECUTE_TOOL,
            n.TOOL_NAME: info.name,
            n.TOOL_CALL_ID: info.call.id,
            n.TOOL_TYPE: "function",
            **self._agent_attrs,
        }
        if self.capture_content:
            attrs[n.TOOL_CALL_ARGUMENTS] = _content.to_json(_content.arguments(info.arguments))
        span = self._tracer.start_span(f"{n.OP_EXECUTE_TOOL} {info.name}", kind=self._kinds.INTERNAL, attributes=attrs)
        return _Op(span, 0.0, self._enter(span))

    def tool_finished(
        self,
        token: _Op | None,
        info: ToolInvocationInfo,
        result: str | ToolResult | None,
        error: BaseException | None,
        duration: float,
    ) -> None:
        attrs: dict[str, Any] = {n.TOOL_NAME: info.name, n.TOOL_TYPE: "function", **self._agent_attrs}
        if error is not None:
            attrs[n.ERROR_TYPE] = error_type(error)
        self._m_tool.record(duration, attrs)
        if token is None or token.span is None:
            return
        span = token.span
        if error is not None:
            self._fail(span, error)
        elif self.capture_content:
            span.set_attribute(n.TOOL_CALL_RESULT, _content.tool_result(result))
        self._leave(token.restore)
        span.end()

    # ------------------------------------------------------------------ retrieval

    def retrieval_started(self, info: RetrievalInfo) -> _Op | None:
        if not self._recording_parent():
            return None
        attrs: dict[str, Any] = {
            n.OPERATION_NAME: n.OP_RETRIEVAL,
            n.RETRIEVAL_STORE: info.store,
            n.RETRIEVAL_TOP_K: info.top_k,
            **self._agent_attrs,
        }
        if info.source:
            attrs[n.RETRIEVAL_SOURCE] = info.source
        if self.capture_content:
            attrs[n.RETRIEVAL_QUERY] = info.query
        span = self._tracer.start_span(f"{n.OP_RETRIEVAL} {info.store}", kind=self._kinds.INTERNAL, attributes=attrs)
        return _Op(span, 0.0, self._enter(span))

    def retrieval_finished(
        self, token: _Op | None, info: RetrievalInfo, documents: Sequence[Any] | None, error: BaseException | None
    ) -> None:
        if token is None or token.span is None:
            return
        span = token.span
        if error is not None:
            self._fail(span, error)
        elif documents is not None:
            span.set_attribute(n.RETRIEVAL_DOCUMENT_IDS, [str(getattr(d, "id", "")) for d in documents])
            span.set_attribute(n.RETRIEVAL_SCORES, [float(getattr(d, "score", None) or 0.0) for d in documents])
        self._leave(token.restore)
        span.end()

    # ------------------------------------------------------------------ confirmation

    def turn_paused(self, pending: PendingToolCalls) -> Mapping[str, str] | None:
        call = _CALL.get()
        span = call.span if call is not None else None
        if span is None:
            return None
        awaiting = list(pending.awaiting_ids)
        attrs: dict[str, Any] = {
            n.CONFIRMATION_ID: confirmation_id(pending),
            n.CONFIRMATION_AWAITING: awaiting,
            n.CONFIRMATION_HELD: [c.id for c in pending.calls],
            n.CONFIRMATION_TOOLS: [c.name for c in pending.calls],
        }
        if pending.expires_at is not None:
            attrs[n.CONFIRMATION_EXPIRES_AT] = pending.expires_at
        span.add_event(n.EVENT_REQUESTED, attrs)
        span.set_attributes(
            {
                n.CONFIRMATION_STATE: "awaiting",
                n.CONFIRMATION_ID: attrs[n.CONFIRMATION_ID],
                n.CONFIRMATION_AWAITING: awaiting,
                n.CONFIRMATION_HELD: attrs[n.CONFIRMATION_HELD],
            }
        )
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier, context=self._trace.set_span_in_context(span))
        return carrier

    def turn_resumed(self, pending: PendingToolCalls) -> None:
        call = _CALL.get()
        span = call.span if call is not None else None
        if call is None or span is None:
            return
        call.paused_at = pending.created_at
        paused = self._trace.get_current_span(self._propagator.extract(pending.metadata)).get_span_context()
        if paused.is_valid:
            span.add_link(paused, {n.LINK_TYPE: "resume"})
        span.set_attributes({n.CONFIRMATION_ID: confirmation_id(pending), n.CONFIRMATION_STATE: "resumed"})
        span.add_event(n.EVENT_RESUMED, {n.CONFIRMATION_ID: confirmation_id(pending)})

    def decision_made(self, record: DecisionRecord) -> None:
        call = _CALL.get()
        span = call.span if call is not None else None
        if call is None or span is None:
            return
        attrs: dict[str, Any] = {
            n.TOOL_CALL_ID: record.call_id,
            n.TOOL_NAME: record.tool,
            n.CONFIRMATION_DECISION: _decision(record),
            n.CONFIRMATION_SOURCE: "explicit" if record.decision is not None else "policy",
        }
        if record.approver_id:
            attrs[n.CONFIRMATION_APPROVER] = record.approver_id
        if call.paused_at is not None:
            attrs[n.CONFIRMATION_WAIT] = max(record.at - call.paused_at, 0.0)
        if record.refusal:
            attrs[n.CONFIRMATION_REFUSAL] = record.refusal
        if record.reason and self.capture_content:
            attrs[n.CONFIRMATION_REASON] = record.reason
        span.add_event(n.EVENT_DECIDED, attrs)


def _conversation_id(info: CallInfo) -> str | None:
    """The conversation id the application gave the request (``spec.conversation(id)``), if any."""
    value = info.context.get(n.CONVERSATION_CONTEXT_KEY)
    return value if isinstance(value, str) and value else None


def _decision(record: DecisionRecord) -> str:
    if record.outcome == "denied":
        return "deny"
    if record.outcome == "refused":
        return "refused"
    decision = record.decision
    return "edit" if decision is not None and decision.arguments is not None else "allow"


def confirmation_id(pending: PendingToolCalls) -> str:
    """An opaque handle for the pending state in traces: a hash of its nonce (never the nonce,
    which a resume redeems, nor the digest)."""
    return hashlib.sha256(f"chatclient.confirmation:{pending.nonce}".encode()).hexdigest()[:16]


def error_type(error: BaseException) -> str:
    """``error.type``: the exception's qualified type (low cardinality); a stream abandoned by its
    consumer or a cancelled task is ``cancelled``."""
    if isinstance(error, GeneratorExit) or type(error).__name__ == "CancelledError":
        return "cancelled"
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


_PROVIDERS = (
    ("providers.openai_responses", "openai", "responses"),
    ("providers.openai", "openai", "chat_completions"),
    ("providers.anthropic", "anthropic", None),
    ("providers.ollama", "ollama", None),
)


def provider_of(model: object) -> tuple[str, str | None]:
    """``gen_ai.provider.name`` (and ``openai.api.type``) of a model: its ``provider_name``
    attribute if it has one (a third-party provider, an OpenAI-compatible endpoint), else from the
    package of chatclient's own providers, else ``unknown``."""
    named = getattr(model, "provider_name", None)
    if isinstance(named, str) and named:
        return named, None
    module = type(model).__module__
    for prefix, provider, api_type in _PROVIDERS:
        if module == prefix or module.startswith(prefix + "."):
            return provider, api_type
    return "unknown", None


def _server_attributes(model: object) -> dict[str, Any]:
    """``server.address``/``server.port`` from a model's public ``base_url`` (no credentials: only
    the host and port are kept)."""
    base_url = getattr(model, "base_url", None)
    if not isinstance(base_url, str):
        return {}
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(base_url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return {}
    return {n.SERVER_ADDRESS: host, n.SERVER_PORT: port} if host else {}


def _request_attributes(prompt: Prompt) -> dict[str, Any]:
    options = prompt.options
    if options is None:
        return {}
    attrs: dict[str, Any] = {}
    for key, value in (
        (n.REQUEST_TEMPERATURE, options.temperature),
        (n.REQUEST_MAX_TOKENS, options.max_tokens),
        (n.REQUEST_TOP_P, options.top_p),
        (n.REQUEST_TOP_K, options.top_k),
        (n.REQUEST_FREQUENCY_PENALTY, options.frequency_penalty),
        (n.REQUEST_PRESENCE_PENALTY, options.presence_penalty),
    ):
        if value is not None:
            attrs[key] = value
    if options.stop_sequences:
        attrs[n.REQUEST_STOP_SEQUENCES] = list(options.stop_sequences)
    if options.output_schema is not None:
        attrs[n.OUTPUT_TYPE] = "json"
    return attrs


def _set_response(span: Span, response: ChatResponse, capture: bool) -> None:
    meta = response.metadata
    attrs: dict[str, Any] = {}
    if meta.id:
        attrs[n.RESPONSE_ID] = meta.id
    if meta.model:
        attrs[n.RESPONSE_MODEL] = meta.model
    reasons = _content.finish_reasons(response)
    if reasons:
        attrs[n.RESPONSE_FINISH_REASONS] = list(reasons)
    usage = meta.usage
    if usage is not None:
        attrs[n.USAGE_INPUT_TOKENS] = usage.prompt_tokens
        attrs[n.USAGE_OUTPUT_TOKENS] = usage.completion_tokens
        if usage.cache_read_tokens:
            attrs[n.USAGE_CACHE_READ] = usage.cache_read_tokens
        if usage.cache_write_tokens:
            attrs[n.USAGE_CACHE_WRITE] = usage.cache_write_tokens
        if usage.reasoning_tokens:
            attrs[n.USAGE_REASONING] = usage.reasoning_tokens
    if capture:
        attrs[n.OUTPUT_MESSAGES] = _content.output_messages(response)
    span.set_attributes(attrs)
