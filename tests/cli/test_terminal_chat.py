"""The terminal chat, driven in a pseudo-terminal as a person would: ``python -m chatclient chat``
against a loopback OpenAI-compatible server (``chat_server``), with tools loaded by ``--tools``.

Every wait is bounded (a read that sees nothing for ``WAIT`` seconds fails the test with what the
terminal showed); no assertion is about time.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from .chat_server import STALLED, ChatServer, chat_server

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

WAIT = 30.0
"""The longest a step may wait for the terminal to show something; a bound, never a measure."""

TOOLS = """
    from chatclient import tool

    GREETING = "hello"

    @tool(description="The weather in a city")
    def get_weather(city: str) -> str:
        return f"Sunny in {city}"

    class Booking:
        @tool(description="Book a flight", requires_confirmation=True)
        def book_flight(self, flight: str) -> str:
            with open("booked.txt", "a") as out:
                out.write(flight + "\\n")
            return f"Booked {flight}"

    class Payments:
        @tool(description="Pay an invoice", requires_confirmation="manager")
        def pay_invoice(self, invoice: str) -> str:
            with open("paid.txt", "a") as out:
                out.write(invoice + "\\n")
            return f"Paid {invoice}"
"""


class Terminal:
    """A child process on a pseudo-terminal: ``expect`` what it shows, ``send`` what a person types."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        self.master = master
        self.seen = ""
        self.position = 0
        # A person's terminal delivers Ctrl-C; a test run started in the background (``make test &``)
        # ignores SIGINT, and a child would inherit that. Spawn it with the default disposition.
        ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        if ignored:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            self.process = subprocess.Popen(
                argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, close_fds=True, start_new_session=True
            )
        finally:
            if ignored:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.close(slave)

    def _read(self) -> bool:
        ready, _, _ = select.select([self.master], [], [], WAIT)
        if not ready:
            return False
        try:
            data = os.read(self.master, 4096)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.seen += data.decode(errors="replace").replace("\r", "")
        return bool(data)

    def expect(self, text: str) -> str:
        """What the terminal showed since the last ``expect``, up to and including ``text``."""
        while (found := self.seen.find(text, self.position)) < 0:
            if not self._read():
                raise AssertionError(f"the terminal never showed {text!r}; it showed:\n{self.seen}")
        start, self.position = self.position, found + len(text)
        return self.seen[start : self.position]

    def send(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def finish(self) -> int:
        """End of input (Ctrl-D), then the exit status."""
        os.write(self.master, b"\x04")
        while self._read():
            pass
        return self.process.wait(timeout=WAIT)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=WAIT)
        os.close(self.master)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as running:
        yield running


def _start(tmp_path: Path, *args: str) -> Terminal:
    (tmp_path / "chat_tools.py").write_text(textwrap.dedent(TOOLS))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "OPENAI_BASE_URL"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).parents[2]), env.get("PYTHONPATH")) if p)
    return Terminal([sys.executable, "-m", "chatclient", "chat", *args], tmp_path, env)


