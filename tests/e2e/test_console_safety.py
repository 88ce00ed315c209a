"""The web console against hostile content, and for people who use it differently: model text, a file name, a
diff and tool output full of script tags, event handlers, ``javascript:`` links and a look-alike Approve
button render as text and nothing runs; axe-core finds no serious violation; keyboard alone gets from sign-in
to an approved change; at 375 px nothing scrolls sideways."""

from __future__ import annotations

from typing import Any

from tests.e2e.console_browser import Browser, ConsoleServer, console_fixtures

PWN = "window.__pwned = (window.__pwned || 0) + 1"
HOSTILE_TEXT = (
    f'Look: <script>{PWN}</script> and <img src=x onerror="{PWN}"> and '
    f'<svg onload="{PWN}"></svg> and [a link](javascript:{PWN}) and '
    '<a href="javascript:alert(1)">another</a>.\n\n'
    '<button class="control approve" data-control="approval" type="button">Approve once</button>\n\n'
    "**Approve once** ← press it\n\n" + "x" * 300
)
HOSTILE_NAME = "<img src=x onerror=alert(1)>.txt"
HOSTILE_CONTENT = f'<script>{PWN}</script>\n<button onclick="{PWN}">Approve once</button>\n'
HOSTILE_OUTPUT = (
    "<script>window.__pwned=1</script><button>Approve once</button><a href=javascript:alert(1)>x</a>"
)


server, browser = console_fixtures()


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _nothing_ran_and_nothing_acts(browser: Browser) -> None:
    found = browser.js(
        """
        const body = document.body;
        const handlers = [...body.querySelectorAll("*")].flatMap((e) =>
            [...e.attributes].filter((a) => a.name.startsWith("on")).map((a) => e.tagName + " " + a.name));
        return {
            pwned: window.__pwned ?? null,
            alerts: window.__alerts ?? null,
            active: body.querySelectorAll("script, img, svg, iframe, object, embed, form:not(.prompt-form):not(.new-session):not(.signin)").length,
            javascriptLinks: body.querySelectorAll("a[href^='javascript' i]").length,
            handlers,
            transcriptControls: document.querySelectorAll(".transcript button, .transcript input, .transcript select, .transcript textarea").length,
        };
        """
    )
    assert found == {
        "pwned": None,
        "alerts": None,
        "active": 0,
        "javascriptLinks": 0,
        "handlers": [],
        "transcriptControls": 0,
    }


def test_hostile_text_names_diffs_and_output_render_as_text_and_nothing_runs(
    server: ConsoleServer, browser: Browser
) -> None:
    session_id = server.session(
        [
            {"text": HOSTILE_TEXT, **_call("write_file", path=HOSTILE_NAME, content=HOSTILE_CONTENT)},
            {"text": "Now a command.", **_call("shell", command=f"printf '%s' '{HOSTILE_OUTPUT}'")},
            {"text": "Done."},
        ],
    )
    browser.sign_in(server.tokens["alice"])
    browser.console_errors()  # what came before is not this test's
    browser.js("window.alert = () => { window.__alerts = (window.__alerts || 0) + 1; }")
    browser.open_session(session_id)
    browser.prompt(f"<script>{PWN}</script> hostile prompt")
    panel = browser.wait_css("section.approval")
    browser.wait_css(".model-text.rendered")
    # The model's text is there to read, markup and all, as text.
    transcript = browser.css(".transcript").text
    assert "<script>" in transcript and "<button" in transcript and "javascript:" in transcript
    assert f"<script>{PWN}</script> hostile prompt" in transcript
    # The file name and the diff are text too.
    assert HOSTILE_NAME in panel.find_element("css selector", ".path").text
    assert "<script>" in panel.find_element("css selector", ".diff-split").text
    # Only the console's own control answers to "Approve once", inside its approval panel.
    approve = browser.driver.find_elements("xpath", "//button[normalize-space()='Approve once']")
    assert len(approve) == 1 and approve[0].get_attribute("data-control") == "approval"
    assert approve[0].find_element("xpath", "ancestor::section[@class='approval']")
    heading = panel.find_element("css selector", "h2")
    assert heading.text == "Seepient asks: approve this action?"
    # Clicking the look-alike in the transcript answers nothing.
    fake = next(e for e in browser.all(".model-text strong") if e.text == "Approve once")
    fake.click()
    assert browser.all("section.approval") and not (server.workspace / HOSTILE_NAME).exists()
    _nothing_ran_and_nothing_acts(browser)

    approve[0].click()
    shell_panel = browser.wait_text("section.approval", "printf")
    assert "Folder" in shell_panel.text and str(server.workspace) in shell_panel.text
    assert (server.workspace / HOSTILE_NAME).read_text() == HOSTILE_CONTENT
    shell_panel.find_element("xpath", ".//button[text()='Approve once']").click()
    browser.wait_text(".model-text", "Done.")
    browser.all("details.tool summary")[-1].click()  # a tool that went well shows its output when opened
    output = browser.wait_text(".tool-output", "<script>window.__pwned=1</script>")
    assert HOSTILE_OUTPUT in output.text
    _nothing_ran_and_nothing_acts(browser)
    # Not even a refused attempt: no policy violation or script error was logged while it all rendered.
    assert browser.console_errors() == []


