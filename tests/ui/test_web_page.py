"""examples/web in a real headless Chromium: ask for a booking, reload mid-approval, deny with a reason.

Needs selenium (dev extra), Debian's ``chromium`` and ``chromium-driver`` (.ci/services.sh installs
them) and uvicorn. Without them the test skips, except under CI=true where it fails. A screenshot of
the finished page is saved under ``$CHATCLIENT_TEST_ARTIFACTS`` (default: the system's temp folder).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=900,1000",
)  # fmt: skip


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as error:
        return f"{error.name} is not installed (pip install -e '.[dev]')"
    if CHROMIUM is None or CHROMEDRIVER is None:
        return "chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
    return None


def _require_browser() -> None:
    reason = _missing()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser test cannot run under CI: {reason}")
        pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """The example app on a loopback port, with its pending states in a SQLite file."""
    _require_browser()
    import uvicorn

    spec = importlib.util.spec_from_file_location("examples_web_app", ROOT / "examples" / "web" / "app.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    app = example.create_app(tmp_path / "pending.db")
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:  # startup, not a timing assertion: a server that never starts hangs the
        if not thread.is_alive():  # test until pytest-timeout, a dead one fails here
            pytest.fail("the example server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tmp_path / "profile"
    profile.mkdir()
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _artifacts() -> Path:
    folder = Path(os.environ.get("CHATCLIENT_TEST_ARTIFACTS") or tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _assistant_saying(driver: Any, words: str) -> Any:
    from selenium.webdriver.common.by import By

    return next((m for m in driver.find_elements(By.CSS_SELECTOR, ".message.assistant") if words in m.text), None)


def _bookings(url: str) -> int:
    with urllib.request.urlopen(f"{url}/api/stats") as response:
        return int(json.load(response)["bookings"])


@pytest.mark.timeout(120)
def test_a_person_denies_a_booking_with_a_reason_in_a_real_browser(
    served: tuple[str, Any], browser: Any, record_property: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    url, app = served
    began = time.perf_counter()
    wait = WebDriverWait(browser, 30)
    browser.get(url)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")

    browser.find_element(By.ID, "prompt").send_keys("Book the 9:40 to Oslo")
    browser.find_element(By.ID, "send").click()
    card = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, ".tool.approval .deny")))
    assert "book_flight" in browser.find_element(By.CSS_SELECTOR, ".tool.approval .call").text
    assert "Oslo" in browser.find_element(By.CSS_SELECTOR, ".tool.approval .call").text
    assert _bookings(url) == 0, "the gated tool ran before anyone decided"

    browser.refresh()  # mid-approval: the card comes back from the pending store, not from the tab
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
    card = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, ".tool.approval")))
    assert "Waiting for your approval" in card.text
    assert "Book the 9:40 to Oslo" in browser.find_element(By.CSS_SELECTOR, ".message.user").text
    assert _bookings(url) == 0

    card.find_element(By.CSS_SELECTOR, ".reason").send_keys("I prefer the 10:15 train")
    card.find_element(By.CSS_SELECTOR, ".deny").click()
    answer = wait.until(
        lambda d: next(
            (m for m in d.find_elements(By.CSS_SELECTOR, ".message.assistant") if "received" in m.text), None
        )
    )
    wait.until(lambda d: d.find_element(By.ID, "status").text == "Done")
    assert "I prefer the 10:15 train" in answer.text, answer.text  # the model read the person's reason
    assert "Denied" in browser.find_element(By.CSS_SELECTOR, ".tool.approval .status").text
    assert _bookings(url) == 0, "a denied call ran"
    assert app.state.bookings.made == 0

    shot = _artifacts() / "web-approval-denied.png"
    assert browser.save_screenshot(str(shot)), "no screenshot"
    elapsed = time.perf_counter() - began
    record_property("browser_seconds", round(elapsed, 2))
    (_artifacts() / "web-approval-timing.txt").write_text(f"{elapsed:.2f} s\n", encoding="utf-8")


@pytest.mark.timeout(120)
def test_an_approved_booking_runs_once_after_the_click(served: tuple[str, Any], browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    url, _ = served
    wait = WebDriverWait(browser, 30)
    browser.get(url)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
    browser.find_element(By.ID, "prompt").send_keys("Please book the 18:05 to Bergen")
    browser.find_element(By.ID, "send").click()
    card = wait.until(seen.visibility_of_element_located((By.CSS_SELECTOR, ".tool.approval")))
    assert _bookings(url) == 0
    card.find_element(By.CSS_SELECTOR, ".approve").click()
    wait.until(lambda d: d.find_element(By.ID, "status").text == "Done")
    answers = [m.text for m in browser.find_elements(By.CSS_SELECTOR, ".message.assistant")]
    assert any("Booked the 18:05 to Bergen" in text for text in answers), answers
    assert _bookings(url) == 1
