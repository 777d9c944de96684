"""End-to-end tests of ARIA as an MCP server, driven by the official Python `mcp` client.

`aria mcp serve` over stdio (the client starts it, as an editor would) and `/mcp` on a real
`aria serve` (Streamable HTTP with the API token), in both of the client's connection modes:
`legacy` (the initialize handshake) and `auto` (the stateless protocol when the server has it).
Each test checks what really happened: the files under the root, the approval questions, the
notifications and the audit log with the client's name.

Run: `python3 -m pytest tests/e2e/test_mcp_serve.py -q` (after `cargo build -p aria-cli`).
Needs `pip install mcp pytest`. `ARIA_BIN` overrides the binary.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp")
import httpx2  # noqa: E402  (the HTTP client the `mcp` package itself uses)
import mcp_types  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aria_daemon import ARIA_BIN, BASE_CONFIG, AriaDaemon, git, needs_aria  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

pytestmark = needs_aria

TOKEN = "e2e-mcp-" + os.urandom(8).hex()
CLIENT = mcp_types.Implementation(name="e2e-editor", version="1.0")
MODES = ["legacy", "auto"]


def audit(home: Path, config: Path) -> list[dict]:
    out = subprocess.run([str(ARIA_BIN), "audit", "list", "--json"], check=True,
                         capture_output=True, text=True,
                         env={**os.environ, "ARIA_HOME": str(home), "ARIA_CONFIG": str(config)})
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()] \
        if not out.stdout.lstrip().startswith("[") else json.loads(out.stdout)


def text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture()
def workspace(tmp_path):
    home, root = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    root.mkdir()
    (root / "notes.txt").write_text("hello from the root\n")
    (root / "secret.env").write_text("API_KEY=sk-live-1234567890abcdefghijklmnop\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Initial files")
    config = home / "aria.toml"
    config.write_text(BASE_CONFIG)
    return home, root, config


def stdio(home: Path, root: Path, config: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARIA_", "OPENAI_"))}
    env.update({"ARIA_HOME": str(home), "ARIA_CONFIG": str(config), "HOME": str(home)})
    return StdioServerParameters(command=str(ARIA_BIN), args=["--root", str(root), "mcp", "serve"],
                                 env=env)


@pytest.mark.parametrize("mode", MODES)
def test_stdio_lists_tools_reads_refuses_and_snapshots_writes(workspace, mode):
    home, root, config = workspace

    async def session():
        async with mcp.Client(stdio(home, root, config), mode=mode, client_info=CLIENT) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            for name in ["file_read", "file_write", "file_search", "git_status", "shell_execute",
                         "snapshot_list", "snapshot_rollback", "memory_search", "memory_store"]:
                assert name in tools, sorted(tools)
            assert tools["file_read"].annotations.read_only_hint is True
            assert tools["shell_execute"].annotations.read_only_hint is False
            assert "path" in tools["file_read"].input_schema["properties"]

            read = await c.call_tool("file_read", {"path": "notes.txt"})
            assert not read.is_error and "hello from the root" in text(read)

            outside = await c.call_tool("file_read", {"path": "/etc/passwd"})
            assert outside.is_error and "outside the allowed roots" in text(outside)

            sensitive = await c.call_tool("file_read", {"path": "secret.env"})
            assert "sk-live-1234567890abcdefghijklmnop" not in text(sensitive)

            bad = await c.call_tool("file_read", {"path": 42})
            assert bad.is_error and "error" in text(bad)

            pushed = await c.call_tool("shell_execute", {"command": "git push origin main"})
            assert pushed.is_error
            assert "no ARIA channel is attached" in text(pushed), text(pushed)

            wrote = await c.call_tool("file_write", {"path": "made.txt", "content": "by mcp\n"})
            assert not wrote.is_error, text(wrote)
            assert "snapshot/" in text(wrote)
            listed = await c.call_tool("snapshot_list", {})
            assert "file_write" in text(listed)
            point = text(listed).split()[0]
            undone = await c.call_tool("snapshot_rollback", {"id": point})
            assert not undone.is_error, text(undone)

    asyncio.run(session())
    assert not (root / "made.txt").exists(), "the rollback removed the file the client wrote"
    records = audit(home, config)
    mine = [r for r in records if r.get("actor") == "mcp:e2e-editor"]
    kinds = [r["kind"] for r in mine]
    assert "tool.start" in kinds and "tool.end" in kinds and "tool.refused" in kinds, kinds
    assert all(r["payload"]["client"] == "e2e-editor" for r in mine)
    refused = [r for r in mine if r["kind"] == "tool.refused"]
    assert {r["payload"]["name"] for r in refused} >= {"file_read", "shell_execute"}
    verify = subprocess.run([str(ARIA_BIN), "audit", "verify"], capture_output=True, text=True,
                            env={**os.environ, "ARIA_HOME": str(home), "ARIA_CONFIG": str(config)})
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_stdio_tools_list_answers_quickly_and_bad_input_does_not_kill_it(workspace):
    home, root, config = workspace
    env = stdio(home, root, config).env
    proc = subprocess.Popen([str(ARIA_BIN), "--root", str(root), "mcp", "serve"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        def send(message):
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()

        def receive():
            return json.loads(proc.stdout.readline())

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "0"}}})
        assert receive()["result"]["serverInfo"]["name"] == "aria"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        proc.stdin.write("this is not json\n")
        proc.stdin.flush()
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "no_such_tool", "arguments": {}}})
        answer = receive()
        while answer.get("id") != 2:
            answer = receive()
        assert answer["result"]["isError"] is True
        assert "file_read" in answer["result"]["content"][0]["text"]
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        answer = receive()
        while answer.get("id") != 3:
            answer = receive()
        assert len(answer["result"]["tools"]) > 10
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0, proc.stderr.read()


@pytest.fixture(scope="module")
def model():
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture()
def daemon(tmp_path, model):
    d = AriaDaemon(tmp_path, model, token=TOKEN).start()
    # The MCP client gets a token of its own, scoped to /mcp; the daemon's token answers the
    # approval questions (a client never answers its own).
    d.mcp_token = d.scoped_token("e2e-mcp", "mcp")
    yield d
    d.stop()


def http_client(d: AriaDaemon, token: str | None = None):
    token = token or d.mcp_token
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return streamable_http_client(d.url + "/mcp", http_client=httpx2.AsyncClient(headers=headers,
                                                                                    timeout=60))


def answer_pending(d: AriaDaemon, decision: str, tool: str) -> dict:
    """Waits for the MCP approval question about `tool` and answers it."""
    deadline = time.time() + 20
    while time.time() < deadline:
        pending = [a for a in d.get("/approvals")["items"]
                   if a["channel"] == "mcp" and a["tool"] == tool]
        if pending:
            d.api("POST", f"/approvals/{pending[0]['id']}", {"decision": decision},
                  expect_status=200)
            return pending[0]
        time.sleep(0.1)
    raise AssertionError(f"no approval question for {tool}:\n{d.log_tail()}")


@pytest.mark.parametrize("mode", MODES)
def test_daemon_mcp_endpoint_asks_aria_user_for_irreversible_calls(daemon, mode):
    # Running code is irreversible: ARIA's user is asked every time.
    code = {"code": "open('from-mcp.txt', 'w').write('approved\\n')"}

    async def session():
        async with mcp.Client(http_client(daemon), mode=mode, client_info=CLIENT) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            assert "file_read" in names and "shell_execute" in names
            read = await c.call_tool("file_read", {"path": "notes.txt"})
            assert not read.is_error and "notes" in text(read)

            call = asyncio.create_task(c.call_tool("python_run", code))
            asked = await asyncio.to_thread(answer_pending, daemon, "deny", "python_run")
            denied = await call
            assert denied.is_error and "did not approve" in text(denied), text(denied)
            assert "e2e-editor" in (asked["reason"] or "")

            call = asyncio.create_task(c.call_tool("python_run", code))
            await asyncio.to_thread(answer_pending, daemon, "approve", "python_run")
            approved = await call
            assert not approved.is_error, text(approved)

    asyncio.run(session())
    assert (daemon.root / "from-mcp.txt").read_text() == "approved\n"
    notes = daemon.get("/notifications")["items"]
    assert any(n["kind"] == "approval" and "python_run" in n["text"] for n in notes)
    records = audit(daemon.home, daemon.config)
    answers = [r["payload"]["answer"] for r in records
               if r["actor"] == "mcp:e2e-editor" and r["kind"] == "approval.answer"]
    assert answers == ["deny", "once"], answers


def test_daemon_mcp_endpoint_needs_the_token(daemon):
    status, _, _ = daemon.raw("POST", "/mcp", json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
        {"Content-Type": "application/json", "Authorization": None,
         "Accept": "application/json, text/event-stream"})
    assert status == 401
    status, _, body = daemon.raw("POST", "/mcp", b"{not json",
                                 {"Content-Type": "application/json",
                                  "Accept": "application/json, text/event-stream"})
    assert status == 400, body
    assert json.loads(body)["error"]["code"] == "bad_request"

    async def wrong_token():
        async with mcp.Client(http_client(daemon, token="wrong"), mode="legacy",
                              client_info=CLIENT) as c:
            await c.list_tools()

    with pytest.raises(BaseException):
        asyncio.run(wrong_token())
