"""End-to-end tests of what `aria serve` shows about itself: `/metrics` parsed by
the official Prometheus client's parser, `/health` and `/status` with and without a token off
the page, and the `/ui/status` page rendered in headless Chromium with a screenshot check.

Run with the other suites: `scripts/e2e.sh` (after `cargo build -p aria-cli`).
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aria_daemon import AriaDaemon, needs_aria  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update"]
TOKEN = "observe-token-0123456789abcdef"

pytestmark = needs_aria


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    model = FakeOpenAI([{"tool_calls": [{"name": "file_read", "arguments": {"path": "notes.txt"}}]},
                        "The notes say: notes."]).start()
    d = AriaDaemon(tmp_path_factory.mktemp("observe"), model, token=TOKEN).start()
    # One real run, so there is something to count.
    _, conversation = d.api("POST", "/conversations", {}, expect_status=201)
    d.api("POST", f"/conversations/{conversation['id']}/messages", {"content": "read my notes"},
          expect_status=200)
    yield d
    d.stop()
    model.stop()


def test_metrics_parse_with_the_prometheus_client(daemon):
    status, headers, body = daemon.raw("GET", "/metrics")
    assert status == 200, body[:300]
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    # The parser names a counter family without its `_total` suffix.
    for name in ["aria_model_calls", "aria_tool_calls", "aria_runs", "aria_tokens",
                 "aria_model_call_duration_seconds", "aria_health_status", "aria_uptime_seconds",
                 "process_resident_memory_bytes"]:
        assert name in families, f"{name} missing from {sorted(families)}"
    tools = {tuple(sorted(s.labels.items())): s.value for s in families["aria_tool_calls"].samples
             if s.name == "aria_tool_calls_total"}
    assert tools[(("outcome", "ok"), ("tier", "read"), ("tool", "file_read"))] == 1.0, tools
    for family in families.values():
        assert family.name.startswith(("aria_", "process_")), family.name
    status, _, body = daemon.raw("GET", "/metrics/json")
    assert status == 200
    names = [m["name"] for m in json.loads(body)["metrics"]]
    assert "aria_tool_calls_total" in names


def test_health_is_open_and_the_rest_needs_the_token(daemon):
    status, _, body = daemon.raw("GET", "/health", headers={"Authorization": None})
    assert status == 200, body
    health = json.loads(body)
    assert health["status"] in ("healthy", "degraded"), health
    assert {c["name"] for c in health["checks"]} >= {"database", "disk", "scheduler", "outbox"}
    for path in ["/status", "/metrics", "/metrics/json", "/ui/status"]:
        status, _, _ = daemon.raw("GET", path, headers={"Authorization": None})
        assert status == 401, f"{path} answered {status} without the token"
    status, _, body = daemon.raw("GET", "/status")
    status_json = json.loads(body)
    assert status == 200 and status_json["uptime_secs"] >= 0
    assert status_json["scheduler"]["running"] is True, status_json["scheduler"]
    status, _, _ = daemon.raw("DELETE", "/health")
    assert status == 405


def test_the_status_page_renders_in_chromium(daemon, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    from PIL import Image  # noqa: PLC0415 — only this test needs it
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(base_url=daemon.url, viewport={"width": 1200, "height": 900},
                                      extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto("/ui/status")
        page.wait_for_function("document.querySelectorAll('#checks tbody tr').length >= 5",
                               timeout=15_000)
        overall = page.locator("#overall").inner_text()
        assert overall in ("healthy", "degraded"), overall
        assert page.locator("#chart-runs rect").count() == 24
        assert page.locator("#chart-latency polyline").count() == 2
        assert "uptime" in page.locator("#cards").inner_text()
        shot = tmp_path / "status.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert not errors, errors
    # The screenshot is a rendered page, not a blank one: many colours, most of it background.
    image = Image.open(io.BytesIO(shot.read_bytes())).convert("RGB")
    assert image.width == 1200 and image.height >= 900
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50, "the page looks blank"
