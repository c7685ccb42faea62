"""The lossless contract's turns are what the providers write: their metadata keys, and requests
that carry the parts a provider refuses to lose (signatures, encrypted reasoning, server blocks)."""

from __future__ import annotations

import json

import pytest

from providers.anthropic._mapping import SERVER_BLOCKS_METADATA_KEY, THINKING_METADATA_KEY
from providers.gemini._mapping import PARTS_METADATA_KEY as GEMINI_PARTS
from providers.openai._mapping import REASONING_FIELD_KEY
from providers.openai_responses._mapping import BUILTIN_ITEMS_KEY, REASONING_KEY
from tests.memory.provider_turns import provider_turns

EXPECTED = {
    "ollama/openai_compat_c_parallel_tool_calls_roundtrip": ({"reasoning", REASONING_FIELD_KEY}, ['"reasoning":']),
    "deepseek reasoning_content": ({"reasoning", REASONING_FIELD_KEY}, ['"reasoning_content":']),
    "openai-responses/b_single_function_call_with_encrypted_reasoning": ({REASONING_KEY}, ['"encrypted_content":']),
    "responses built-in items": ({BUILTIN_ITEMS_KEY}, ['"web_search_call"']),
    "anthropic thinking and server tools": (
        {THINKING_METADATA_KEY, SERVER_BLOCKS_METADATA_KEY},
        ['"signature":"EqQBCkgIARABGAIiQ=="', '"redacted_thinking"', '"server_tool_use"', '"web_search_tool_result"'],
    ),
    "ollama/native_b_tool_call": ({"thinking"}, ['"tool_calls"']),
    "openai-chat/b_single_tool_call_roundtrip": (set(), ['"tool_calls"', '"tool_call_id"']),
    "anthropic/b_single_tool_use_roundtrip": (set(), ['"tool_use"', '"tool_result"']),
    "anthropic/c_parallel_tool_use_roundtrip": (set(), ['"tool_use"', '"tool_result"']),
    "gemini/c_parallel_function_calls_roundtrip": (
        {GEMINI_PARTS},
        ['"thoughtSignature":"CtICAdHtim9', '"functionResponse"'],
    ),
    "gemini/h_thinking_thought_parts": ({GEMINI_PARTS}, ['"thought":true']),
}


@pytest.mark.parametrize("turn", provider_turns(), ids=lambda t: t.name)
def test_each_turn_carries_its_providers_metadata_into_the_next_request(turn: object) -> None:
    from chatclient.testing.memory import ProviderTurn

    assert isinstance(turn, ProviderTurn) and turn.next_request is not None
    keys, wire_parts = EXPECTED[turn.name]
    written = {k for m in turn.messages for k in (getattr(m, "metadata", None) or {})}
    assert keys <= written, f"{turn.name}: {written}"
    sent = turn.next_request(turn.messages).decode()
    json.loads(sent)
    assert all(part in sent for part in wire_parts), sent[:400]
    assert turn.next_request(turn.messages) == turn.next_request(list(turn.messages)), "rendering is deterministic"


def test_every_case_is_checked() -> None:
    assert {t.name for t in provider_turns()} == set(EXPECTED)
