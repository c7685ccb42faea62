"""What a first call does not need is imported when first used: a sync-only script never loads asyncio."""

from __future__ import annotations

import subprocess
import sys

SYNC_SCRIPT = """
import sys
import chatclient, providers.openai
assert "asyncio" not in sys.modules, "asyncio loaded by the import"
import httpx2
from chatclient import ChatClient
from providers.openai import OpenAIChatModel
reply = {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "pong"}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=reply))
with OpenAIChatModel(api_key="k", http_client=httpx2.Client(transport=transport)) as model:
    assert ChatClient.create(model).prompt("hi").call().content() == "pong"
assert "asyncio" not in sys.modules, "asyncio loaded by a sync call"
print("ok")
"""


def test_a_sync_only_script_never_loads_asyncio() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SYNC_SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_import_chatclient_and_a_provider_loads_no_asyncio() -> None:
    code = "import sys, chatclient, providers.openai, providers.anthropic; print('asyncio' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "False"


def test_lazy_packages_export_every_name_they_list_and_nothing_else() -> None:
    code = """
import chatclient, chatclient.tools
for package in (chatclient, chatclient.tools):
    public = {n for n in dir(package) if not n.startswith("_") and type(getattr(package, n)).__name__ != "module"}
    assert public | {"__version__"} >= set(package.__all__), set(package.__all__) - public
    assert public <= set(package.__all__), public - set(package.__all__)
from chatclient import *  # noqa: F403
from chatclient.tools import *  # noqa: F403
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_client_loads_no_tool_machinery_until_tools_are_used() -> None:
    code = """
import sys
from chatclient import ChatClient
from providers.openai import OpenAIChatModel
heavy = {"chatclient.tools.manager", "chatclient.tools.decorator", "chatclient.tools.confirmation",
         "chatclient.pending.state", "chatclient.tools._signature"}
print(sorted(heavy & set(sys.modules)))
from chatclient import tool
print("chatclient.tools.decorator" in sys.modules)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split("\n")[:2] == ["[]", "True"]


def test_submodules_stay_reachable_as_attributes_of_a_lazy_package() -> None:
    code = """
import chatclient
assert chatclient.events.TextDelta("a").text == "a"
assert chatclient.tools.manager.ToolCallingManager is chatclient.tools.ToolCallingManager
assert not hasattr(chatclient, "no_such_module") and not hasattr(chatclient.tools, "_private")
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
