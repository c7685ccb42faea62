"""``examples/provider_tour.py`` runs offline on the recorded traffic and says what each provider did."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "provider_tour.py"
CREDENTIALS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST",
               "GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_BASE_URL")  # fmt: skip

EXPECTED = {
    "openai": (
        "providers.openai",
        [
            "[openai] replay of openai-chat/b_single_tool_call_roundtrip.yaml",
            "tool:   get_temperature(city='Tokyo') -> 20.0",
            "answer: The temperature in Tokyo is currently 20.0 degrees Celsius.",
            "usage:  125 in / 30 out (all rounds)",
        ],
    ),
    "ollama-openai": (
        "providers.openai",
        [
            "[ollama-openai] replay of ollama/openai_compat_c_parallel_tool_calls_roundtrip.yaml",
            "tool:   best_language_to_learn() -> Ruby",
            "tool:   weather(latitude='52.5200', longitude='13.4050') -> Current weather at 52.5200, 13.4050",
            "answer: The current weather in Berlin (52.5200, 13.4050) is **15°C**",
        ],
    ),
    "anthropic": (
        "providers.anthropic",
        [
            "[anthropic] replay of anthropic/b_single_tool_use_roundtrip.yaml",
            "tool:   weather(latitude='52.5200', longitude='13.4050')",
            "answer: The weather in Berlin is currently:",
        ],
    ),
    "openai-responses": (
        "providers.openai_responses",
        [
            "[openai-responses] replay of openai-responses/b_single_function_call_with_encrypted_reasoning.yaml",
            "tool:   weather(latitude='52.5200', longitude='13.4050')",
            "answer: Current weather in Berlin (52.5200, 13.4050): 15°C",
        ],
    ),
    "gemini": (
        "providers.gemini",
        [
            "[gemini] replay of gemini/c_parallel_function_calls_roundtrip.yaml",
            "tool:   secret_retrieval_tool(password='mellon') -> Welcome to Moria!",
            "tool:   secret_retrieval_tool(password='radiance') -> Life before Death",
            "answer: The secrets have been retrieved.",
            "usage:  222 in / 153 out (all rounds)",
        ],
    ),
    "ollama": (
        "providers.ollama",
        [
            "[ollama] replay of ollama/native_b_tool_call.yaml, ollama/native_b_tool_result_request.yaml",
            "tool:   get_current_weather(city='Paris')",
            "answer: This is a simple example",
        ],
    ),
}


def offline_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in CREDENTIALS}


def run(code: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *code], cwd=ROOT, env=offline_env(), capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture(scope="module")
def output() -> str:
    result = run([str(EXAMPLE)])
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.parametrize("label", sorted(EXPECTED))
def test_each_existing_provider_has_the_conversation(output: str, label: str) -> None:
    module, lines = EXPECTED[label]
    if importlib.util.find_spec(module) is None:
        assert f"[{label}] skipped: {module} is not available yet" in output
        return
    for line in lines:
        assert line in output, f"{line!r} missing from:\n{output}"
    assert "failed:" not in output


def test_a_missing_provider_is_skipped_with_a_clear_line() -> None:
    code = (
        "import runpy, sys; sys.modules['providers.anthropic'] = None; "
        f"runpy.run_path({str(EXAMPLE)!r}, run_name='__main__')"
    )
    result = run(["-c", code])
    assert result.returncode == 0, result.stderr
    assert "[anthropic] skipped: providers.anthropic is not available yet" in result.stdout
    assert "answer: The temperature in Tokyo is currently 20.0 degrees Celsius." in result.stdout
