"""End-to-end tests of ARIA as an MCP client of a Streamable HTTP server built on the official
`mcp` package (`mcp_http_server.py`), through the binary: `aria mcp test|tools` and `aria run`
with the scripted model, checking what reached the model and what the audit log says.

Run: `python3 -m pytest tests/e2e/test_mcp_client_http.py -q` (after `cargo build -p aria-cli`).
Needs `pip install mcp pytest`. `ARIA_BIN` overrides the binary.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("mcp")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aria_daemon import ARIA_BIN, BASE_CONFIG, free_port, git, needs_aria  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

pytestmark = needs_aria

SERVER = Path(__file__).resolve().parent / "mcp_http_server.py"
KEY = "key-" + os.urandom(6).hex()


@pytest.fixture(scope="module")
def mcp_server():
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), str(port)],
                            env={**os.environ, "MCP_TEST_KEY": KEY},
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout.readline().strip() == "ready"
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
        except urllib.error.HTTPError:
            break  # it answers (401 without the key)
        except OSError:
            time.sleep(0.1)
    yield url, proc
    proc.kill()
    proc.wait()


class Aria:
    def __init__(self, base: Path, url: str, extra: str = "", key: str | None = KEY):
        self.home, self.root = base / "home", base / "repo"
        self.home.mkdir(parents=True)
        self.root.mkdir()
        (self.root / "notes.txt").write_text("notes\n")
        git(self.root, "init", "-q", "-b", "main")
        self.config = base / "aria.toml"
        self.config.write_text(BASE_CONFIG + f"""
