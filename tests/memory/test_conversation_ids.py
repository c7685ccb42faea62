"""One rule for conversation ids on every backend, applied before the model is called: no NUL,
at most 512 bytes of UTF-8 (PostgreSQL used to refuse such ids only after the turn had run)."""

from __future__ import annotations

import pytest

from chatclient import ChatClient, ConfigurationError
from chatclient.memory import CONVERSATION_ID, InMemorySessionRepository, SessionMemoryAdvisor
from chatclient.memory.log import check_session_id
from chatclient.testing import MODES, ScriptedChatModel
from chatclient.testing.advisor_kit import run_spec

BAD = ["a\x00b", "x" * 3000, "é" * 257, "\ud800" * 200]


@pytest.mark.parametrize("bad", BAD)
def test_the_spec_refuses_an_id_no_backend_could_hold(bad: str) -> None:
    client = ChatClient.builder(ScriptedChatModel(["hi"])).build()
    with pytest.raises(ConfigurationError, match="conversation id"):
        client.prompt("hello").conversation(bad)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bad", BAD)
def test_an_id_given_as_an_advisor_param_is_refused_before_the_model_runs(mode: str, bad: str) -> None:
    model = ScriptedChatModel(["hi"])
    repository = InMemorySessionRepository()
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository)).build()
    with pytest.raises(ConfigurationError, match="conversation id"):
        run_spec(mode, client.prompt("hello").advisors(params={CONVERSATION_ID: bad}))
    assert model.prompts == []


def test_the_limit_is_in_utf8_bytes() -> None:
    assert check_session_id("x" * 512) == "x" * 512
    assert check_session_id("é" * 256) == "é" * 256  # 512 bytes
    with pytest.raises(ConfigurationError, match="513 bytes"):
        check_session_id("é" * 256 + "x")
