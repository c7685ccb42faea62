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
