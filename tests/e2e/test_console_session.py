"""End to end in the browser: a real ``seepient serve`` and the web console in headless Chromium, driven as a
person would: sign in, create a session, send a prompt and watch the text stream, approve a diff and see the
file change, reject with feedback the model receives, interrupt, reload mid-turn and lose nothing, read the
audit view, and another principal's token sees none of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.console_browser import Browser, ConsoleServer, console_fixtures

server, browser = console_fixtures()


def _write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def _create_in_form(browser: Browser, workspace: Path, script: Path, mode: str = "always-ask") -> str:
    from selenium.webdriver.support.ui import Select

    browser.open("#/")
    browser.wait_text("h1", "Sessions")
    field = browser.css("#workspace")
    field.clear()
    field.send_keys(str(workspace))
    Select(browser.css("#model")).select_by_value("__replay__")
    browser.css("#replay-script").send_keys(str(script))
    Select(browser.css("#mode")).select_by_value(mode)
    browser.css("form.new-session button[type=submit]").click()
    browser.wait(lambda d: "#/sessions/" in d.current_url, "the new session's page")
    browser.wait_text(".connection", "Live")
    return browser.driver.current_url.rsplit("/", 1)[1]


def _send(browser: Browser, prompt: str) -> None:
    browser.prompt(prompt)
    browser.wait_text(".user-text", prompt)


def _turn_ends(browser: Browser, count: int) -> None:
    browser.wait(lambda _: len(browser.all(".turn-end")) >= count, f"{count} finished turns")


def test_sign_in_create_stream_approve_reject_and_the_audit_view(
    server: ConsoleServer, browser: Browser
) -> None:
    (server.workspace / "notes.txt").write_text("first line\nold line\nlast line\n")
    words = " ".join(f"word{i}" for i in range(60))
    script = server.script(
        [
            {"text": f"Hello **there**. {words}", "tokens_per_second": 40},
            _write("notes.txt", "first line\nnew line\nlast line\n"),
            {"text": "Edited the notes."},
            _write("bad.txt", "x"),
            {"text": "Understood, I left it."},
        ]
    )
    browser.sign_in(server.tokens["alice"])
    assert "alice" in browser.css("#account").text
    session_id = _create_in_form(browser, server.workspace, script)

    _send(browser, "say hello")
    # Text shows while it streams: a part of it, not yet rendered as markdown, before the turn ends.
    partial = browser.wait(
        lambda _: browser.js("return document.querySelector('.model-text.streaming')?.textContent"),
        "text streaming in",
    )
    assert partial.startswith("Hello") and "word59" not in partial
    _turn_ends(browser, 1)
    rendered = browser.wait_css(".model-text.rendered")
    assert rendered.find_element("css selector", "strong").text == "there"
    assert rendered.text.endswith("word59")

    _send(browser, "edit the notes")
    panel = browser.wait_css("section.approval")
    assert "notes.txt" in panel.text
    removed = [e.text for e in panel.find_elements("css selector", ".diff-split td.diff-del")]
    added = [e.text for e in panel.find_elements("css selector", ".diff-split td.diff-add")]
    assert removed == ["old line"] and added == ["new line"], panel.get_attribute("outerHTML")
    assert browser.driver.title.startswith("(1) Approval waiting")
    panel.find_element("xpath", ".//button[text()='Approve once']").click()
    browser.wait_text(".model-text", "Edited the notes.")
    assert (server.workspace / "notes.txt").read_text() == "first line\nnew line\nlast line\n"
    assert not browser.all("section.approval") and not browser.driver.title.startswith("(")

    _send(browser, "write bad")
    panel = browser.wait_css("section.approval")
    panel.find_element("css selector", "textarea").send_keys("not that file, use notes.txt")
    panel.find_element("xpath", ".//button[text()='Reject']").click()
    browser.wait_text(".model-text", "Understood, I left it.")
    assert not (server.workspace / "bad.txt").exists()
    assert "rejected" in browser.all(".tool-status")[-1].text
    with server.api() as api:
        detail = api.get(f"/v1/sessions/{session_id}").json()
    told = [m for m in detail["messages"] if "not that file, use notes.txt" in str(m)]
    assert told, "the model's history holds the rejection's feedback"

    browser.css(f"a[href='#/sessions/{session_id}/audit']").click()
    browser.wait_text(".chain", "Chain verified")
    rows = [r.text for r in browser.all("table.records tbody tr")]
    assert any("write_file" in r and "ok" in r for r in rows)
    assert any("write_file" in r and "rejected" in r for r in rows)


def test_interrupt_and_reload_mid_turn_lose_nothing(server: ConsoleServer, browser: Browser) -> None:
    slow = " ".join(f"slow{i}" for i in range(2000))
    script = server.script(
        [
            {"text": slow, "tokens_per_second": 50},
            {"text": "Before the file.", **_write("after-reload.txt", "kept\n")},
            {"text": "Written after the reload."},
        ]
    )
    browser.sign_in(server.tokens["alice"])
    _create_in_form(browser, server.workspace, script)

    _send(browser, "talk slowly")
    browser.wait_css(".model-text.streaming")
    interrupt = browser.css("#interrupt")
    assert interrupt.is_enabled()
    interrupt.click()
    browser.wait_text(".turn-end", "Turn interrupted")
    assert "slow1999" not in browser.css(".transcript").text

    _send(browser, "write a file")
    browser.wait_css("section.approval")
    before = browser.css(".transcript").text
    browser.driver.refresh()
    panel = browser.wait_css("section.approval")
    browser.wait(lambda _: browser.css(".transcript").text == before, "the same transcript after the reload")
    panel.find_element("xpath", ".//button[text()='Approve once']").click()
    browser.wait_text(".model-text", "Written after the reload.")
    transcript = browser.css(".transcript").text
    assert transcript.count("Written after the reload.") == 1
    assert transcript.count("Before the file.") == 1
    assert transcript.count("talk slowly") == 1
    assert (server.workspace / "after-reload.txt").read_text() == "kept\n"


def test_another_principal_sees_none_of_it(server: ConsoleServer, browser: Browser) -> None:
    script = server.script([{"text": "alice's secret reply"}])
    with server.api("alice") as alice:
        session = alice.post(
            "/v1/sessions", json={"workspace": str(server.workspace), "model": f"replay:{script}"}
        ).json()
        alice.post(f"/v1/sessions/{session['id']}/messages?wait=true", json={"prompt": "alice's prompt"})
    browser.sign_in(server.tokens["bob"])
    assert "bob" in browser.css("#account").text
    assert "No sessions yet." in browser.css("#main").text
    browser.open(f"#/sessions/{session['id']}")
    browser.wait_text("[role=alert]", f"no session {session['id']}")
    browser.open(f"#/sessions/{session['id']}/audit")
    browser.wait_text("[role=alert]", f"no session {session['id']}")
    assert "alice" not in browser.css("body").text
    with server.api("bob") as bob:
        assert bob.get(f"/v1/sessions/{session['id']}/audit").status_code == 404
        assert bob.get("/v1/me").json()["principal"] == "bob"
    # A token the server does not know is refused at sign-in and never stored.
    browser.signed_out().send_keys("spt_0000000000000000_forged")
    browser.css("form.signin button[type=submit]").click()
    browser.wait_text("#signin-status", "not valid")
    assert browser.js("return sessionStorage.length") == 0
    assert server.tokens["alice"] not in browser.driver.current_url
