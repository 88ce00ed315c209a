"""What the web console's browser tests share: a real ``seepient serve`` with two principals' tokens, and one
headless Debian Chromium (through Debian's chromedriver: nothing downloads a browser) per test module."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import httpx2
import pytest

from tests.e2e.conftest import Sandboxed
from tests.e2e.test_server import Server, _free_port
from tests.support.scripts import new_script

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


class ConsoleServer(Server):
    """``seepient serve`` (``tests/e2e/test_server.py``'s) started in ``root``, whose default grant is ``root``
    itself, replay scripts and every mode; ``workspace`` lies inside it."""

    tokens: dict[str, str]

    @property
    def workspace(self) -> Path:
        return self.world.workspace

    def script(self, turns: list[dict[str, Any]]) -> Path:
        return new_script(self.root / "scripts", turns)

    def api(self, principal: str = "alice") -> httpx2.Client:
        headers = {"Authorization": f"Bearer {self.tokens[principal]}"}
        return httpx2.Client(base_url=self.url, headers=headers, trust_env=False, timeout=30)

    def start(self) -> None:
        super().start()
        # A browser test makes many requests: whatever the server logs is read away, so a full pipe never
        # blocks it.
        assert self.process is not None
        for stream in (self.process.stdout, self.process.stderr):
            threading.Thread(target=_drain, args=(stream,), daemon=True).start()

    def session(self, turns: list[dict[str, Any]], mode: str = "always-ask") -> str:
        """A session opened over the API on a fresh replay script of ``turns``; its id."""
        with self.api() as api:
            created = api.post(
                "/v1/sessions",
                json={
                    "workspace": str(self.workspace),
                    "model": f"replay:{self.script(turns)}",
                    "mode": mode,
                },
            )
        assert created.status_code == 201, created.text
        return str(created.json()["id"])


def _drain(stream: IO[str] | None) -> None:
    if stream is not None:
        with contextlib.suppress(OSError, ValueError):
            for _ in stream:
                pass


def _console_server(tmp: Path) -> Iterator[ConsoleServer]:
    for folder in ("home", "ws", "outside", "scripts"):
        (tmp / folder).mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp / "home"),
        "SEEPIENT_HOME": str(tmp / "seepient-home"),
        "LANG": "C.UTF-8",
    }
    world = Sandboxed(
        home=tmp / "home",
        seepient_home=tmp / "seepient-home",
        workspace=tmp / "ws",
        outside=tmp / "outside",
        env=env,
    )
    server = ConsoleServer(
        world=world, root=tmp, database=f"sqlite:///{tmp / 'server.db'}", port=_free_port()
    )
    server.tokens = {principal: server.token(principal) for principal in ("alice", "bob")}
    server.start()
    try:
        yield server
    finally:
        server.stop()


def console_fixtures() -> tuple[Any, Any]:
    """The ``server`` and ``browser`` fixtures of a console test module (one of each per module): assign them
    to those two names at the module's top level."""

    @pytest.fixture(scope="module", name="server")
    def server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleServer]:
        yield from _console_server(tmp_path_factory.mktemp("console"))

    @pytest.fixture(scope="module", name="browser")
    def browser_fixture(server: ConsoleServer) -> Iterator[Browser]:
        opened = Browser(server.url)
        try:
            yield opened
        finally:
            opened.quit()

    return server_fixture, browser_fixture


def _need_browser() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if missing:
        message = f"{', '.join(missing)} missing: apt-get install -y chromium chromium-driver (.ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


class Browser:
    """One headless Chromium, with the waits and checks the console tests repeat."""

    def __init__(self, base_url: str) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        _need_browser()
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in (
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--window-size=1280,900",
        ):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.base_url = base_url

    def quit(self) -> None:
        self.driver.quit()

    def wait(self, condition: Callable[[Any], Any], what: str, timeout: float = 30) -> Any:
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        # The console redraws a view when it has loaded: an element read as it goes is simply read again.
        waiting = WebDriverWait(
            self.driver, timeout, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,)
        )
        return waiting.until(condition, message=what)

    def css(self, selector: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def all(self, selector: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def wait_css(self, selector: str, timeout: float = 30) -> Any:
        return self.wait(
            lambda _: (found := self.all(selector)) and found[0], f"an element {selector}", timeout
        )

    def wait_text(self, selector: str, text: str, timeout: float = 30) -> Any:
        def shown(_: Any) -> Any:
            return next((e for e in self.all(selector) if text in e.text), None)

        return self.wait(shown, f"{text!r} in {selector}", timeout)

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def open(self, hash_route: str = "#/") -> None:
        self.driver.get(f"{self.base_url}/{hash_route}")

    def open_session(self, session_id: str) -> None:
        self.open(f"#/sessions/{session_id}")
        self.wait_text(".connection", "Live")

    def prompt(self, text: str) -> None:
        """Type ``text`` into the prompt box and send it."""
        box = self.css("#prompt")
        box.clear()
        box.send_keys(text)
        self.css("#send").click()

    def signed_out(self) -> Any:
        """The sign-in view with no token kept; its token field."""
        self.open()
        self.js("sessionStorage.clear()")
        self.driver.refresh()
        return self.wait_css("#token")

    def sign_in(self, token: str) -> None:
        self.signed_out().send_keys(token)
        self.css("form.signin button[type=submit]").click()
        self.wait_text("h1", "Sessions")

    def narrow(self, width: int | None) -> None:
        """Emulate a phone ``width`` pixels wide (``None``: back to the desktop window)."""
        if width is None:
            self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        else:
            self.driver.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": True},
            )

    def sideways_overflow(self) -> int:
        """How many pixels the page is wider than its viewport (0: no sideways scrolling)."""
        return int(
            self.js("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        )

    def serious_accessibility_violations(self) -> list[dict[str, Any]]:
        from axe_selenium_python import Axe

        axe = Axe(self.driver)
        axe.inject()
        results = axe.run()
        return [v for v in results["violations"] if v.get("impact") in ("serious", "critical")]

    def console_errors(self) -> list[dict[str, Any]]:
        return [e for e in self.driver.get_log("browser") if e.get("level") == "SEVERE"]