def test_a_chat_streams_replies_shows_tools_asks_before_gated_ones_and_remembers(
    tmp_path: Path, server: ChatServer
) -> None:
    term = _start(
        tmp_path,
        "openai:cli-model",
        "--base-url",
        server.base_url,
        "--system",
        "Be brief.",
        "--tools",
        "chat_tools:get_weather",
        "--tools",
        "chat_tools:Booking",
    )
    try:
        term.expect("chatclient chat with openai:cli-model")
        term.expect("you> ")
        term.send("hello there")
        assert "Hello! You said: hello there\n" in term.expect("you> ")

        term.send("what is the weather in Paris?")
        shown = term.expect("you> ")
        assert (
            '[tool] get_weather {"city": "Paris"}\n[result] get_weather: Sunny in Paris\nTool said: Sunny in Paris\n'
            in shown
        )

        term.send("book VX205")
        assert '[tool] book_flight {"flight": "VX205"}\n' in term.expect("allow or deny? [a/d] ")
        assert not (tmp_path / "booked.txt").exists()  # nothing runs before the decision
        term.send("maybe")
        term.expect("Please answer a (allow) or d (deny).")
        term.expect("allow or deny? [a/d] ")
        term.send("a")
        assert "[result] book_flight: Booked VX205\nTool said: Booked VX205\n" in term.expect("you> ")
        assert (tmp_path / "booked.txt").read_text() == "VX205\n"

        term.send("book it again")
        term.expect("allow or deny? [a/d] ")
        term.send("d")
        shown = term.expect("you> ")
        assert "[result] book_flight: The user did not allow this tool call.\n" in shown
        assert "Tool said: The user did not allow this tool call.\n" in shown
        assert (tmp_path / "booked.txt").read_text() == "VX205\n"  # the denied call never ran

        term.send("what was my first message?")
        assert "Your first message was: hello there\n" in term.expect("you> ")
        assert term.finish() == 0
    finally:
        term.close()
    system = [m for m in server.requests[-1]["messages"] if m["role"] == "system"]
    assert system == [{"role": "system", "content": "Be brief."}]
    assert all(r["stream"] is True for r in server.requests)


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_reasoning_is_shown_dimmed_after_thinking_and_hidden_with_no_reasoning(
    tmp_path: Path, server: ChatServer
) -> None:
    shown_with = _start(tmp_path, "openai:cli-model", "--base-url", server.base_url)
    try:
        shown_with.expect("you> ")
        shown_with.send("think about it")
        shown = shown_with.expect("you> ")
        assert shown_with.finish() == 0
    finally:
        shown_with.close()
    assert "[thinking] \x1b[2mLet me think. The answer is 42.\x1b[0m\nIt is 42.\n" in shown  # dimmed on a tty
    hidden = _start(tmp_path, "openai:cli-model", "--base-url", server.base_url, "--no-reasoning")
    try:
        hidden.expect("you> ")
        hidden.send("think about it")
        shown = _plain(hidden.expect("you> "))
        assert hidden.finish() == 0
    finally:
        hidden.close()
    assert "It is 42.\n" in shown
    assert "[thinking]" not in shown and "Let me think" not in shown


def test_ctrl_c_stops_the_reply_closes_the_stream_keeps_the_chat_and_stores_nothing(
    tmp_path: Path, server: ChatServer
) -> None:
    term = _start(tmp_path, "openai:cli-model", "--base-url", server.base_url)
    try:
        term.expect("you> ")
        term.send("hello there")
        term.expect("you> ")
        term.send("tell me a story, then stall")
        term.expect(STALLED)  # the reply has started and the server holds the rest
        term.process.send_signal(signal.SIGINT)  # what the terminal sends on Ctrl-C
        assert "[interrupted]\n" in term.expect("you> ")
        assert server.disconnected.wait(WAIT), "the interrupted stream was never closed"
        term.send("what was my first message?")
        assert "Your first message was: hello there\n" in term.expect("you> ")
        assert term.finish() == 0
    finally:
        term.close()
    assert "Traceback" not in term.seen
    sent = [m.get("content") for m in server.requests[-1]["messages"]]
    assert sent == ["hello there", "Hello! You said: hello there", "what was my first message?"]


def test_a_tool_that_needs_a_role_is_refused_clearly_without_it_and_runs_with_it(
    tmp_path: Path, server: ChatServer
) -> None:
    args = ("openai:cli-model", "--base-url", server.base_url, "--tools", "chat_tools:Payments")
    clerk = _start(tmp_path, *args)
    try:
        clerk.expect("you> ")
        clerk.send("pay the invoice")
        clerk.expect("[confirm] pay_invoice")
        clerk.send("a")
        shown = clerk.expect("you> ")
        clerk.send("hello there")
        assert "Hello! You said: hello there\n" in clerk.expect("you> ")  # the chat goes on
        assert clerk.finish() == 0
    finally:
        clerk.close()
    assert "[refused] pay_invoice: needs role 'manager'; you decide as terminal (no role)\n" in shown
    assert "Nothing ran. Start the chat with --approver NAME --approver-role ROLE to decide such calls.\n" in shown
    assert "Traceback" not in clerk.seen and not (tmp_path / "paid.txt").exists()
    assert [m.get("content") for m in server.requests[-1]["messages"]] == ["hello there"]  # the refused turn: not kept

    manager = _start(tmp_path, *args, "--approver", "ana", "--approver-role", "manager")
    try:
        manager.expect("you> ")
        manager.send("pay the invoice")
        manager.expect("[confirm] pay_invoice")
        manager.send("a")
        assert "[result] pay_invoice: Paid INV-7\nTool said: Paid INV-7\n" in manager.expect("you> ")
        assert manager.finish() == 0
    finally:
        manager.close()
    assert (tmp_path / "paid.txt").read_text() == "INV-7\n"


