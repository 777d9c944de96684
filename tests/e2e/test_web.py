"""End-to-end tests of the web UI that `aria serve` serves, in a real browser.

The daemon runs against a scripted OpenAI-compatible model (`fake_openai.py`) and a throwaway
git repository as its root; every test drives the page with Playwright and then checks what
really happened: files on disk, the API's state, and what ARIA sent to the model.

Run: `python3 -m pytest tests/e2e -q` (after `cargo build -p aria-cli`). Needs `pip install
playwright pytest` and a Chromium at /usr/bin/chromium (`apt-get install -y chromium`; Playwright's
own browser download is not used). `ARIA_BIN` overrides the binary, `CHROMIUM` the browser.
"""

from __future__ import annotations

import os
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aria_daemon import AriaDaemon, needs_aria  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RUN_TIMEOUT_MS = 30_000

pytestmark = needs_aria


# -----------------------------------------------------------------------------------------------
# The daemon and its helpers
# -----------------------------------------------------------------------------------------------

class Daemon(AriaDaemon):
    """`aria serve` (aria_daemon.py) over the files the scripted model works in: each test uses
    its own. Its API as a test checks it: `api`, `get`."""

    FILES = {"notes.txt": "original notes\n", "delete-me.txt": "to be deleted\n",
             "keep-me.txt": "must survive\n", "plan.txt": "version one\n"}


def items(page):
    return page if isinstance(page, list) else (page or {}).get("items", [])


