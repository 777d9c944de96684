#!/usr/bin/env python3
"""Benchmarks of `aria serve` against a scripted OpenAI-compatible model on loopback.

Prints, and asserts nothing:
  * idle RSS of the daemon with no model loaded: VmRSS one second after it says where it
    serves (start-up done; the daemon has given back what only start-up needed), split into
    anonymous memory (heap, stacks, relocated data) and file-backed pages (the executable's
    code and read-only data, shared libraries) from /proc/PID/smaps_rollup; and again after the
    first periodic status collection (`[server] status_interval_secs`, 15 s by default): the
    figure an idle daemon stays at; with the highest reading in between (sampled every 20 ms:
    a collection maps the code it runs back in until the daemon gives it back after it),
  * RSS after the work below, and again once the next idle status collection is past,
  * requests/s for GET /api/v1/health (wrk when installed, else a Python client, which is
    client-bound and says so),
  * time to the first SSE `text` event of a message, next to the model's own time to its first
    chunk (the same fake server asked directly), and the difference: what the daemon adds,
  * N concurrent SSE streams (default 200): how many ended with `done`, errors, wall time.

Usage: python3 bench/serve/run.py [--bin target/release/aria] [--streams 200] [--rounds 30]
Needs a built binary (`cargo build --release`).
"""

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from fake_openai import FakeOpenAI  # noqa: E402

ANSWER = "The daemon streams this answer back, one small piece at a time."