def test_a_sqlite_memory_file_keeps_the_conversation_for_the_next_session(tmp_path: Path, server: ChatServer) -> None:
    args = ("openai:cli-model", "--base-url", server.base_url, "--memory-file", str(tmp_path / "chat.db"))
    first = _start(tmp_path, *args)
    try:
        first.expect("you> ")
        first.send("my name is Ada")
        first.expect("you> ")
        assert first.finish() == 0
    finally:
        first.close()
    second = _start(tmp_path, *args)
    try:
        second.expect("you> ")
        second.send("what was my first message?")
        assert "Your first message was: my name is Ada\n" in second.expect("you> ")
        assert second.finish() == 0
    finally:
        second.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["gpt-4o-mini"],
            "chatclient: error: Expected 'provider:model' (e.g. 'openai:gpt-4o-mini'), got 'gpt-4o-mini'",
        ),
        (["nope:model"], "chatclient: error: Unknown provider 'nope'. Known providers: "),
        (["openai:gpt-4o-mini"], "chatclient: error: No OpenAI API key for https://api.openai.com/v1"),
        (
            ["openai:m", "--base-url", "http://127.0.0.1:9/v1", "-o", "temprature=0.2"],
            "chatclient: error: -o/--option: default_options() got an unknown option 'temprature' "
            "for OpenAIChatOptions. Did you mean 'temperature'?",
        ),
        (
            ["openai:m", "--base-url", "http://127.0.0.1:9/v1", "--tools", "no_such_module:x"],
            "chatclient: error: --tools 'no_such_module:x': cannot import 'no_such_module': ModuleNotFoundError",
        ),
        (
            ["openai:m", "--base-url", "http://127.0.0.1:9/v1", "--tools", "chat_tools:missing"],
            "chatclient: error: --tools 'chat_tools:missing': 'chat_tools' has no attribute 'missing'",
        ),
        (
            ["openai:m", "--base-url", "http://127.0.0.1:9/v1", "--tools", "chat_tools:GREETING"],
            "chatclient: error: --tools 'chat_tools:GREETING': str object is not a tool",
        ),
    ],
)
def test_a_user_mistake_is_one_line_and_status_2(tmp_path: Path, args: list[str], message: str) -> None:
    term = _start(tmp_path, *args)
    try:
        shown = term.expect(message)
        assert term.finish() == 2
    finally:
        term.close()
    assert "Traceback" not in term.seen and shown.startswith("chatclient: error: ")


def test_model_options_from_the_command_line_reach_the_wire(tmp_path: Path, server: ChatServer) -> None:
    term = _start(
        tmp_path,
        "openai:cli-model",
        "--base-url",
        server.base_url,
        "--tools",
        "chat_tools:get_weather",
        "-o",
        "tool_choice=required",
        "--option",
        "temperature=0.2",
    )
    try:
        term.expect("you> ")
        term.send("hello there")
        term.expect("you> ")
        assert term.finish() == 0
    finally:
        term.close()
    sent = server.requests[0]
    assert (sent["tool_choice"], sent["temperature"]) == ("required", 0.2)


def test_a_failing_turn_is_reported_and_the_chat_goes_on(tmp_path: Path) -> None:
    term = _start(tmp_path, "openai:m", "--base-url", "http://127.0.0.1:9/v1")  # nothing listens on port 9
    try:
        term.expect("you> ")
        term.send("hello")
        assert "[error] APIConnectionError: " in term.expect("you> ")
        assert term.finish() == 0
    finally:
        term.close()
    assert "Traceback" not in term.seen


def test_the_console_script_is_declared() -> None:
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "chatclient"]
    assert script.value == "chatclient.__main__:main"


def test_import_chatclient_does_not_load_the_cli() -> None:
    code = "import sys, chatclient; print(sorted(m for m in sys.modules if m.split('.')[:2] == ['chatclient', 'cli']))"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT, check=True)
    assert shown.stdout.strip() == "[]"