[mcp.servers.py]
url = "{url}"
headers = {{ X-Test-Key = "E2E_MCP_KEY" }}
timeout_secs = 3
tier = "read"
{extra}
""")
        self.key = key

    def run(self, *args: str, model: FakeOpenAI | None = None) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ARIA_", "OPENAI_"))}
        env.update({"ARIA_HOME": str(self.home), "ARIA_CONFIG": str(self.config),
                    "HOME": str(self.home), "NO_COLOR": "1"})
        if self.key is not None:
            env["E2E_MCP_KEY"] = self.key
        if model:
            env.update({"OPENAI_BASE_URL": model.base_url, "ARIA_PROVIDER": "openai",
                        "ARIA_MODEL": "scripted"})
        return subprocess.run([str(ARIA_BIN), "--root", str(self.root), *args], env=env,
                              capture_output=True, text=True, timeout=120)

    def audit(self) -> list[dict]:
        return json.loads(self.run("audit", "list", "--json").stdout)


def tool_results(model: FakeOpenAI) -> list[str]:
    """The tool results ARIA sent to the model in its last request, in order."""
    out = []
    for body in model.requests[-1:]:
        for m in body.get("messages", []):
            if m.get("role") == "tool":
                out.append(m["content"] if isinstance(m["content"], str) else json.dumps(m["content"]))
    return out


def test_tools_are_listed_with_the_header_from_the_environment(tmp_path, mcp_server):
    url, _ = mcp_server
    aria = Aria(tmp_path, url)
    tested = aria.run("mcp", "test", "py")
    assert tested.returncode == 0, tested.stderr
    assert "listed 6 tools" in tested.stdout
    tools = {t["name"]: t for t in json.loads(aria.run("mcp", "tools", "py", "--json").stdout)}
    assert set(tools) == {"py__add", "py__shout", "py__crash", "py__hang", "py__flood",
                          "py__wrong_shape"}
    assert tools["py__add"]["tier"] == "read"

    wrong = Aria(tmp_path / "wrong", url, key="not-the-key")
    failed = wrong.run("mcp", "test", "py")
    assert failed.returncode != 0
    assert "401" in failed.stdout + failed.stderr or "Unauthorized" in failed.stdout + failed.stderr

    unset = Aria(tmp_path / "unset", url, key=None)
    failed = unset.run("mcp", "test", "py")
    assert failed.returncode != 0
    assert "$E2E_MCP_KEY, which is not set" in failed.stdout + failed.stderr


def test_aria_run_calls_the_http_servers_tools_and_audits_them(tmp_path, mcp_server):
    url, _ = mcp_server
    aria = Aria(tmp_path, url)
    with FakeOpenAI([
        {"tool_calls": [{"name": "py__add", "arguments": {"a": 2, "b": 40}},
                        {"name": "py__hang", "arguments": {"seconds": 20}},
                        {"name": "py__flood", "arguments": {"size": 300000}},
                        {"name": "py__wrong_shape", "arguments": {}},
                        {"name": "py__add", "arguments": {"a": "two"}}]},
        "The sum is 42.",
    ]) as model:
        run = aria.run("run", "--task", "add 2 and 40", "--json", model=model)
        assert run.returncode == 0, run.stderr
        results = tool_results(model)
    assert len(results) == 5, results
    added, hung, flood, shape, invalid = results
    assert "42" in added
    assert "took longer than 3 s" in hung, hung
    assert len(flood) < 30000 and "ARIA: showed" in flood, len(flood)
    assert "error" in shape.lower(), shape
    assert "error" in invalid.lower() and "py__add" in invalid, invalid
    ends = [r for r in aria.audit() if r["kind"] == "tool.end"]
    names = [r["payload"]["name"] for r in ends]
    assert names.count("py__add") == 1 and "py__hang" in names, names
    assert any(r["kind"] == "tool.invalid" for r in aria.audit())


def test_a_server_that_dies_mid_call_is_an_error_and_the_run_goes_on(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), str(port)],
                            env={**os.environ, "MCP_TEST_KEY": KEY},
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        aria = Aria(tmp_path, f"http://127.0.0.1:{port}/mcp")
        with FakeOpenAI([
            {"tool_calls": [{"name": "py__crash", "arguments": {}}]},
            {"tool_calls": [{"name": "py__add", "arguments": {"a": 1, "b": 1}}]},
            "The server is gone.",
        ]) as model:
            run = aria.run("run", "--task", "crash it", "--json", model=model)
            assert run.returncode == 0, run.stderr
            crashed, after = tool_results(model)
        assert proc.wait(timeout=10) == 3
        assert "error" in crashed.lower(), crashed
        assert "cannot reach" in after, after
    finally:
        proc.kill()


def test_the_daemon_lists_the_mcp_servers_and_their_tools(tmp_path, mcp_server, monkeypatch):
    from aria_daemon import AriaDaemon

    url, _ = mcp_server
    monkeypatch.setenv("E2E_MCP_KEY", KEY)
    token = "e2e-mcp-list-" + os.urandom(6).hex()
    entry = f'\n[mcp.servers.py]\nurl = "{url}"\nheaders = {{ X-Test-Key = "E2E_MCP_KEY" }}\n' \
            'tier = "read"\n'
    with FakeOpenAI([]) as model:
        daemon = AriaDaemon(tmp_path, model, token=token, extra_config=entry).start()
        try:
            servers = daemon.get("/mcp/servers")["items"]
            assert [(s["name"], s["transport"], s["url"], s["tools"]) for s in servers] == \
                [("py", "http", url, 6)]
            assert servers[0]["headers"] == ["X-Test-Key"], "header names only, never values"
            tools = {t["name"]: t for t in daemon.get("/mcp/tools")["items"]}
            assert set(tools) >= {"py__add", "py__hang"} and tools["py__add"]["server"] == "py"
            assert tools["py__add"]["tier"] == "read"
            assert all(t["server"] == "py" for t in tools.values())
        finally:
            daemon.stop()


def test_resources_and_prompts_are_listed_and_read(tmp_path, mcp_server):
    url, _ = mcp_server
    aria = Aria(tmp_path, url)
    listed = aria.run("mcp", "resources", "py", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["uri"] for r in json.loads(listed.stdout)] == ["notes://today"]
    read = aria.run("mcp", "resources", "py", "--read", "notes://today")
    assert read.returncode == 0 and "plumber" in read.stdout, read.stdout + read.stderr
    missing = aria.run("mcp", "resources", "py", "--read", "notes://nope")
    assert missing.returncode == 1 and "notes://nope" in missing.stderr, missing.stderr
    prompts = json.loads(aria.run("mcp", "prompts", "py", "--json").stdout)
    assert prompts[0]["name"] == "review"
    assert [a["name"] for a in prompts[0]["arguments"]] == ["language"]
    got = aria.run("mcp", "prompts", "py", "--get", "review", "--arg", "language=French")
    assert got.returncode == 0 and "answer in French" in got.stdout, got.stdout + got.stderr
    bad = aria.run("mcp", "prompts", "py", "--get", "review", "--arg", "French")
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr


def test_a_resource_is_read_into_a_chat(tmp_path, mcp_server):
    url, _ = mcp_server
    aria = Aria(tmp_path, url)
    with FakeOpenAI(["Noted: milk and the plumber."]) as model:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ARIA_", "OPENAI_"))}
        env.update({"ARIA_HOME": str(aria.home), "ARIA_CONFIG": str(aria.config),
                    "HOME": str(aria.home), "NO_COLOR": "1", "E2E_MCP_KEY": KEY,
                    "OPENAI_BASE_URL": model.base_url, "ARIA_PROVIDER": "openai",
                    "ARIA_MODEL": "scripted"})
        chat = subprocess.run([str(ARIA_BIN), "--root", str(aria.root), "chat"], env=env,
                              input="/resource py notes://today what must I do?\n/exit\n",
                              capture_output=True, text=True, timeout=60)
        assert chat.returncode == 0, chat.stderr
        sent = json.dumps(model.requests[-1]["messages"])
    assert "plumber" in sent and "what must I do?" in sent, sent
