"""A real `aria serve` for the end-to-end suites, and the helpers they share.

`AriaDaemon` starts the binary (`target/debug/aria`, or `$ARIA_BIN`) with its own $ARIA_HOME, a
throwaway git repository as its root and the scripted model of `fake_openai.py`, waits until
`/api/v1/health` answers, and stops it with SIGTERM. The suites keep what is their own: the
files in the repository, the token, more configuration, their fixtures.
"""

from __future__ import annotations

import email.message
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[2]
ARIA_BIN = Path(os.environ.get("ARIA_BIN") or REPO / "target" / "debug" / "aria").resolve()

# For a suite's `pytestmark`: without the binary there is nothing to test.
needs_aria = pytest.mark.skipif(not ARIA_BIN.exists(),
                                reason=f"{ARIA_BIN} is missing: run `cargo build -p aria-cli`")

# No embedder download in tests: memories are searched by full text only.
BASE_CONFIG = '[memory]\nembedder = "none"\n'
START_TIMEOUT = 60  # seconds for /api/v1/health to answer
STOP_TIMEOUT = 15  # seconds for SIGTERM to end the daemon, before it is killed
REQUEST_TIMEOUT = 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=E2E", "-c",
                           "user.email=e2e@example.invalid", "-c", "commit.gpgsign=false", *args],
                          check=True, capture_output=True, text=True).stdout


class AriaDaemon:
    """One `aria serve` with its own $ARIA_HOME and a git repository as its root.

    `files` (default `FILES`) are committed in the repository. With `token` the daemon wants it
    (`ARIA_API_TOKEN`); without, the daemon makes its own on first start ($ARIA_HOME/api-token)
    and `start` reads it. Either way the request helpers send it. `extra_config` is appended to aria.toml
    after `BASE_CONFIG`, so bare keys at its start still belong to `[memory]`. aria.toml is
    `<base>/aria.toml` named by `ARIA_CONFIG`, or with `config_in_xdg` where ARIA looks for it
    by itself, `$XDG_CONFIG_HOME/aria/aria.toml`, and no `ARIA_CONFIG`.
    """

    FILES: dict[str, str] = {"notes.txt": "notes\n"}

    def __init__(self, base: Path, model: FakeOpenAI, *, token: str | None = None,
                 files: dict[str, str] | None = None, extra_config: str = "",
                 config_in_xdg: bool = False):
        self.home, self.root = base / "home", base / "repo"
        self.home.mkdir(parents=True)
        self.root.mkdir(parents=True)
        for name, text in (self.FILES if files is None else files).items():
            (self.root / name).write_text(text)
        git(self.root, "init", "-q", "-b", "main")
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "Initial files")
        self.xdg = self.home / "xdg"
        self.config_in_xdg = config_in_xdg
        if config_in_xdg:
            self.config = self.xdg / "aria" / "aria.toml"
            self.config.parent.mkdir(parents=True)
        else:
            self.config = base / "aria.toml"
        self.config.write_text(BASE_CONFIG + extra_config)
        self.token = token
        self.model = model
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = base / "daemon.log"
        self.log = None
        self.proc: subprocess.Popen | None = None

    def env(self) -> dict[str, str]:
        """The daemon's environment: none of the caller's ARIA_/model settings, only these."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ARIA_", "OPENAI_", "ANTHROPIC_", "OLLAMA_"))}
        env.update({
            "ARIA_HOME": str(self.home), "OPENAI_BASE_URL": self.model.base_url,
            "ARIA_PROVIDER": "openai", "ARIA_MODEL": "scripted", "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.xdg), "NO_COLOR": "1",
        })
        if not self.config_in_xdg:
            env["ARIA_CONFIG"] = str(self.config)
        if self.token:
            env["ARIA_API_TOKEN"] = self.token
        return env

    def start(self) -> "AriaDaemon":
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(ARIA_BIN), "serve", "--listen", f"127.0.0.1:{self.port}", "--root", str(self.root)],
            env=self.env(), cwd=str(self.root), stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        deadline = time.time() + START_TIMEOUT
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"aria serve exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/api/v1/health", timeout=2) as r:
                    if r.status == 200:
                        if not self.token:
                            self.token = (self.home / "api-token").read_text().strip()
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"aria serve did not answer /api/v1/health within {START_TIMEOUT} s:\n"
                           f"{self.log_tail()}")

    def login_url(self) -> str:
        """A fresh one-time link that logs a browser in (what `aria ui` prints)."""
        status, body = self.api("POST", "/login-codes", {})
        assert status == 201, f"no login link: {status} {body}"
        return body["url"]

    def scoped_token(self, name: str, scope: str) -> str:
        """A token of its own for one client (`aria tokens add NAME --scope SCOPE`)."""
        out = subprocess.run([str(ARIA_BIN), "tokens", "add", name, "--scope", scope, "--json"],
                             env=self.env(), cwd=str(self.root), capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout)["token"]

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.log:
            self.log.close()

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    # -- requests (with the bearer token when one is set) ------------------------------------
    def raw(self, method: str, path: str, body: bytes | None = None,
            headers: dict | None = None) -> tuple[int, email.message.Message, bytes]:
        """A request as it is, to `path` under the daemon's URL: status, headers, body.

        A header given as None is not sent (`{"Authorization": None}` sends no token)."""
        req = urllib.request.Request(self.url + path, data=body, method=method)
        auth = f"Bearer {self.token}" if self.token else None
        for k, v in {"Authorization": auth, **(headers or {})}.items():
            if v is not None:
                req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def api(self, method: str, path: str, body=None, expect_status: int | None = None):
        """A JSON request to `/api/v1` + `path`: the status and the decoded body (None if empty)."""
        data = None if body is None else json.dumps(body).encode()
        headers = None if data is None else {"Content-Type": "application/json"}
        status, _, raw = self.raw(method, "/api/v1" + path, data, headers)
        if expect_status is not None:
            assert status == expect_status, f"{method} {path}: {status} {raw[:500]!r}"
        return status, (json.loads(raw) if raw.strip() else None)

    def get(self, path: str):
        """`GET /api/v1` + `path`, which must answer 200: the decoded body."""
        status, value = self.api("GET", path)
        assert status == 200, f"GET {path}: {status} {value}"
        return value
