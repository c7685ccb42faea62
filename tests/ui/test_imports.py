"""The encoders need nothing beyond chatclient: Starlette is loaded by chatclient.ui.asgi only."""

from __future__ import annotations

import subprocess
import sys


def test_the_encoders_load_no_web_framework_and_no_asyncio() -> None:
    code = (
        "import sys, chatclient.ui; "
        "print(sorted(m for m in ('starlette', 'asyncio', 'chatclient.ui.asgi') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"
