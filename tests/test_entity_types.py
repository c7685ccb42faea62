"""``entity()`` on a type pydantic cannot handle fails before any request, with one clear error."""

from __future__ import annotations

import threading

import pytest

from chatclient import ChatClient
from chatclient._sync import run_sync
from chatclient.errors import ConfigurationError
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