def start_daemon(binary, home, root, model_url, config):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "ARIA_HOME": str(home / "aria"),
        "OPENAI_BASE_URL": model_url,
        "OPENAI_API_KEY": "sk-bench-0123456789",
        "ARIA_PROVIDER": "openai",
        "ARIA_MODEL": "scripted",
    }
    (home / "config" / "aria").mkdir(parents=True, exist_ok=True)
    (home / "config" / "aria" / "aria.toml").write_text(config)
    proc = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0", "--root", str(root)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"serving on http://([^/]+)/", line)
        if m:
            threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
            return proc, m.group(1)
    proc.kill()
    raise SystemExit("the daemon did not say where it serves")


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def rss_split(pid):
    """VmRSS as "X MiB (A anonymous, F file-backed)", from smaps_rollup (KiB)."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        if rest.split():
            fields[name] = int(rest.split()[0])
    total, anon = rss_kib(pid), fields.get("Anonymous", 0)
    return (f"{total / 1024:.1f} MiB ({anon / 1024:.1f} MiB anonymous: heap, stacks, relocated "
            f"data; {(fields.get('Rss', total) - anon) / 1024:.1f} MiB file-backed: the "
            f"executable's and libraries' pages mapped)")


def request(address, method, path, body=None):
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data


def new_conversation(address):
    status, data = request(address, "POST", "/api/v1/conversations", {})
    assert status == 201, data
    return json.loads(data)["id"]


def stream_message(address, conversation, content, on_first_text=None):
    """Sends a streamed message; returns (seconds to first text event, event names)."""
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    body = json.dumps({"content": content, "stream": True})
    start = time.perf_counter()
    conn.request("POST", f"/api/v1/conversations/{conversation}/messages", body=body,
                 headers={"Content-Type": "application/json", "Connection": "close"})
    resp = conn.getresponse()
    first, names = None, []
    while True:
        line = resp.fp.readline()
        if not line:
            break
        line = line.decode().rstrip("\r\n")
        if line.startswith("event: "):
            names.append(line[7:])
            if names[-1] == "text" and first is None:
                first = time.perf_counter() - start
                if on_first_text:
                    on_first_text()
    conn.close()
    return first, names


def model_first_chunk(model_url):
    host, port = model_url.split("//")[1].split("/")[0].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    body = json.dumps({"model": "scripted", "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]})
    start = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body=body,
                 headers={"Content-Type": "application/json", "Connection": "close"})
    resp = conn.getresponse()
    first = None
    while True:
        line = resp.fp.readline()
        if not line:
            break
        if b'"content"' in line and first is None:
            first = time.perf_counter() - start
    conn.close()
    return first


def health_rps(address, seconds):
    if shutil.which("wrk"):
        out = subprocess.run(["wrk", "-t2", "-c32", f"-d{seconds}s",
                              f"http://{address}/api/v1/health"],
                             capture_output=True, text=True).stdout
        m = re.search(r"Requests/sec:\s+([\d.]+)", out)
        errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        return float(m.group(1)) if m else 0.0, "wrk -t2 -c32", int(errors.group(1)) if errors else 0
    count = [0]
    stop = time.time() + seconds
    host, port = address.rsplit(":", 1)

    def worker():
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        while time.time() < stop:
            conn.request("GET", "/api/v1/health")
            conn.getresponse().read()
            count[0] += 1

    threads = [threading.Thread(target=worker) for _ in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return count[0] / seconds, "python http.client x8 (client-bound: install wrk)", 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "target" / "release" / "aria"))
    ap.add_argument("--streams", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--idle", type=float, default=17.0,
                    help="seconds after start-up for the second idle reading, past the first "
                         "periodic status collection (0: skip it)")
    ap.add_argument("--after", type=float, default=17.0,
                    help="seconds to wait after the streams for the last idle reading (0: skip)")
    args = ap.parse_args()
    if not Path(args.bin).exists():
        raise SystemExit(f"{args.bin} is missing: run `cargo build --release` first")

    script = [{"text": ANSWER, "chunk": 12}] * (args.rounds * 2 + args.streams + 100)
    with FakeOpenAI(script) as model, tempfile.TemporaryDirectory() as tmp:
        home, root = Path(tmp) / "home", Path(tmp) / "root"
        root.mkdir(parents=True)
        config = "[server]\nrate_limit_per_minute = 0\n[memory]\nextract = false\n"
        proc, address = start_daemon(args.bin, home, root, model.base_url, config)
        try:
            started = time.time()
            time.sleep(1.0)
            print(f"aria serve ({args.bin}) on {address}, model: scripted fake on {model.base_url}")
            print(f"idle RSS, no model loaded, 1 s after start-up: {rss_split(proc.pid)} "
                  f"(goal <= 15 MB)")
            if args.idle > 1:
                peak = 0
                while time.time() < started + args.idle:
                    peak = max(peak, rss_kib(proc.pid))
                    time.sleep(0.02)
                print(f"idle RSS {args.idle:.0f} s after start-up (after a periodic status "
                      f"collection): {rss_split(proc.pid)}; highest reading in between "
                      f"{peak / 1024:.1f} MiB")

            rps, how, errors = health_rps(address, args.seconds)
            print(f"GET /api/v1/health: {rps:,.0f} requests/s ({how}, {args.seconds} s, "
                  f"{errors} non-2xx)")

            own, through = [], []
            conversation = new_conversation(address)
            for _ in range(args.rounds):
                own.append(model_first_chunk(model.base_url))
                first, names = stream_message(address, conversation, "say something")
                assert names and names[-1] == "done", names
                through.append(first)
            own_ms = statistics.median(own) * 1000
            through_ms = statistics.median(through) * 1000
            print(f"first SSE text event: median {through_ms:.2f} ms through the daemon, "
                  f"{own_ms:.2f} ms from the model itself: +{through_ms - own_ms:.2f} ms "
                  f"(goal <= 5 ms; {args.rounds} rounds, one conversation)")
            print(f"after {args.rounds} runs: RSS {rss_kib(proc.pid) / 1024:.1f} MiB")

            conversations = [new_conversation(address) for _ in range(args.streams)]
            results = [None] * args.streams

            def one(i):
                try:
                    results[i] = stream_message(address, conversations[i], f"stream {i}")[1]
                except Exception as e:  # noqa: BLE001 - counted and shown
                    results[i] = e

            threads = [threading.Thread(target=one, args=(i,)) for i in range(args.streams)]
            start = time.perf_counter()
            [t.start() for t in threads]
            [t.join() for t in threads]
            wall = time.perf_counter() - start
            done = sum(1 for r in results if isinstance(r, list) and r and r[-1] == "done")
            failed = [r for r in results if not (isinstance(r, list) and r and r[-1] == "done")]
            print(f"{args.streams} concurrent SSE streams: {done} ended with `done`, "
                  f"{len(failed)} did not, in {wall:.2f} s; RSS {rss_kib(proc.pid) / 1024:.1f} MiB")
            for r in failed[:3]:
                print(f"  e.g. {r!r}")
            if args.after > 0:
                time.sleep(args.after)
                print(f"idle again, {args.after:.0f} s after the streams (past the next status "
                      f"collection): {rss_split(proc.pid)}")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
