"""Every example runs offline and prints what it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

EXPECTED = {
    "retrieval.py": [
        "answer: Yes. Machine learning is a subset of artificial intelligence [ml].",
        "  cited ml (glossary.md) score=1.000",
        "  cited ollama (tools.md) score=0.458",
        "the model saw the context: True",
        "memory keeps: Quick one: is ML part of AI? Answer from my notes.",
        "agent: Use Ollama to run models locally [ollama].",
        "the tool found: ['ollama']",
    ],
    "hello.py": ["call:   Hello! How can I help?", "entity: [City(name='Paris'", "acall:  Async works"],
    "tools.py": ["answer: Beijing is sunny at 28°C; Q3 sales were 1,250,000.", "model rounds: 4, sales queries: 2"],
    "flight_booking.py": [
        "DEFAULT_DENY_MESSAGE: The user did not allow this tool call.",
        "[S1] ungated-only executeToolCalls OK",
        "[S1] flightStatusCount=1 bookFlightCount=0",
        "  toolResult name=flight_status id=call_status data=Flight VX205 is on time",
        "[S2] paused as expected",
        "[S2] awaiting ids: [call_book]",
        "[S2] flightStatusCount=0 bookFlightCount=0 (both should stay 0 until resume)",
        "[S3] mixed reply paused as a whole",
        "[S3] awaiting ids: [call_book2]",
        "[S3] after pause: flightStatusCount=0 bookFlightCount=0",
        "[S4] resumed with allow(status)+deny(book)",
        "[S4] flightStatusCount=1 bookFlightCount=0",
        "  toolResult name=flight_status id=call_status2 data=Flight VX205 is on time",
        "  toolResult name=book_flight id=call_book2 data=User cancelled the booking.",
        "[S5] resumed bookFlight with allow",
        "[S5] bookFlightCount=1",
        "  toolResult name=book_flight id=call_book data=Booked VX205",
        "[client] paused; awaiting ids: ['call_book']; flightStatusCount=0 bookFlightCount=0",
        "[client] resumed: Flight VX205 is on time; Booked VX205",
        "[client] flightStatusCount=1 bookFlightCount=1",
    ],
    "approvers.py": [
        "paused; awaiting ['call_refund']; refunds=0",
        "audit: refused tool=refund call=call_refund approver=bob@support reason='customer sent photos' "
        "refusal=\"needs role 'manager'\" at=",
        "refused: Not authorized: approver 'bob@support' may not decide tool call(s) 'call_refund' (refund): "
        "needs role 'manager'. Nothing ran",
        "after the refusal: refunds=0; state still stored: ['call_refund']",
        "audit: allowed tool=refund call=call_refund approver=ana@support reason='customer sent photos' "
        "refusal=None at=",
        "resumed by the manager: Order A17 arrived damaged; Refunded 120 EUR on A17; refunds=1",
        "a replay finds nothing; refunds=1",
    ],
    "provider_tour.py": ["answer: The temperature in Tokyo is currently 20.0 degrees Celsius."],
    "loop_extensions.py": [
        '  [calling balance {"account": "main"}]',
        "  [waiting for a person: ['t1']]",
        "tools offered in round 1: ['balance', 'transfer']",
        "  [transfer -> Sent 100 EUR to Ana]",
        "  final: 'Done: 100 EUR sent to Ana.'",
        "turn: UserMessage > AssistantMessage > ToolResponseMessage > AssistantMessage > ToolResponseMessage > "
        "AssistantMessage",
        "audit: round 3 of turn",
    ],
    "custom_advisor.py": [
        "[call] answer='You have 1,024 EUR.' model saw='What is on [redacted]?'",
        "[astream] answer='You have 1,024 EUR.'",
        "-> tool calls ['account_balance']",
    ],
    "tool_search.py": [
        "search: Wear a rain jacket; Zeeman and HEMA are open until 18:00.",
        "  round 1: 1 of 100 definitions: ['tool_search']",
        "  round 2: 3 of 100 definitions: ['tool_search', 'weather', 'clothing_shops']",
        "saved: 98% of the definition tokens, with 1 more model call",
    ],
    "conversation.py": ["3: We spoke 2 times before.", "log: 10 events: user assistant tool assistant user"],
    "mcp_tools.py": [
        "answer: Lisbon: sunny, 24°C",
        "paused before any MCP request; awaiting: ['c1']",
        "resumed: Trip to Lisbon cancelled",
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_offline(name: str) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    for line in EXPECTED[name]:
        assert line in result.stdout, f"{line!r} missing from:\n{result.stdout}"


def test_every_example_is_covered() -> None:
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(EXPECTED)


ROOT = EXAMPLES.parent
OURS = {"chatclient", "providers", "advisors", "examples"}


def _demo_install() -> set[str]:
    """The distributions ``make demo`` installs: the runtime dependencies and the extras its stamp names."""
    import re

    makefile = (ROOT / "Makefile").read_text()
    stamp = re.search(r"^demo:\s*\$\(VENV\)/(\S+)", makefile, re.MULTILINE)
    assert stamp, "the Makefile has a demo target that depends on an install stamp"
    recipe = re.search(rf"^\$\(VENV\)/{re.escape(stamp.group(1))}:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe, f"the Makefile has a recipe for {stamp.group(1)}"
    extras = re.search(r"-e\s+'?\.\[([^\]]*)\]", recipe.group(1))
    pyproject = (ROOT / "pyproject.toml").read_text()

    def listed(key: str) -> list[str]:  # a ``key = ["a", "b"]`` list of pyproject.toml (tomllib is 3.11+)
        found = re.search(rf"^{re.escape(key)}\s*=\s*\[(.*?)\]", pyproject, re.MULTILINE | re.DOTALL)
        assert found, f"pyproject.toml lists {key}"
        return re.findall(r'"([^"]+)"', found.group(1))

    wanted = listed("dependencies")
    for extra in extras.group(1).split(",") if extras else []:
        wanted += listed(extra.strip())
    return {_normal(re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]) for requirement in wanted}


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _imports(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports, at module level or inside a function."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return names


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_what_an_example_imports_is_installed_by_make_demo(name: str) -> None:
    """``make demo``'s venv holds only the runtime and the extras its target names; an example that
    imports anything else (the provider tour once read its YAML recordings with an uninstalled
    PyYAML) would crash there while passing here, in the dev venv."""
    from importlib.metadata import packages_distributions

    installed = _demo_install()
    providers_of = packages_distributions()
    missing = {
        module: providers_of.get(module, ["?"])
        for module in _imports(EXAMPLES / name) - OURS - set(sys.stdlib_module_names)
        if not {_normal(d) for d in providers_of.get(module, [])} & installed
    }
    assert not missing, f"{name} imports {missing}, which `make demo` does not install"
