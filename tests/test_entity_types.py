"""``entity()`` on a type pydantic cannot handle fails before any request, with one clear error."""

from __future__ import annotations

import threading

import pytest
from pydantic import BaseModel

from chatclient import ChatClient
from chatclient._sync import run_sync
from chatclient.errors import ConfigurationError, StructuredOutputError
from chatclient.testing import ScriptedChatModel


@pytest.mark.parametrize("bad", [threading.Lock, object(), {"not": "a type"}])
def test_an_unsupported_type_fails_before_the_model_is_called(bad: object) -> None:
    model = ScriptedChatModel(["{}"])
    spec = ChatClient.create(model).prompt("Give me one")
    with pytest.raises(ConfigurationError, match=r"entity\(\) cannot convert to .*Nothing was sent"):
        spec.call().entity(bad)
    with pytest.raises(ConfigurationError, match=r"entity\(\) cannot convert to"):
        run_sync(lambda: spec.acall().entity(bad))
    assert model.prompts == []


class City(BaseModel):
    name: str
    population: int


def test_without_retries_a_bad_reply_fails_once() -> None:
    model = ScriptedChatModel(['{"name": "Oslo"}'])
    with pytest.raises(StructuredOutputError, match="population") as caught:
        ChatClient.create(model).prompt("A city").call().entity(City)
    assert len(model.prompts) == 1 and caught.value.attempts == 1


@pytest.mark.parametrize("mode", ["call", "acall"])
def test_retries_re_ask_with_the_validation_errors(mode: str) -> None:
    replies = ['{"name": "Oslo"}', '{"name": "Oslo", "population": "many"}', '{"name": "Oslo", "population": 700000}']
    model = ScriptedChatModel(replies)
    spec = ChatClient.create(model).prompt("A city")
    if mode == "call":
        city = spec.call().entity(City, retries=2)
    else:
        city = run_sync(lambda: spec.acall().entity(City, retries=2))
    assert city == City(name="Oslo", population=700000)
    asks = [str(getattr(p.messages[-1], "text", "")) for p in model.prompts]
    assert len(asks) == 3 and asks[0].startswith("A city")
    assert "Attempt 1 of your reply was rejected" in asks[1] and "population: Field required" in asks[1]
    assert "Attempt 2 of your reply was rejected" in asks[2] and "Attempt 1" not in asks[2]


def test_retries_give_up_after_n_with_the_count() -> None:
    model = ScriptedChatModel(["nope", "still no", "no"])
    with pytest.raises(StructuredOutputError, match=r"after 3 attempts") as caught:
        ChatClient.create(model).prompt("A city").call().entity(City, retries=2)
    assert caught.value.attempts == 3 and len(model.prompts) == 3