def wait_until(check, timeout: float = 15, what: str = "condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


@pytest.fixture(scope="session")
def model():
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def daemon(model, tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("aria"), model).start()
    yield d
    d.stop()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def open_page(browser, daemon: Daemon, login: bool = True, **context_args):
    """A page on the daemon's web UI, logged in through a one-time link unless `login` is
    false (as a person opening the link `aria serve` or `aria ui` printed)."""
    context = browser.new_context(base_url=daemon.url, **context_args)
    page = context.new_page()
    page.set_default_timeout(RUN_TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors  # uncaught exceptions in the page
    if login:
        page.goto(daemon.login_url())
        expect(page.get_by_test_id("message-input")).to_be_visible()
    return context, page


@pytest.fixture
def page(browser, daemon):
    context, page = open_page(browser, daemon, viewport={"width": 1280, "height": 860})
    yield page
    errors = list(page.errors)
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def send(page: Page, text: str) -> None:
    box = page.get_by_test_id("message-input")
    box.fill(text)
    box.press("Enter")


def wait_run_end(page: Page) -> None:
    """The run is over when the Stop button is gone and Send is enabled again."""
    expect(page.get_by_test_id("stop")).to_be_hidden(timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_test_id("send")).to_be_enabled()


def conversation_id(page: Page) -> str:
    m = re.search(r"#/c/([^/?#]+)$", page.url)
    assert m, f"the page does not show a conversation: {page.url}"
    return m.group(1)


def tool_messages(request: dict) -> list[str]:
    return [str(m.get("content")) for m in request.get("messages", []) if m.get("role") == "tool"]


# -----------------------------------------------------------------------------------------------
# Tests
# -----------------------------------------------------------------------------------------------

ANSWER = ("Hello from **ARIA**.\n\n- first item\n- second item\n\n"
          "```python\ndef greet():\n    return 'hi'\n```\n\n"
          "Model text is data: <img src=x onerror=\"window.__xss=1\"> stays text.")


def test_streamed_answer_is_rendered_and_stored(page, daemon, model):
    model.set_script([{"text": ANSWER, "chunk": 6, "delay": 0.01}])
    page.goto("/")
    send(page, "Say hello, please")
    answer = page.get_by_test_id("assistant-message").last
    expect(answer).to_contain_text("Hello from ARIA.")
    wait_run_end(page)
    # Markdown, rendered from escaped text.
    expect(answer.locator("strong")).to_have_text("ARIA")
    expect(answer.locator("li")).to_have_text(["first item", "second item"])
    expect(answer.locator("pre code .tok-k").first).to_have_text("def")
    expect(answer).to_contain_text('<img src=x onerror="window.__xss=1">')
    assert answer.locator("img").count() == 0
    assert page.evaluate("window.__xss") is None
    expect(page.get_by_test_id("user-message").last).to_have_text("Say hello, please")
    expect(page.get_by_test_id("run-state")).to_have_text("done")

    # What the model was asked, and what the server kept.
    assert any(m.get("role") == "user" and "Say hello, please" in str(m.get("content"))
               for m in model.requests[0]["messages"]), model.requests[0]["messages"]
    cid = conversation_id(page)
    conv = daemon.get(f"/conversations/{cid}")
    roles = [(m["role"], m["content"]) for m in conv["messages"]]
    assert ("user", "Say hello, please") in roles
    assert any(r == "assistant" and c and "Hello from **ARIA**." in c for r, c in roles), roles
    # The sidebar lists it, and search finds it by message text.
    expect(page.locator(f'[data-testid="conversation-row"][data-id="{cid}"]')).to_be_visible()
    page.get_by_test_id("conversation-search").fill("Say hello")
    expect(page.get_by_test_id("conversation-row")).to_have_count(1)
    page.get_by_test_id("conversation-search").fill("no such words anywhere")
    expect(page.get_by_test_id("conversation-row")).to_have_count(0)

    # Reloading shows the same conversation from the server.
    page.reload()
    expect(page.get_by_test_id("assistant-message").last.locator("strong")).to_have_text("ARIA")


def test_approve_then_deny_an_irreversible_command(page, daemon, model):
    tools = {t["name"]: t for t in items(daemon.get("/tools"))}
    assert "shell_execute" in tools, sorted(tools)
    target, survivor = daemon.root / "delete-me.txt", daemon.root / "keep-me.txt"
    assert target.exists() and survivor.exists()

    # 1. Approved: the file is gone and the model saw the command's result.
    model.set_script([{"tool_calls": [{"name": "shell_execute", "arguments": {"command": "rm delete-me.txt"}}]},
                      "I deleted delete-me.txt."])
    page.goto("/")
    send(page, "Delete delete-me.txt")
    card = page.get_by_test_id("approval").last
    expect(card).to_be_visible()
    expect(card).to_contain_text("shell_execute")
    expect(card).to_contain_text("rm delete-me.txt")
    expect(card).to_contain_text("irreversible")
    pending = items(daemon.get("/approvals"))
    assert [(a["tool"], a["tier"]) for a in pending] == [("shell_execute", "irreversible")], pending
    assert target.exists(), "the command ran before it was approved"
    card.get_by_test_id("approve").click()
    expect(card.get_by_test_id("approval-decision")).to_have_text("Approved once.")
    wait_run_end(page)
    step = page.get_by_test_id("tool-step").last
    expect(step.get_by_test_id("tool-name")).to_have_text("shell_execute")
    expect(step.get_by_test_id("tool-outcome")).not_to_have_text(re.compile("running|denied"))
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("I deleted delete-me.txt.")
    assert not target.exists()
    assert items(daemon.get("/approvals")) == []
    assert len(model.requests) == 2 and tool_messages(model.requests[1]), model.requests

    # 2. Denied: the file stays, the step says so, and the model is told.
    model.set_script([{"tool_calls": [{"name": "shell_execute", "arguments": {"command": "rm keep-me.txt"}}]},
                      "Understood, I left keep-me.txt alone."])
    page.get_by_test_id("new-conversation").click()
    send(page, "Delete keep-me.txt")
    card = page.get_by_test_id("approval").last
    expect(card).to_contain_text("rm keep-me.txt")
    card.get_by_test_id("deny").click()
    expect(card.get_by_test_id("approval-decision")).to_have_text("Denied.")
    wait_run_end(page)
    step = page.get_by_test_id("tool-step").last
    expect(step.get_by_test_id("tool-outcome")).to_have_text("denied")
    expect(step.get_by_test_id("tier")).to_have_text("irreversible")
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("I left keep-me.txt alone.")
    assert survivor.read_text() == "must survive\n"
    # After a reload the step comes back from the stored conversation, with what the model was told.
    page.reload()
    step = page.get_by_test_id("tool-step").last
    expect(step.get_by_test_id("tool-name")).to_have_text("shell_execute")
    expect(step.get_by_test_id("tool-outcome")).to_have_text("refused")
    expect(step.get_by_test_id("tool-result")).to_contain_text("did not approve")
    told = tool_messages(model.requests[1])
    assert told and any(re.search(r"refused|denied|did not approve", t) for t in told), told


def test_stop_cancels_a_run_in_flight(page, daemon, model):
    model.set_script([{"text": "counting " * 150, "chunk": 9, "delay": 0.1}])
    page.goto("/")
    send(page, "Count slowly")
    answer = page.get_by_test_id("assistant-message").last
    expect(answer).to_contain_text("counting counting")
    expect(page.get_by_test_id("stop")).to_be_visible()
    page.get_by_test_id("message-input").press("Escape")  # Esc stops, like the button
    wait_run_end(page)
    expect(page.get_by_test_id("run-state")).to_have_text("cancelled")
    cid = conversation_id(page)
    sessions = daemon.get(f"/conversations/{cid}")["sessions"]
    states = [s.get("state") for s in sessions]
    assert states == ["cancelled"], sessions
    assert not any(s.get("running") for s in sessions)
    assert answer.inner_text().count("counting") < 150


def test_reload_follows_the_run_in_flight(page, daemon, model):
    words = " ".join(f"w{i}" for i in range(60))
    model.set_script([{"text": words + " END", "chunk": 6, "delay": 0.08}])
    page.goto("/")
    send(page, "Say sixty words")
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("w3 ")
    cid = conversation_id(page)
    page.reload()  # the run goes on in the daemon; the page follows it again, replayed from the start
    answer = page.get_by_test_id("assistant-message").last
    expect(answer).to_contain_text("w59 END")
    wait_run_end(page)
    expect(page.get_by_test_id("run-state")).to_have_text("done")
    assert answer.inner_text().count("w10 ") == 1, answer.inner_text()  # replayed once, not twice
    assert [s.get("state") for s in daemon.get(f"/conversations/{cid}")["sessions"]] == ["done"]


def test_api_errors_are_shown_with_their_hint(page, daemon):
    status, body = daemon.api("GET", "/conversations/no-such-conversation")
    assert status == 404 and body["error"]["hint"], body
    page.goto("/#/c/no-such-conversation")
    toast = page.get_by_test_id("error").last
    expect(toast).to_contain_text(body["error"]["message"])
    expect(toast).to_contain_text(body["error"]["hint"])


def test_memory_edit_is_persisted(page, daemon):
    status, created = daemon.api("POST", "/memories", {"content": "The user's favourite editor is vim."})
    assert status == 201, created
    mid = created["id"]
    status, gone = daemon.api("POST", "/memories", {"content": "The user once lived in Lisbon."})
    assert status == 201, gone

    page.goto("/")
    page.get_by_test_id("nav-memories").click()
    row = page.locator(f'[data-testid="memory-row"][data-id="{mid}"]')
    expect(row.get_by_test_id("memory-content")).to_have_text("The user's favourite editor is vim.")
    row.get_by_test_id("memory-edit").click()
    row.get_by_test_id("memory-editor").fill("The user's favourite editor is helix.")
    row.get_by_test_id("memory-save").click()
    expect(row.get_by_test_id("memory-content")).to_have_text("The user's favourite editor is helix.")
    assert daemon.get(f"/memories/{mid}")["content"] == "The user's favourite editor is helix."

    # Search finds it by its new words (full-text; no embedder in tests).
    page.get_by_test_id("memory-search").fill("helix")
    page.get_by_test_id("memory-search").press("Enter")
    expect(page.get_by_test_id("memory-row")).to_have_count(1)
    expect(page.get_by_test_id("memory-row")).to_have_attribute("data-id", mid)

    # Forget the other one, confirming in the dialog.
    page.get_by_test_id("memory-search").fill("")
    page.get_by_test_id("memory-search").press("Enter")
    other = page.locator(f'[data-testid="memory-row"][data-id="{gone["id"]}"]')
    other.get_by_test_id("memory-forget").click()
    page.get_by_test_id("confirm-ok").click()
    expect(other).to_have_count(0)
    listed = [m["id"] for m in items(daemon.get("/memories?limit=500"))]
    assert gone["id"] not in listed and mid in listed
    status, after = daemon.api("GET", f"/memories/{gone['id']}")
    assert status == 404 or after.get("status") == "deleted", (status, after)

    # A reload reads the edit back from the server.
    page.reload()
    expect(page.locator(f'[data-testid="memory-row"][data-id="{mid}"]')).to_contain_text("helix")


def test_snapshot_rollback_restores_the_file(page, daemon, model):
    plan = daemon.root / "plan.txt"
    assert plan.read_text() == "version one\n"
    model.set_script([{"tool_calls": [{"name": "file_write",
                                       "arguments": {"path": "plan.txt", "content": "version two\n"}}]},
                      "I rewrote plan.txt."])
    page.goto("/")
    send(page, "Rewrite plan.txt")
    wait_run_end(page)
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("I rewrote plan.txt.")
    assert plan.read_text() == "version two\n"
    snaps = [s for s in items(daemon.get("/snapshots"))
             if any("plan.txt" in f for f in (s.get("targets") or []) + (s.get("files_changed") or []))]
    assert snaps, daemon.get("/snapshots")

    page.get_by_test_id("nav-snapshots").click()
    row = page.locator(f'[data-testid="snapshot-row"][data-id="{snaps[0]["id"]}"]')
    expect(row).to_contain_text("plan.txt")
    row.get_by_test_id("rollback").click()
    expect(page.get_by_test_id("confirm")).to_be_visible()
    page.get_by_test_id("confirm-ok").click()
    expect(row.get_by_test_id("rollback-result")).to_contain_text("Rolled back: plan.txt")
    assert plan.read_text() == "version one\n"


def test_conversations_rename_and_delete(page, daemon):
    _, keep = daemon.api("POST", "/conversations", {"title": "Alpha plans"}, expect_status=201)
    _, drop = daemon.api("POST", "/conversations", {"title": "Beta scratch"}, expect_status=201)
    page.goto("/")
    page.get_by_test_id("conversation-search").fill("Alpha")
    rows = page.get_by_test_id("conversation-row")
    expect(rows).to_have_count(1)
    row = page.locator(f'[data-testid="conversation-row"][data-id="{keep["id"]}"]')
    row.get_by_test_id("conversation-rename").click()
    title = page.get_by_test_id("conversation-title-input")
    title.fill("Alpha plans, renamed")
    title.press("Enter")
    expect(page.locator(f'[data-testid="conversation-row"][data-id="{keep["id"]}"]')
           .get_by_test_id("conversation-title")).to_have_text("Alpha plans, renamed")
    assert daemon.get(f"/conversations/{keep['id']}")["title"] == "Alpha plans, renamed"

    page.get_by_test_id("conversation-search").fill("Beta")
    row = page.locator(f'[data-testid="conversation-row"][data-id="{drop["id"]}"]')
    row.get_by_test_id("conversation-delete").click()
    page.get_by_test_id("confirm-ok").click()
    expect(row).to_have_count(0)
    daemon.api("GET", f"/conversations/{drop['id']}", expect_status=404)
    daemon.api("GET", f"/conversations/{keep['id']}", expect_status=200)


def test_cost_and_tools_pages_show_the_api(page, daemon):
    page.goto("/#/tools")
    tools = items(daemon.get("/tools"))
    expect(page.get_by_test_id("tool-row")).to_have_count(len(tools))
    for t in tools:  # each tool's tier; `by-arguments` when its calls' tiers differ (shell_execute)
        want = "by-arguments" if t.get("tier_depends_on_arguments") else t["tier"]
        row = page.locator(f'[data-testid="tool-row"][data-tool="{t["name"]}"]')
        expect(row.get_by_test_id("tier")).to_have_text(want)
    assert next(t for t in tools if t["name"] == "shell_execute").get("tier_depends_on_arguments")
    page.get_by_test_id("nav-cost").click()
    cost = daemon.get("/cost")
    expect(page.get_by_test_id("cost")).not_to_be_empty()
    scalars = [k for k, v in cost.items() if not isinstance(v, (dict, list))] if isinstance(cost, dict) else []
    for k in scalars:
        expect(page.get_by_test_id(f"cost-{k}")).to_be_visible()


def test_notifications_arrive_live_and_schedules_can_be_paused_and_run(page, daemon):
    page.goto("/#/notifications")
    expect(page.locator("#view-notifications")).to_be_visible()
    # The page follows GET /notifications/events from the start.
    page.wait_for_function("state.noteEvents && state.noteEvents.readyState === 1")
    job = {"name": "e2e-tea", "cron": "0 16 * * 1-5", "tz": "Europe/Berlin",
           "action": {"kind": "notify", "message": "Tea from the e2e test"}}
    daemon.api("POST", "/schedules", job, expect_status=201)
    _, notice = daemon.api("POST", "/schedules/e2e-tea/run", {}, expect_status=200)
    assert notice["kind"] == "completed" and "Tea from the e2e test" in notice["text"], notice
    # It appears without a reload, as the newest one, with what the API recorded.
    newest = items(daemon.get("/notifications?limit=1"))[0]
    assert newest["job"] == "e2e-tea" and newest["text"] == notice["text"], newest
    row = page.locator(f'[data-testid="notification-row"][data-id="{newest["id"]}"]')
    expect(row).to_be_visible()
    expect(row.get_by_test_id("notification-text")).to_have_text(notice["text"])
    expect(page.get_by_test_id("notification-row").first).to_have_attribute("data-id", str(newest["id"]))
    expect(page.get_by_test_id("unread")).to_be_hidden()

    # The schedules page pauses the job (through the API) and runs it now.
    page.get_by_test_id("nav-schedules").click()
    job_row = page.locator('[data-testid="schedule-row"][data-name="e2e-tea"]')
    expect(job_row.get_by_test_id("schedule-state")).to_have_text("on")
    job_row.get_by_test_id("schedule-toggle").click()
    job_row = page.locator('[data-testid="schedule-row"][data-name="e2e-tea"]')
    expect(job_row.get_by_test_id("schedule-state")).to_have_text("paused")
    assert daemon.get("/schedules/e2e-tea")["enabled"] is False
    # A manual run is a slot of one second: a second run within the same second is a 409.
    time.sleep(1.1)
    job_row.get_by_test_id("schedule-run").click()
    expect(job_row.get_by_test_id("schedule-result")).to_contain_text("Tea from the e2e test")
    assert len(items(daemon.get("/schedules/e2e-tea/history"))) == 2
    # That run's notification arrived while another page showed: it counts as unread.
    expect(page.get_by_test_id("unread")).to_have_text("1")
    page.get_by_test_id("nav-notifications").click()
    expect(page.get_by_test_id("notification-row").filter(has_text="Tea from the e2e test")).to_have_count(2)
    expect(page.get_by_test_id("unread")).to_be_hidden()
    daemon.api("DELETE", "/schedules/e2e-tea", expect_status=204)


def test_theme_toggle_is_remembered(browser, daemon):
    context, page = open_page(browser, daemon, color_scheme="dark")
    try:
        page.goto("/")
        bg = lambda: page.evaluate("getComputedStyle(document.body).backgroundColor")  # noqa: E731
        assert bg() == "rgb(21, 24, 28)", bg()  # dark by default: the system prefers it
        page.get_by_test_id("theme-toggle").click()
        assert page.evaluate("document.documentElement.dataset.theme") == "light"
        assert bg() == "rgb(255, 255, 255)"
        page.reload()
        expect(page.get_by_test_id("message-input")).to_be_visible()
        assert page.evaluate("localStorage.getItem('aria-theme')") == "light"
        assert bg() == "rgb(255, 255, 255)"
        assert not page.errors, page.errors
    finally:
        context.close()


def test_phone_screen(browser, daemon, model):
    context, page = open_page(browser, daemon, viewport={"width": 375, "height": 740},
                              is_mobile=True, has_touch=True)
    try:
        page.goto("/")
        box = page.get_by_test_id("message-input")
        expect(box).to_be_visible()
        # Nothing wider than the screen; the sidebar is folded away behind the menu button.
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        sidebar = page.locator("#sidebar")
        assert not in_view(page, sidebar)
        page.get_by_test_id("menu").click()
        page.wait_for_timeout(300)  # the slide-in transition
        assert in_view(page, sidebar)
        page.get_by_test_id("nav-memories").click()
        expect(page.locator("#view-memories")).to_be_visible()
        page.wait_for_timeout(300)
        assert not in_view(page, sidebar)
        # A whole exchange at phone size.
        model.set_script(["Short answer for a small screen."])
        page.get_by_test_id("menu").click()
        page.get_by_test_id("nav-chat").click()
        send(page, "Hi from a phone")
        expect(page.get_by_test_id("assistant-message").last).to_contain_text("Short answer for a small screen.")
        wait_run_end(page)
        for testid in ("message-input", "send"):
            b = page.get_by_test_id(testid).bounding_box()
            assert b and b["x"] >= 0 and b["x"] + b["width"] <= 375, (testid, b)
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        assert not page.errors, page.errors
    finally:
        context.close()


def in_view(page: Page, locator) -> bool:
    b = locator.bounding_box()
    return bool(b) and b["x"] + b["width"] > 1 and b["x"] < page.viewport_size["width"]


@pytest.fixture
def token_daemon(model, tmp_path):
    d = Daemon(tmp_path, model, token="e2e-token-" + os.urandom(8).hex()).start()
    yield d
    d.stop()


def test_login_with_token_and_csrf(browser, token_daemon, model):
    d = token_daemon
    # Without credentials the API refuses, and the page asks for the token.
    req = urllib.request.Request(d.url + "/api/v1/conversations")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=10)
    assert refused.value.code == 401
    context, page = open_page(browser, d, login=False)
    try:
        page.goto("/")
        expect(page.get_by_test_id("login-token")).to_be_visible()
        expect(page.get_by_test_id("message-input")).to_be_hidden()
        page.get_by_test_id("login-token").fill("wrong-token")
        page.get_by_test_id("login-submit").click()
        expect(page.get_by_test_id("login-error")).to_be_visible()
        page.get_by_test_id("login-token").fill(d.token)
        page.get_by_test_id("login-submit").click()
        expect(page.get_by_test_id("message-input")).to_be_visible()
        cookies = {c["name"]: c for c in context.cookies()}
        assert "aria_session" in cookies and cookies["aria_session"]["httpOnly"], cookies
        assert "aria_csrf" in cookies, cookies
        # A state-changing request from the page (new conversation, message) passes the CSRF check.
        model.set_script(["Signed in and answering."])
        send(page, "Hello after login")
        expect(page.get_by_test_id("assistant-message").last).to_contain_text("Signed in and answering.")
        wait_run_end(page)
        cid = conversation_id(page)
        conv = d.get(f"/conversations/{cid}")
        assert any(m["role"] == "user" and m["content"] == "Hello after login" for m in conv["messages"])
        assert not page.errors, page.errors
    finally:
        context.close()


def test_an_mcp_clients_irreversible_call_is_approved_on_the_notifications_page(page, daemon):
    """A call that no conversation started (an MCP client of /mcp) is asked on the
    Notifications page: the card names the client, and Approve lets the call run."""
    import asyncio
    import threading

    mcp = pytest.importorskip("mcp")
    import httpx2
    import mcp_types
    from mcp.client.streamable_http import streamable_http_client

    result: dict = {}
    # The MCP client has a token of its own, scoped to /mcp: it cannot answer its own question.
    token = daemon.scoped_token("web-e2e-mcp-" + os.urandom(3).hex(), "mcp")
    transport = streamable_http_client(
        daemon.url + "/mcp",
        http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60))

    def client():
        async def call():
            async with mcp.Client(transport, mode="legacy",
                                  client_info=mcp_types.Implementation(name="web-e2e",
                                                                       version="1")) as c:
                result["answer"] = await c.call_tool(
                    "python_run", {"code": "open('approved-in-browser.txt', 'w').write('yes')"})
        asyncio.run(call())

    worker = threading.Thread(target=client)
    worker.start()
    wait_until(lambda: any(a["channel"] == "mcp" for a in items(daemon.get("/approvals"))),
               what="the MCP approval question")
    page.goto("/#/notifications")
    card = page.get_by_test_id("pending-approvals").get_by_test_id("approval")
    expect(card).to_be_visible()
    expect(card.get_by_test_id("approval-reason")).to_contain_text("web-e2e")
    card.get_by_test_id("approve").click()
    expect(card.get_by_test_id("approval-decision")).to_have_text("Approved once.")
    worker.join(30)
    assert not result["answer"].is_error, result["answer"]
    assert (daemon.root / "approved-in-browser.txt").read_text() == "yes"
    row = page.get_by_test_id("notification-row").filter(has_text="python_run")
    expect(row.first).to_be_visible()


