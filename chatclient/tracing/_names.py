"""Every attribute, event, span and metric name chatclient emits, in one place.

The ``gen_ai.*`` names follow the OpenTelemetry GenAI semantic conventions in their latest
experimental form (the ``semantic-conventions-genai`` repository, v0.1.0 and the renames after it,
e.g. ``cache_write``); only that format is emitted. ``chatclient.*`` names cover what no convention
covers yet (advisors, the confirmation pause, retries). The whole GenAI namespace is still
"Development": when it renames, this module is the one to change. The
``opentelemetry-semantic-conventions`` package is not used: its ``gen_ai`` constants are deprecated.
"""

from __future__ import annotations

from typing import Final

from .._context_keys import ContextKeys

SEMCONV_VERSION: Final = "semantic-conventions-genai v0.1.0 (+ cache_write)"
INSTRUMENTATION_NAME: Final = "chatclient"

# --- operations and span names
OPERATION_NAME: Final = "gen_ai.operation.name"
OP_CHAT: Final = "chat"
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_RETRIEVAL: Final = "retrieval"
"""A search of a vector store by a retrieval advisor or tool (not yet a GenAI semantic-convention operation)."""
ADVISOR_SPAN_PREFIX: Final = "advisor"

# --- common
PROVIDER_NAME: Final = "gen_ai.provider.name"
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
CONVERSATION_CONTEXT_KEY: Final = ContextKeys.CONVERSATION_ID
"""Where ``spec.conversation(id)`` puts the id in the request context (the envelope's key)."""
ERROR_TYPE: Final = "error.type"
OUTPUT_TYPE: Final = "gen_ai.output.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

# --- request
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_STREAM: Final = "gen_ai.request.stream"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
REQUEST_TOP_P: Final = "gen_ai.request.top_p"
REQUEST_TOP_K: Final = "gen_ai.request.top_k"
REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
REQUEST_FREQUENCY_PENALTY: Final = "gen_ai.request.frequency_penalty"
REQUEST_PRESENCE_PENALTY: Final = "gen_ai.request.presence_penalty"

# --- response
RESPONSE_ID: Final = "gen_ai.response.id"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"

# --- usage
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_WRITE: Final = "gen_ai.usage.cache_write.input_tokens"
USAGE_REASONING: Final = "gen_ai.usage.reasoning.output_tokens"
TOKEN_TYPE: Final = "gen_ai.token.type"

# --- content (opt-in)
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"

# --- tools
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"

# --- provider specifics
OPENAI_API_TYPE: Final = "openai.api.type"

# --- chatclient's own
STREAM: Final = "chatclient.stream"
ADVISOR_NAME: Final = "chatclient.advisor.name"
ADVISOR_ORDER: Final = "chatclient.advisor.order"
RETRIEVAL_STORE: Final = "chatclient.retrieval.store"
RETRIEVAL_SOURCE: Final = "chatclient.retrieval.source"
RETRIEVAL_TOP_K: Final = "chatclient.retrieval.top_k"
RETRIEVAL_QUERY: Final = "chatclient.retrieval.query"
"""Only with content capture: the query is the user's words."""
RETRIEVAL_DOCUMENT_IDS: Final = "chatclient.retrieval.document_ids"
RETRIEVAL_SCORES: Final = "chatclient.retrieval.scores"
REQUEST_ATTEMPTS: Final = "chatclient.request.attempts"
RETRY_EVENT: Final = "chatclient.request.retry"
RETRY_ATTEMPT: Final = "chatclient.retry.attempt"
RETRY_WAIT: Final = "chatclient.retry.wait"
FALLBACK_EVENT: Final = "chatclient.request.fallback"
FALLBACK_POSITION: Final = "chatclient.fallback.position"
FALLBACK_MODEL: Final = "chatclient.fallback.model"
CONFIRMATION_ID: Final = "chatclient.confirmation.id"
CONFIRMATION_STATE: Final = "chatclient.confirmation.state"
CONFIRMATION_AWAITING: Final = "chatclient.confirmation.awaiting_call_ids"
CONFIRMATION_HELD: Final = "chatclient.confirmation.held_call_ids"
CONFIRMATION_TOOLS: Final = "chatclient.confirmation.tool_names"
CONFIRMATION_EXPIRES_AT: Final = "chatclient.confirmation.expires_at"
CONFIRMATION_DECISION: Final = "chatclient.confirmation.decision"
CONFIRMATION_SOURCE: Final = "chatclient.confirmation.decision.source"
CONFIRMATION_APPROVER: Final = "chatclient.confirmation.approver.id"
CONFIRMATION_REASON: Final = "chatclient.confirmation.reason"
CONFIRMATION_WAIT: Final = "chatclient.confirmation.wait"
CONFIRMATION_REFUSAL: Final = "chatclient.confirmation.refusal"
LINK_TYPE: Final = "chatclient.link.type"
EVENT_REQUESTED: Final = "chatclient.tool_confirmation.requested"
EVENT_DECIDED: Final = "chatclient.tool_confirmation.decided"
EVENT_RESUMED: Final = "chatclient.tool_confirmation.resumed"

# --- metrics
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"
METRIC_TIME_PER_OUTPUT_CHUNK: Final = "gen_ai.client.operation.time_per_output_chunk"
METRIC_AGENT_DURATION: Final = "gen_ai.invoke_agent.duration"
METRIC_AGENT_INFERENCE_CALLS: Final = "gen_ai.invoke_agent.inference_calls"
METRIC_AGENT_TOOL_CALLS: Final = "gen_ai.invoke_agent.tool_calls"
METRIC_TOOL_DURATION: Final = "gen_ai.execute_tool.duration"

# The conventions' advisory bucket boundaries.
DURATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS: Final = tuple(4**i for i in range(14))  # 1, 4, 16 … 67108864
AGENT_DURATION_BUCKETS: Final = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6)
COUNT_BUCKETS: Final = (1, 2, 4, 8, 16, 32, 64, 128)

# --- content capture switch (the variable the official OTel GenAI helpers read)
CAPTURE_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
