"""Token counts with tiktoken's ``o200k_base``, offline.

tiktoken downloads its BPE ranks on first use, which this machine (no network but package registries)
cannot do. The ``bpe-openai`` package ships the same ``o200k_base.tiktoken`` file; it is put into
tiktoken's cache under the name tiktoken looks for, and tiktoken verifies its SHA-256 as it loads it,
so the counts are tiktoken's own.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import os
from collections.abc import Callable
from pathlib import Path

_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
CACHE = Path(__file__).resolve().parent / ".venv" / "tiktoken-cache"


def o200k_counter() -> Callable[[str], int]:
    cache = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or CACHE)
    target = cache / hashlib.sha1(_URL.encode()).hexdigest()
    if not target.exists():
        packed = importlib.resources.files("bpe_openai") / "data" / "o200k_base.tiktoken.gz"
        cache.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress(packed.read_bytes()))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    import tiktoken

    encoding = tiktoken.get_encoding("o200k_base")
    return lambda text: len(encoding.encode(text, disallowed_special=()))