# -----------------------------------------------------------------------------------------------
# Agents
# -----------------------------------------------------------------------------------------------

BUILTIN = ["default", "researcher", "coder", "companion"]
CONFIG_AGENT = '\n[agents.e2e-from-file]\ndescription = "Written in aria.toml"\ntools = ["read"]\n'
NAME = "e2e-helper"
PROMPT = "You are the e2e helper. Answer in one line."
DESCRIPTION = 'Helps with <img src=x onerror="window.__xss=1"> tests'


@pytest.fixture(scope="module")
def agents_daemon(model, tmp_path_factory):
    """A daemon of its own, with an agent in aria.toml beside the built-in ones."""
    d = Daemon(tmp_path_factory.mktemp("aria-agents"), model, extra_config=CONFIG_AGENT).start()
    yield d
    d.stop()


@pytest.fixture
def agents_page(browser, agents_daemon):
    context, page = open_page(browser, agents_daemon, viewport={"width": 1280, "height": 860})
    yield page
    errors = list(page.errors)
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def agent_row(page, name):
    return page.locator(f'[data-testid="agent-row"][data-name="{name}"]')


def test_agents_page_creates_edits_chats_as_and_deletes_an_agent(agents_page, agents_daemon, model):
    """The Agents page: every agent listed, built-in and aria.toml ones read-only; a
    stored one made through the form (the API's error shown beside it first), edited, talked to
    and deleted, with the API's state checked after each step."""
    page, daemon = agents_page, agents_daemon
    console_errors: list[str] = []
    # Chromium logs each 4xx answer as "Failed to load resource"; the 400 below is expected.
    page.on("console", lambda m: m.type == "error" and "Failed to load resource" not in m.text
            and console_errors.append(m.text))
    page.goto("/")
    page.get_by_test_id("nav-agents").click()
    expect(page.locator("#view-agents")).to_be_visible()

    # 1. Every agent is listed; built-in and aria.toml ones are read-only and say why.
    expect(page.get_by_test_id("agent-row")).to_have_count(len(items(daemon.get("/agents"))))
    for name in BUILTIN:
        r = agent_row(page, name)
        expect(r.get_by_test_id("agent-source")).to_have_text("builtin")
        expect(r.get_by_test_id("agent-note")).to_have_text("built in")
        expect(r.get_by_test_id("agent-edit")).to_have_count(0)
        expect(r.get_by_test_id("agent-delete")).to_have_count(0)
        expect(r.get_by_test_id("agent-chat")).to_be_visible()
    expect(agent_row(page, "researcher").get_by_test_id("agent-row-tools")).to_contain_text("read, web")
    expect(agent_row(page, "researcher").get_by_test_id("agent-row-mode")).to_contain_text("read_only")
    from_file = agent_row(page, "e2e-from-file")
    expect(from_file.get_by_test_id("agent-source")).to_have_text("config")
    expect(from_file.get_by_test_id("agent-note")).to_have_text("defined in aria.toml — edit the file")
    expect(from_file.get_by_test_id("agent-row-description")).to_have_text("Written in aria.toml")
    expect(from_file.get_by_test_id("agent-edit")).to_have_count(0)

    # 2. A bad field: the API's message is shown beside the form, and the input stays.
    page.get_by_test_id("agent-name").fill(NAME)
    page.get_by_test_id("agent-description").fill(DESCRIPTION)
    page.get_by_test_id("agent-system-prompt").fill(PROMPT)
    page.get_by_test_id("agent-models").fill("gpt4")
    page.get_by_test_id("agent-tools").fill("read, memory")
    page.get_by_test_id("agent-mode").select_option("read_only")
    page.get_by_test_id("agent-max-cost").fill("0.5")
    page.get_by_test_id("agent-temperature").fill("0.2")
    page.get_by_test_id("agent-memory").select_option("own")
    page.get_by_test_id("agent-save").click()
    status, refused = daemon.api("POST", "/agents", {"name": "e2e-probe", "models": ["gpt4"]})
    assert status == 400, refused
    error = page.get_by_test_id("agent-form-error")
    expect(error).to_contain_text(refused["error"]["message"].replace("e2e-probe", NAME))
    expect(page.get_by_test_id("agent-models")).to_have_value("gpt4")
    expect(page.get_by_test_id("agent-name")).to_have_value(NAME)
    expect(page.get_by_test_id("agent-system-prompt")).to_have_value(PROMPT)
    daemon.api("GET", f"/agents/{NAME}", expect_status=404)

    # 3. Corrected, it is made, listed as a stored agent, and the form is empty again.
    page.get_by_test_id("agent-models").fill("openai/scripted")
    page.get_by_test_id("agent-save").click()
    made = agent_row(page, NAME)
    expect(made.get_by_test_id("agent-source")).to_have_text("store")
    expect(error).to_be_hidden()
    expect(page.get_by_test_id("agent-name")).to_have_value("")
    expect(made.get_by_test_id("agent-row-description")).to_have_text(DESCRIPTION)  # text, not HTML
    assert made.locator("img").count() == 0 and page.evaluate("window.__xss") is None
    expect(made.get_by_test_id("agent-row-models")).to_contain_text("openai/scripted")
    expect(made.get_by_test_id("agent-row-tools")).to_contain_text("read, memory")
    expect(made.get_by_test_id("agent-row-memory")).to_contain_text("own")
    expect(made.get_by_test_id("agent-note")).to_have_count(0)
    agent = daemon.get(f"/agents/{NAME}")
    assert {k: agent.get(k) for k in ("source", "description", "system_prompt", "models", "tools",
                                      "mode", "max_cost_usd", "temperature", "memory")} == {
        "source": "store", "description": DESCRIPTION, "system_prompt": PROMPT,
        "models": ["openai/scripted"], "tools": ["read", "memory"], "mode": "read_only",
        "max_cost_usd": 0.5, "temperature": 0.2, "memory": "own"}, agent
    assert "persona" not in agent and "planner" not in agent and "per_day_usd" not in agent, agent

    # 4. Edit: the form comes prefilled; a changed field is sent, a cleared one becomes null.
    made.get_by_test_id("agent-edit").click()
    expect(page.get_by_test_id("agent-name")).to_be_disabled()
    expect(page.get_by_test_id("agent-system-prompt")).to_have_value(PROMPT)
    expect(page.get_by_test_id("agent-mode")).to_have_value("read_only")
    expect(page.get_by_test_id("agent-temperature")).to_have_value("0.2")
    page.get_by_test_id("agent-description").fill("Helps with the e2e tests, edited")
    page.get_by_test_id("agent-temperature").fill("")
    page.get_by_test_id("agent-save").click()
    expect(made.get_by_test_id("agent-row-description")).to_have_text("Helps with the e2e tests, edited")
    expect(made.get_by_test_id("agent-row-temperature")).to_have_count(0)
    agent = daemon.get(f"/agents/{NAME}")
    assert agent["description"] == "Helps with the e2e tests, edited", agent
    assert agent.get("temperature") is None and agent["system_prompt"] == PROMPT, agent
    assert agent["mode"] == "read_only" and agent["memory"] == "own", agent
    expect(page.get_by_test_id("agent-name")).to_be_enabled()

    # 5. Chat as it: a conversation bound to the agent opens in the chat view, and the model
    #    gets the agent's prompt.
    made.get_by_test_id("agent-chat").click()
    expect(page.locator("#view-chat")).to_be_visible()
    expect(page.get_by_test_id("chat-agent")).to_have_text(f"agent: {NAME}")
    cid = conversation_id(page)
    assert daemon.get(f"/conversations/{cid}")["agent"] == NAME
    model.set_script(["The helper answers."])
    send(page, "Who are you?")
    expect(page.get_by_test_id("assistant-message").last).to_contain_text("The helper answers.")
    wait_run_end(page)
    system = [str(m.get("content")) for m in model.requests[-1]["messages"] if m.get("role") == "system"]
    assert any(PROMPT in s for s in system), system
    conv = daemon.get(f"/conversations/{cid}")
    assert conv["agent"] == NAME and any(m["role"] == "user" and m["content"] == "Who are you?"
                                         for m in conv["messages"]), conv
    expect(page.locator(f'[data-testid="conversation-row"][data-id="{cid}"]')).to_be_visible()

    # 6. Delete, after the confirmation; built-in agents stay.
    page.get_by_test_id("nav-agents").click()
    agent_row(page, NAME).get_by_test_id("agent-delete").click()
    expect(page.get_by_test_id("confirm")).to_be_visible()
    page.get_by_test_id("confirm-ok").click()
    expect(agent_row(page, NAME)).to_have_count(0)
    daemon.api("GET", f"/agents/{NAME}", expect_status=404)
    expect(agent_row(page, "coder")).to_be_visible()

    assert not console_errors, console_errors


def test_agents_page_fits_a_phone_screen(browser, agents_daemon):
    context, page = open_page(browser, agents_daemon, viewport={"width": 375, "height": 740},
                              is_mobile=True, has_touch=True)
    try:
        page.goto("/#/agents")
        expect(page.get_by_test_id("agent-row")).to_have_count(len(items(agents_daemon.get("/agents"))))
        expect(page.get_by_test_id("agent-name")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        for testid in ("agent-name", "agent-system-prompt", "agent-save"):
            b = page.get_by_test_id(testid).bounding_box()
            assert b and b["x"] >= 0 and b["x"] + b["width"] <= 375, (testid, b)
        assert not page.errors, page.errors
    finally:
        context.close()
