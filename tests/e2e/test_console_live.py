"""The console follows a session as it lives: the list shows each session's status, workspace, model and last
activity; an attached image rides in the turn; a connection dropped by a server restart resumes after the
last event shown, with nothing twice; and a user in another tab is told, by the title and a notification,
that an approval waits."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

from tests.e2e.console_browser import Browser, ConsoleServer, console_fixtures

server, browser = console_fixtures()


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\x00"))
        + chunk(b"IEND", b"")
    )


def test_the_list_shows_status_workspace_model_and_activity(server: ConsoleServer, browser: Browser) -> None:
    script = server.script([{"text": "listed"}])
    with server.api() as api:
        created = api.post(
            "/v1/sessions", json={"workspace": str(server.workspace), "model": f"replay:{script}"}
        )
        session = created.json()
        api.post(f"/v1/sessions/{session['id']}/messages?wait=true", json={"prompt": "hi"})
        status = api.get(f"/v1/sessions/{session['id']}").json()["status"]
    browser.sign_in(server.tokens["alice"])
    row = browser.wait_text("table.sessions tbody tr", session["id"])
    cells = [cell.text for cell in row.find_elements("css selector", "td")]
    assert cells[:4] == [session["id"], status, str(server.workspace), f"replay:{script}"]
    assert cells[4]  # the last activity, as a local date and time


def test_an_attached_image_rides_in_the_turn(server: ConsoleServer, browser: Browser, tmp_path: Path) -> None:
    image = tmp_path / "dot.png"
    image.write_bytes(_png())
    session_id = server.session([{"text": "a single dot"}])
    browser.sign_in(server.tokens["alice"])
    browser.open_session(session_id)
    browser.css("#attach").send_keys(str(image))
    browser.wait_text("#attached li", "dot.png")
    browser.css("#prompt").send_keys("what is this?")
    browser.css("#send").click()
    browser.wait_text(".model-text", "a single dot")
    assert not browser.all("#attached li")
    with server.api() as api:
        detail = api.get(f"/v1/sessions/{session_id}").json()
    user = next(m for m in detail["messages"] if m["role"] == "user")
    assert [(i["media_type"], base64.b64decode(i["data"])) for i in user["images"]] == [("image/png", _png())]


def test_a_dropped_connection_resumes_after_the_last_event_without_duplicates(
    server: ConsoleServer, browser: Browser
) -> None:
    session_id = server.session([{"text": "before the drop"}, {"text": "after the drop"}])
    browser.sign_in(server.tokens["alice"])
    browser.open_session(session_id)
    browser.css("#prompt").send_keys("one")
    browser.css("#send").click()
    browser.wait_text(".model-text", "before the drop")
    server.stop()
    browser.wait_text(".connection", "reconnecting")
    server.start()
    with server.api() as api:
        api.post(f"/v1/sessions/{session_id}/messages?wait=true", json={"prompt": "two, from elsewhere"})
    browser.wait_text(".model-text", "after the drop", timeout=60)
    transcript = browser.css(".transcript").text
    assert transcript.count("before the drop") == 1 and transcript.count("after the drop") == 1
    assert transcript.count("two, from elsewhere") == 1
    assert len(browser.all(".turn-end")) == 2


def test_another_tab_is_told_by_the_title_and_a_notification(server: ConsoleServer, browser: Browser) -> None:
    write = {"tool_calls": [{"name": "write_file", "arguments": {"path": "tab.txt", "content": "x"}}]}
    session_id = server.session([write, {"text": "ok"}])
    driver = browser.driver
    driver.execute_cdp_cmd(
        "Browser.grantPermissions", {"origin": server.url, "permissions": ["notifications"]}
    )
    browser.sign_in(server.tokens["alice"])
    browser.open_session(session_id)
    # A spy that passes every notification on to the real one and tells the other tab about it.
    browser.js(
        """
        const Real = window.Notification;
        const told = new BroadcastChannel("notifications-seen");
        window.Notification = class extends Real {
            constructor(title, options) {
                super(title, options);
                told.postMessage({ title, body: options?.body ?? "", hidden: document.hidden, page: document.title });
            }
        };
        """
    )
    console_tab = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(f"{server.url}/v1/health")
    browser.js(
        "window.seen = []; new BroadcastChannel('notifications-seen').onmessage = (m) => window.seen.push(m.data);"
    )
    with server.api() as api:
        api.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "write tab.txt"})
    seen = browser.wait(
        lambda _: browser.js("return window.seen.length ? window.seen : null"), "a notification"
    )
    assert seen == [
        {
            "title": "Seepient: an approval waits",
            "body": "Create tab.txt (+1)",
            "hidden": True,
            "page": "(1) Approval waiting — Seepient console",
        }
    ]
    driver.close()
    driver.switch_to.window(console_tab)
    assert driver.title == "(1) Approval waiting — Seepient console"
    browser.css("section.approval button.approve").click()
    browser.wait_text(".model-text", "ok")
    assert driver.title == "Seepient console"


def _write(path: str, content: str) -> dict:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def test_approve_for_the_session_and_always_for_the_project_settle_the_next_ask(
    server: ConsoleServer, browser: Browser
) -> None:
    from selenium.webdriver.support.ui import Select

    (server.workspace / "notes").mkdir()
    session_id = server.session(
        [
            _write("notes/a.txt", "a\n"),
            {"text": "a done"},
            _write("notes/b.txt", "b\n"),
            {"text": "b done"},
            _write("p.txt", "one\n"),
            {"text": "p done"},
            _write("p.txt", "two\n"),
            {"text": "p again"},
        ]
    )
    browser.sign_in(server.tokens["alice"])
    browser.open_session(session_id)
    browser.prompt("write a")
    panel = browser.wait_css("section.approval")
    scope = Select(panel.find_element("css selector", "select"))
    offered = [option.get_attribute("value") for option in scope.options]
    assert "directory" in offered, offered
    scope.select_by_value("directory")
    panel.find_element("xpath", ".//button[text()='Approve for this session']").click()
    browser.wait_text(".model-text", "a done")
    browser.prompt("write b")
    browser.wait_text(".model-text", "b done")
    browser.prompt("write p")
    panel = browser.wait_css("section.approval")
    assert "adds the rule" in panel.text
    panel.find_element("xpath", ".//button[text()='Always allow in this project']").click()
    browser.wait_text(".model-text", "p done")
    browser.prompt("write p again")
    browser.wait_text(".model-text", "p again")
    assert (server.workspace / "notes" / "b.txt").read_text() == "b\n"
    assert (server.workspace / "p.txt").read_text() == "two\n"
    with server.api() as api:
        body = api.get(f"/v1/sessions/{session_id}/events", params={"follow": "false"}).text
    resolved = [
        json.loads(line[6:])["response"] for line in body.splitlines() if '"permission_resolved"' in line
    ]
    answered_by_alice = [r["decision"] for r in resolved if r["approved_by"] == "user:alice"]
    assert answered_by_alice == ["approve_session", "approve_project"]


def test_reject_for_the_session_refuses_the_next_ask_of_that_scope_without_asking(
    server: ConsoleServer, browser: Browser
) -> None:
    from selenium.webdriver.support.ui import Select

    # The server (and its workspace) is the module's: a folder of this test's own.
    (server.workspace / "drafts").mkdir()
    session_id = server.session(
        [
            _write("drafts/a.txt", "a\n"),
            {"text": "a refused"},
            _write("drafts/b.txt", "b\n"),
            {"text": "b refused"},
        ]
    )
    browser.sign_in(server.tokens["alice"])
    browser.open_session(session_id)
    browser.prompt("write a")
    panel = browser.wait_css("section.approval")
    Select(panel.find_element("css selector", "select")).select_by_value("directory")
    panel.find_element("xpath", ".//button[text()='Reject for this session']").click()
    browser.wait_text(".model-text", "a refused")
    browser.prompt("write b")
    browser.wait_text(".model-text", "b refused")
    assert not (server.workspace / "drafts" / "a.txt").exists()
    assert not (server.workspace / "drafts" / "b.txt").exists(), (
        "the session refusal covered the second write"
    )
    with server.api() as api:
        body = api.get(f"/v1/sessions/{session_id}/events", params={"follow": "false"}).text
    resolved = [
        json.loads(line[6:])["response"] for line in body.splitlines() if '"permission_resolved"' in line
    ]
    assert [r["decision"] for r in resolved if r["approved_by"] == "user:alice"] == ["reject_session"]
    # The second write was settled by the session's refusal, not by a person.
    assert len(resolved) == 2 and resolved[1]["approved_by"] != "user:alice", resolved