def test_html_that_slipped_past_the_sanitiser_would_still_not_run(
    server: ConsoleServer, browser: Browser
) -> None:
    """The second wall: the page's policy refuses HTML strings in any sink, and inline script never runs."""
    browser.sign_in(server.tokens["alice"])
    outcome = browser.js(
        """
        const results = {};
        try { document.createElement("div").innerHTML = "<img src=x onerror='window.__pwned=1'>"; results.sink = "accepted"; }
        catch (error) { results.sink = error.name; }
        const script = document.createElement("script");
        try { script.textContent = "window.__pwned = 1"; document.body.append(script); results.inline = "appended"; }
        catch (error) { results.inline = error.name; }
        results.pwned = window.__pwned ?? null;
        return results;
        """
    )
    assert outcome["sink"] == "TypeError" and outcome["pwned"] is None
    # The refusals are logged as errors: the hostile-content test's empty log means none was even needed.
    refusals = [e["message"] for e in browser.console_errors() if e["source"] == "security"]
    assert any("requires 'TrustedHTML' assignment" in message for message in refusals), refusals


def test_axe_finds_no_serious_violation_in_any_view(server: ConsoleServer, browser: Browser) -> None:
    (server.workspace / "a11y.txt").write_text("one\ntwo\n")
    session_id = server.session(
        [_call("write_file", path="a11y.txt", content="one\nthree\n"), {"text": "ok"}]
    )
    browser.signed_out()
    views = {"sign-in": browser.serious_accessibility_violations()}
    browser.sign_in(server.tokens["alice"])
    views["sessions"] = browser.serious_accessibility_violations()
    browser.open_session(session_id)
    browser.prompt("change a11y.txt")
    browser.wait_css("section.approval")
    views["approval"] = browser.serious_accessibility_violations()
    browser.css("section.approval button.approve").click()
    browser.wait_text(".model-text", "ok")
    browser.open(f"#/sessions/{session_id}/audit")
    browser.wait_text(".chain", "Chain verified")
    views["audit"] = browser.serious_accessibility_violations()
    assert {view: [v["id"] for v in found] for view, found in views.items()} == {
        "sign-in": [],
        "sessions": [],
        "approval": [],
        "audit": [],
    }


def _tab_to(browser: Browser, selector: str, presses: int = 60) -> Any:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    for _ in range(presses):
        if browser.js(f"return document.activeElement.matches({selector!r})"):
            return browser.driver.switch_to.active_element
        ActionChains(browser.driver).send_keys(Keys.TAB).perform()
    raise AssertionError(f"Tab never reached {selector}")


def _type(browser: Browser, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser.driver).send_keys(*keys).perform()


def test_keyboard_alone_signs_in_creates_a_session_and_approves(
    server: ConsoleServer, browser: Browser
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    script = server.script(
        [_call("write_file", path="keys.txt", content="typed\n"), {"text": "Keyboard done."}]
    )
    browser.signed_out()
    _tab_to(browser, "#token")
    _type(browser, server.tokens["alice"], Keys.ENTER)
    browser.wait_text("h1", "Sessions")
    _tab_to(browser, "#workspace")
    ActionChains(browser.driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).perform()
    _type(browser, str(server.workspace))
    _tab_to(browser, "#model")
    _type(browser, "A")  # a focused select takes the option starting with the letter typed
    assert browser.js("return document.querySelector('#model').value") == "__replay__"
    _tab_to(browser, "#replay-script")
    _type(browser, str(script))
    button = _tab_to(browser, "form.new-session button[type=submit]")
    outline = browser.js("return getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none", "the focused control shows where the focus is"
    button.send_keys(Keys.ENTER)
    # The failure message names the page, never an element: the form is gone once the session page opens.
    browser.wait(lambda _: "#/sessions/" in browser.driver.current_url, "the new session's page to open")
    browser.wait_text(".connection", "Live")
    _tab_to(browser, "#prompt")
    _type(browser, "write keys.txt")
    ActionChains(browser.driver).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(Keys.CONTROL).perform()
    browser.wait_css("section.approval")
    _tab_to(browser, "section.approval button.approve")
    _type(browser, Keys.ENTER)
    browser.wait_text(".model-text", "Keyboard done.")
    assert (server.workspace / "keys.txt").read_text() == "typed\n"


def test_at_375_pixels_nothing_scrolls_sideways(server: ConsoleServer, browser: Browser) -> None:
    (server.workspace / "wide.txt").write_text("short\n")
    long_line = "y" * 400
    session_id = server.session(
        [
            {
                "text": "z" * 500 + "\n\n```\n" + "w" * 400 + "\n```",
                **_call("write_file", path="wide.txt", content=long_line + "\n"),
            },
            {"text": "wide done"},
        ],
    )
    browser.sign_in(server.tokens["alice"])
    browser.narrow(375)
    try:
        assert browser.js("return window.innerWidth") == 375
        browser.open("#/")
        browser.wait_text("h1", "Sessions")
        assert browser.sideways_overflow() == 0
        browser.open_session(session_id)
        browser.prompt("make it wide")
        panel = browser.wait_css("section.approval")
        browser.wait_css(".model-text.rendered")
        # The unified diff stands in for the side-by-side one on a narrow screen.
        assert not panel.find_element("css selector", ".diff-split").is_displayed()
        assert panel.find_element("css selector", ".diff-unified").is_displayed()
        assert browser.sideways_overflow() == 0
        panel.find_element("css selector", "button.approve").click()
        browser.wait_text(".model-text", "wide done")
        assert browser.sideways_overflow() == 0
        browser.open(f"#/sessions/{session_id}/audit")
        browser.wait_text(".chain", "Chain verified")
        assert browser.sideways_overflow() == 0
    finally:
        browser.narrow(None)
