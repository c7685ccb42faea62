"""``examples/notebook.ipynb`` runs in a real Jupyter kernel (ipykernel, driven by nbclient), and
its cells render as promised: sync calls, a tool loop, a stream, a pause and a resume, all while the
kernel's event loop is running.

The kernel is this interpreter: the test writes a kernelspec for ``sys.executable`` into a temporary
folder on ``JUPYTER_PATH`` (nothing is installed for the user), so a fresh clone with no Jupyter configuration (CI)
runs it the same way. Each cell is bounded by a timeout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"
KERNEL = "chatclient-test"
CELL_TIMEOUT = 60


def _install_kernelspec(folder: Path) -> None:
    """A kernelspec that runs this interpreter, in ``folder/kernels`` (found through ``JUPYTER_PATH``)."""
    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"}))


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """The notebook, executed once; each tagged cell's outputs by tag."""
    folder = tmp_path_factory.mktemp("jupyter")
    with pytest.MonkeyPatch.context() as env:
        # Keep Jupyter and IPython away from the user's config and home (and CI's missing one).
        env.setenv("JUPYTER_PLATFORM_DIRS", "1")
        for variable, name in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                               ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):  # fmt: skip
            env.setenv(variable, str(folder / name))
        env.setenv("JUPYTER_PATH", str(folder))
        _install_kernelspec(folder)
        notebook = nbformat.read(NOTEBOOK, as_version=4)  # type: ignore[no-untyped-call]
        client = NotebookClient(
            notebook,
            kernel_name=KERNEL,
            timeout=CELL_TIMEOUT,
            startup_timeout=CELL_TIMEOUT,
            resources={"metadata": {"path": str(ROOT)}},
        )
        client.execute()
    return {cell.metadata["tags"][0]: cell.outputs for cell in notebook.cells if cell.metadata.get("tags")}


def _data(outputs: list[dict[str, Any]], kind: str = "execute_result") -> list[dict[str, str]]:
    return [o["data"] for o in outputs if o["output_type"] == kind]


def _result(outputs: list[dict[str, Any]]) -> dict[str, str]:
    (data,) = _data(outputs)
    return data


pytestmark = pytest.mark.timeout(300)


def test_no_cell_failed(executed: dict[str, list[dict[str, Any]]]) -> None:
    errors = [o for outputs in executed.values() for o in outputs if o["output_type"] == "error"]
    assert errors == []


def test_the_client_shows_its_model_and_tools(executed: dict[str, list[dict[str, Any]]]) -> None:
    data = _result(executed["client"])
    assert data["text/plain"] == (
        "ChatClient(model=ScriptedChatModel, advisors=[ToolCallingAdvisor], tools=[flight_status, book_flight])"
    )
    assert "- tools: `flight_status`, `book_flight` (needs confirmation)" in data["text/markdown"]
    assert (
        "<li>tools: <code>flight_status</code>, <code>book_flight</code> (needs confirmation)</li>" in data["text/html"]
    )


def test_a_sync_call_works_inside_the_running_loop(executed: dict[str, list[dict[str, Any]]]) -> None:
    outputs = executed["sync-call"]
    assert [o["text"] for o in outputs if o["output_type"] == "stream"] == ["loop running: True\n"]
    data = _result(outputs)
    assert data["text/markdown"] == "Hello! How can I help?\n\n*model `scripted` · finish `stop`*"
    assert data["text/html"].startswith(
        '<div class="chatclient-response"><div style="white-space:pre-wrap">Hello! How can I help?</div>'
    )


def test_a_tool_loop_shows_the_answer(executed: dict[str, list[dict[str, Any]]]) -> None:
    assert _result(executed["tool-loop"])["text/markdown"].startswith("VX205 is on time.")


def test_a_stream_displays_each_event(executed: dict[str, list[dict[str, Any]]]) -> None:
    shown = _data(executed["stream"], "display_data")
    texts = [d["text/plain"] for d in shown]
    assert texts[0].startswith("TextDelta(") and texts[-1].startswith("TurnFinished(")
    assert any(t.startswith("RoundFinished(round=1, finish='stop'") for t in texts)
    assert all("text/markdown" in d and "text/html" in d for d in shown)
    assert "".join(t.split("'")[1] for t in texts if t.startswith("TextDelta(")) == "Streaming works."
    assert shown[-1]["text/markdown"].startswith("Streaming works.")


def test_a_paused_turn_shows_the_calls_it_waits_for_escaped(executed: dict[str, list[dict[str, Any]]]) -> None:
    paused = _result(executed["pause"])
    assert paused["text/plain"] == "ChatClientResponse(paused, awaiting=['b1'])"
    assert paused["text/markdown"].endswith(
        '| b1 | `book_flight` | `{"flight_number": "<script>VX205</script>"}` | yes |'
    )
    html = paused["text/html"]
    assert "<script>" not in html
    assert "<td><code>{&quot;flight_number&quot;: &quot;&lt;script&gt;VX205&lt;/script&gt;&quot;}</code></td>" in html
    pending = _result(executed["pending"])
    assert pending["text/plain"].startswith("PendingToolCalls(reply_id=") and "book_flight(b1)" in pending["text/plain"]
    assert pending["text/html"] == html


def test_the_resume_finishes_the_turn(executed: dict[str, list[dict[str, Any]]]) -> None:
    assert _result(executed["resume"])["text/markdown"].startswith("Your flight is booked.")


def test_top_level_await_runs_the_async_twin(executed: dict[str, list[dict[str, Any]]]) -> None:
    assert _result(executed["async"])["text/plain"] == "'Async works too.'"
