"""A missing conversation id names the advisor the application used, in every mode."""

from __future__ import annotations

import pytest

from chatclient import ChatClient
from chatclient.errors import ConfigurationError
from chatclient.memory import MessageChatMemoryAdvisor, MessageWindowChatMemory, SessionMemoryAdvisor
from chatclient.memory.repository import InMemorySessionRepository
from chatclient.testing import MODES, ScriptedChatModel
from chatclient.testing.advisor_kit import run_spec


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("advisor", ["MessageChatMemoryAdvisor", "SessionMemoryAdvisor"])
def test_a_missing_conversation_id_names_the_advisor_used(advisor: str, mode: str) -> None:
    memory = (
        MessageChatMemoryAdvisor(MessageWindowChatMemory())
        if advisor == "MessageChatMemoryAdvisor"
        else SessionMemoryAdvisor(InMemorySessionRepository())
    )
    model = ScriptedChatModel(["never"])
    client = ChatClient.builder(model).default_advisors(memory).build()
    with pytest.raises(ConfigurationError) as raised:
        run_spec(mode, client.prompt("hi"))
    message = str(raised.value)
    assert message.startswith(f"{advisor} needs a conversation id"), message
    assert "spec.conversation(id)" in message
    other = {"MessageChatMemoryAdvisor", "SessionMemoryAdvisor"} - {advisor}
    assert not any(name in message for name in other)
    assert model.prompts == [], "nothing reached the model"
