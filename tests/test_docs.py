"""Every ```python snippet of README.md and docs/*.md runs, so the documentation cannot rot.

Conventions (the docs stay readable on a code host; the test reads the raw Markdown):

- A ```python fence is executed. ```python notest marks a deliberately partial snippet (rare), and
  ```python tested-by=<path> one that a dedicated test runs (e.g. MCP, which needs a live server);
  that path must exist and read the page. Other fences (```bash, ```sh, plain ```) are not run.
- The snippets of one page run in order in one namespace, as a reader would type them: the test of
  snippet *k* (id ``docs/tools.md:42``, the fence's line) runs snippets 1..k-1 first, then *k*.
- An HTML comment directly above a fence, ``<!-- test-setup ... -->``, holds Python run just before
  that snippet in the same namespace. Code hosts do not render it; it scripts the model's replies
  or defines inputs the prose takes as given (a PNG, a catalogue of tools).
- No snippet reaches a provider: ``providers.create(...)`` and ``ChatClient.create("provider:model")``
  return a ``ScriptedChatModel``. By
  default it answers every request with a short text; a setup comment calls ``script(...)`` (the
  same arguments as ``ScriptedChatModel``) to choose the replies of the next model created, and
  ``calling(name, arguments, id=...)`` is a reply asking for one tool call. The providers' API-key
  variables are set to dummy keys, so building a provider model works offline. A tool that fails
  inside a snippet fails its test (the loop would otherwise tell the scripted model and go on).
- Each page runs in a fresh temporary directory (files such as ``chat.db`` land there). Snippets
  that need Redis or PostgreSQL read the usual ``REDIS_URL`` / ``DATABASE_URL`` (``PGVECTOR_URL`` for
  pgvector); the test sets them from the CI services' ``CHATCLIENT_TEST_REDIS_URL`` /
  ``CHATCLIENT_TEST_POSTGRES_URL`` / ``CHATCLIENT_TEST_PGVECTOR_URL`` and skips
  such a snippet (and the later ones of its page) when those are unset, outside CI only, like the
  other tests of those backends.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import providers
from chatclient import AssistantMessage, ToolResponseMessage
from chatclient.testing import ScriptedChatModel, tool_call

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(
    r"(?:<!-- test-setup\n(?P<setup>(?:(?!-->).)*)-->\n+)?^```python(?P<info>[^\n]*)\n(?P<code>.*?)^```$",
    re.DOTALL | re.MULTILINE,
)
DUMMY_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
SERVICES = {
    "REDIS_URL": "CHATCLIENT_TEST_REDIS_URL",
    "DATABASE_URL": "CHATCLIENT_TEST_POSTGRES_URL",
    "PGVECTOR_URL": "CHATCLIENT_TEST_PGVECTOR_URL",
}


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int
    info: str
    setup: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT).as_posix()}:{self.line}"


def snippets_of(page: Path) -> list[Snippet]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start("code"))  # the fence's own line, 1-based
        found.append(Snippet(page, line, match["info"].strip(), match["setup"] or "", match["code"]))
    return found


ALL = [snippet for page in PAGES for snippet in snippets_of(page)]
RUN = [s for s in ALL if not s.info]


def test_every_python_fence_is_run_or_marked() -> None:
    """A typo in an info string (```python nottest) must not silently skip a snippet."""
    for snippet in ALL:
        assert snippet.info in ("", "notest") or snippet.info.startswith("tested-by="), snippet.id


@pytest.mark.parametrize("snippet", [s for s in ALL if s.info.startswith("tested-by=")], ids=lambda s: s.id)
def test_a_snippet_tested_elsewhere_names_a_test_that_reads_its_page(snippet: Snippet) -> None:
    test = ROOT / snippet.info.removeprefix("tested-by=")
    assert test.is_file(), snippet.id
    assert snippet.page.relative_to(ROOT).as_posix() in test.read_text(), f"{test} does not read {snippet.id}"


class DocsModels:
    """What ``providers.create`` hands the snippets: the scripted model chosen by ``script(...)``."""

    def __init__(self) -> None:
        self.next: ScriptedChatModel | None = None
        self.created: list[ScriptedChatModel] = []

    def script(self, *args: Any, **kwargs: Any) -> ScriptedChatModel:
        self.next = ScriptedChatModel(*args, **kwargs)
        return self.next

    def create(self, spec: str, **kwargs: Any) -> ScriptedChatModel:
        model, self.next = self.next, None
        model = model or ScriptedChatModel(lambda prompt: "Hello from a scripted model.", model=spec.split(":", 1)[1])
        self.created.append(model)
        return model

    def tool_failures(self) -> list[str]:
        """Error results the tools of the snippets sent to the models (a ``ToolRetry`` request, marked
        ``retry``, is what a snippet shows on purpose, not a failure)."""
        return [
            f"{response.name}: {response.response_data}"
            for model in self.created
            for prompt in model.prompts
            for message in prompt.messages
            if isinstance(message, ToolResponseMessage)
            for response in message.responses
            if response.is_error and "retry" not in response.metadata
        ]


def calling(name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None) -> AssistantMessage:
    """A scripted reply asking for one tool call."""
    return AssistantMessage(None, tool_calls=[tool_call(name, arguments or {}, id=id)])


def _require_services(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for documented, variable in SERVICES.items():
        if documented not in code:
            continue
        url = os.environ.get(variable)
        if not url:
            if os.environ.get("CI") == "true":
                pytest.fail(f"{variable} is not set under CI")
            pytest.skip(f"needs a server: set {variable}")
        monkeypatch.setenv(documented, url)


def _run(snippet: Snippet, namespace: dict[str, Any]) -> None:
    if snippet.setup:
        exec(compile(snippet.setup, f"{snippet.id} (test-setup)", "exec"), namespace)
    exec(compile(snippet.code, snippet.id, "exec"), namespace)


@pytest.fixture
def docs_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[DocsModels]:
    models = DocsModels()
    monkeypatch.setattr(providers, "create", models.create)
    monkeypatch.setattr(providers._registry, "create", models.create)  # ChatClient.create("openai:...")
    for key in DUMMY_KEYS:
        monkeypatch.setenv(key, "sk-docs-test-key")
    monkeypatch.chdir(tmp_path)
    with _logging_restored():
        yield models


@contextmanager
def _logging_restored() -> Iterator[None]:
    """Snippets configure logging as an application would; the rest of the suite must not see it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in list(logging.root.manager.loggerDict)}
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        for name in list(logging.root.manager.loggerDict):
            logging.getLogger(name).setLevel(levels.get(name, logging.NOTSET))


@pytest.mark.parametrize("snippet", RUN, ids=lambda s: s.id)
def test_snippet_runs(snippet: Snippet, docs_env: DocsModels, monkeypatch: pytest.MonkeyPatch) -> None:
    earlier = [s for s in RUN if s.page == snippet.page and s.line < snippet.line]
    _require_services("".join(s.setup + s.code for s in [*earlier, snippet]), monkeypatch)
    namespace: dict[str, Any] = {"__name__": "__docs__", "script": docs_env.script, "calling": calling}
    for before in earlier:
        _run(before, namespace)
    _run(snippet, namespace)
    assert not docs_env.tool_failures(), f"a tool failed in {snippet.id}: {docs_env.tool_failures()}"


def test_notest_marks_stay_rare() -> None:
    partial = [s.id for s in ALL if s.info == "notest"]
    assert len(partial) <= 3, partial


API_MODULES = [
    "chatclient",
    "chatclient.tools",
    "chatclient.memory",
    "chatclient.mcp",
    "chatclient.templates",
    "chatclient.retrieval",
    "chatclient.testing",
    "chatclient.testing.conformance",
    "chatclient.ui",
    "chatclient.ui.asgi",
    "providers",
    "providers.openai",
    "providers.openai_responses",
    "providers.anthropic",
    "providers.gemini",
    "providers.ollama",
    "providers.fallback",
    "providers.shell",
    "advisors",
]


@pytest.mark.parametrize("module_name", API_MODULES)
def test_the_api_reference_lists_every_exported_name(module_name: str) -> None:
    """docs/api.md has a section per module and a line per name of its ``__all__``."""
    module = importlib.import_module(module_name)
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    heading = f"\n### `{module_name}`\n"
    assert heading in api, f"docs/api.md has no section {heading.strip()}"
    section = api.split(heading, 1)[1].split("\n### ", 1)[0]
    missing = [name for name in module.__all__ if f"- `{name}` — " not in section]
    assert not missing, f"docs/api.md, section {module_name}, does not describe {missing}"
