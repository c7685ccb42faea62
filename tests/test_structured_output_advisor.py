"""StructuredOutputValidationAdvisor: entity(T, retries=N) re-asks through the chain, inside the tool
loop, with the attempts in the reply's metadata; streams are judged once."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from advisors.structured_output import StructuredOutputValidationAdvisor
from chatclient import (
    AdvisorOrder,
    AssistantMessage,
    BaseAdvisor,
    ChatClient,
    ChatClientRequest,
    ChatClientResponse,
    ConfigurationError,
    ToolCallDecision,
    ToolCallDecisions,
    tool,
)
from chatclient._sync import run_sync
from chatclient.errors import StructuredOutputError
from chatclient.responses import Usage
from chatclient.structured_output import ATTEMPTS_METADATA_KEY, structured_output_attempts
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools.confirmation import awaiting_decision
from chatclient.turn import turn_messages

GOOD = '{"name": "Oslo", "population": 700000}'
MISSING = '{"name": "Oslo"}'
WRONG = '{"name": "Oslo", "population": "many"}'
ROUND = Usage(prompt_tokens=10, completion_tokens=5)


class City(BaseModel):
    name: str
    population: int


class Lookup:
    def __init__(self) -> None:
        self.runs = 0

    @tool(description="Look a city up")
    def lookup(self, name: str) -> str:
        self.runs += 1
        return f"{name}: 700000 people"

    @tool(description="Publish a city", requires_confirmation=True)
    def publish(self, name: str) -> str:
        self.runs += 1
        return f"published {name}"


class Seen(BaseAdvisor):
    """Records the user text of every request that passes it."""

    def __init__(self, order: int) -> None:
        self.order = order
        self.asks: list[str] = []

    def before(self, request: ChatClientRequest) -> ChatClientRequest:
        self.asks.append(str(getattr(request.prompt.messages[-1], "text", "")))
        return request


def calls(name: str) -> AssistantMessage:
    return AssistantMessage(None, tool_calls=[tool_call(name, {"name": "Oslo"})])


def last_user_texts(model: ScriptedChatModel) -> list[str]:
    texts = []
    for prompt in model.prompts:
        users = [m for m in prompt.messages if m.role == "user"]
        texts.append(str(getattr(users[-1], "text", "")))
    return texts


@pytest.mark.parametrize("mode", ["call", "acall"])
def test_retries_go_through_the_advisor_and_the_record_is_in_the_metadata(mode: str) -> None:
    model = ScriptedChatModel([MISSING, WRONG, GOOD], usage=ROUND)
    spec = ChatClient.create(model).prompt("A city")
    if mode == "call":
        result = spec.call().response_entity(City, retries=2)
    else:
        result = run_sync(lambda: spec.acall().response_entity(City, retries=2))
    assert result.entity == City(name="Oslo", population=700000)
    record = result.attempts
    assert record is not None and record.attempts == 3 and record.valid
    assert len(record.errors) == 2 and "population: Field required" in record.errors[0]
    assert "population: Input should be a valid integer" in record.errors[1]
    chat = result.response.chat_response
    assert chat is not None
    assert chat.metadata.extra[ATTEMPTS_METADATA_KEY] == {"attempts": 3, "valid": True, "errors": list(record.errors)}
    assert chat.usage == Usage(prompt_tokens=30, completion_tokens=15), "every attempt's usage is counted"
    asks = last_user_texts(model)
    assert "Attempt 1 of your reply was rejected" in asks[1] and "Attempt 2" in asks[2] and "Attempt 1" not in asks[2]


def test_entity_alone_adds_no_advisor_and_fails_once() -> None:
    model = ScriptedChatModel([MISSING])
    inner = Seen(AdvisorOrder.LOWEST)
    with pytest.raises(StructuredOutputError) as caught:
        ChatClient.create(model).prompt("A city").advisors(inner).call().entity(City)
    assert caught.value.attempts == 1 and len(model.prompts) == 1 and len(inner.asks) == 1
    good = ChatClient.create(ScriptedChatModel([GOOD])).prompt("A city").call().response_entity(City)
    assert good.attempts is None, "no validation advisor ran, so there is no record"


@pytest.mark.parametrize("retries", [-1, 1.5, True])
def test_bad_retries_are_refused_before_any_request(retries: Any) -> None:
    model = ScriptedChatModel([GOOD])
    with pytest.raises(ConfigurationError, match="retries must be an int >= 0"):
        ChatClient.create(model).prompt("A city").call().entity(City, retries=retries)
    assert model.prompts == []


def test_giving_up_raises_with_the_count_and_the_last_reply() -> None:
    model = ScriptedChatModel(["nope", MISSING, WRONG])
    with pytest.raises(StructuredOutputError, match=r"after 3 attempts") as caught:
        ChatClient.create(model).prompt("A city").call().entity(City, retries=2)
    assert caught.value.attempts == 3 and caught.value.text == WRONG


@pytest.mark.parametrize("mode", ["call", "acall"])
def test_inside_the_tool_loop_a_re_ask_never_reruns_a_tool(mode: str) -> None:
    tools = Lookup()
    script: list[ScriptItem] = [calls("lookup"), MISSING, GOOD]
    model = ScriptedChatModel(script, usage=ROUND)
    outer, inner = Seen(AdvisorOrder.DEFAULT), Seen(AdvisorOrder.LOWEST)
    spec = ChatClient.create(model).prompt("A city").tools(tools).advisors(outer, inner)
    if mode == "call":
        result = spec.call().response_entity(City, retries=1)
    else:
        result = run_sync(lambda: spec.acall().response_entity(City, retries=1))
    assert result.entity.population == 700000 and tools.runs == 1
    assert len(model.prompts) == 3 and model.prompts[2].messages[-1].role == "tool", "the re-ask keeps the history"
    assert "Attempt 1 of your reply was rejected" in last_user_texts(model)[2]
    assert len(outer.asks) == 2, "outside the validator (order 0): one request per tool round"
    assert len(inner.asks) == 3, "inside it (a higher order): every attempt"
    roles = [m.role for m in turn_messages(result.response)]
    assert roles == ["user", "assistant", "tool", "assistant"], "a rejected reply is not part of the turn"
    assert result.response.chat_response is not None
    assert result.response.chat_response.usage == Usage(prompt_tokens=30, completion_tokens=15)


@pytest.mark.parametrize("mode", MODES)
def test_registered_advisor_in_every_mode(mode: str) -> None:
    """call/acall re-ask until valid; stream/astream deliver the first reply and record its verdict."""
    model = ScriptedChatModel([MISSING, GOOD])
    spec = ChatClient.create(model).prompt("A city").advisors(StructuredOutputValidationAdvisor(City))
    response, _ = run_spec(mode, spec)
    record = structured_output_attempts(response)
    assert record is not None
    if mode in ("call", "acall"):
        assert (record.attempts, record.valid, len(model.prompts)) == (2, True, 2)
        assert response.text == GOOD
    else:
        assert (record.attempts, record.valid, len(model.prompts)) == (1, False, 1)
        assert response.text == MISSING and "population: Field required" in record.errors[0]


@pytest.mark.parametrize("mode", MODES)
def test_tool_rounds_and_pauses_are_not_judged(mode: str) -> None:
    tools = Lookup()
    model = ScriptedChatModel([calls("publish"), GOOD])
    spec = ChatClient.create(model).prompt("A city").tools(tools).advisors(StructuredOutputValidationAdvisor(City))
    paused, _ = run_spec(mode, spec)
    pending = awaiting_decision(paused)
    assert pending is not None and structured_output_attempts(paused) is None and len(model.prompts) == 1
    decisions = ToolCallDecisions.of(ToolCallDecision.allow(pending.calls[0].id))
    resumed, _ = run_spec(mode, spec.resume(pending, decisions))
    record = structured_output_attempts(resumed)
    assert tools.runs == 1 and record is not None and record.valid and record.attempts == 1


def test_resume_with_entity_retries_validates_the_resumed_answer() -> None:
    tools = Lookup()
    model = ScriptedChatModel([calls("publish"), WRONG, GOOD])
    client = ChatClient.create(model)
    paused = client.prompt("A city").tools(tools).call().chat_client_response()
    pending = awaiting_decision(paused)
    assert pending is not None
    decisions = ToolCallDecisions.of(ToolCallDecision.allow(pending.calls[0].id))
    result = client.prompt().tools(tools).resume(pending, decisions).call().response_entity(City, retries=1)
    assert result.entity.population == 700000 and tools.runs == 1
    assert result.attempts is not None and result.attempts.attempts == 2


def test_the_answer_keeps_the_requests_format_instructions() -> None:
    """A re-ask's corrections stay out of the final response's context."""
    model = ScriptedChatModel([MISSING, GOOD])
    result = ChatClient.create(model).prompt("A city").call().response_entity(City, retries=1)
    format_text = str(result.response.context["chatclient.output.format"])
    assert "JSON Schema" in format_text and "rejected" not in format_text


def test_the_advisor_refuses_bad_settings() -> None:
    with pytest.raises(ConfigurationError, match="max_repeat_attempts"):
        StructuredOutputValidationAdvisor(City, max_repeat_attempts=-1)
    with pytest.raises(ConfigurationError, match="cannot convert"):
        StructuredOutputValidationAdvisor(object())


def test_a_reply_with_no_text_is_an_error_the_model_is_told() -> None:
    model = ScriptedChatModel(["", GOOD])
    response = ChatClient.create(model).prompt("A city").advisors(StructuredOutputValidationAdvisor(City)).call()
    final: ChatClientResponse = response.chat_client_response()
    record = structured_output_attempts(final)
    assert record is not None and record.errors == ("The model returned no text to convert",)


class NativeModel(ScriptedChatModel):
    supports_output_schema = True


@pytest.mark.parametrize("mode", ["call", "acall"])
def test_with_native_structured_output_the_errors_still_reach_the_model(mode: str) -> None:
    model = NativeModel([MISSING, GOOD])
    spec = ChatClient.create(model).prompt("A city")
    if mode == "call":
        city = spec.call().entity(City, native=True, retries=1)
    else:
        city = run_sync(lambda: spec.acall().entity(City, native=True, retries=1))
    assert city.population == 700000
    first, second = last_user_texts(model)
    assert first == "A city", "the schema goes through the provider, not the text"
    assert second.startswith("A city\n\nAttempt 1 of your reply was rejected") and "population" in second
    assert all(p.options is not None and p.options.output_schema is not None for p in model.prompts)


def test_entity_retries_replace_a_registered_validator_so_two_never_nest() -> None:
    model = ScriptedChatModel([MISSING, MISSING, GOOD])
    client = ChatClient.builder(model).default_advisors(StructuredOutputValidationAdvisor(City)).build()
    with pytest.raises(StructuredOutputError, match="after 2 attempts") as caught:
        client.prompt("A city").call().entity(City, retries=1)
    assert len(model.prompts) == 2 and caught.value.attempts == 2, "the request's own validator ran, not both"
    assert client.prompt("A city").call().entity(City).population == 700000, "the registered one still serves"
