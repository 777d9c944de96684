#!/usr/bin/env python3
"""How fast `aria mcp serve` answers `tools/list` from process start (goal: <= 5 ms).

The goal is that low because an editor may start the server for every session.

Each round starts `aria mcp serve` with a fresh $ARIA_HOME (made once; the store already
exists, as it does after the first use) and a throwaway root, writes `initialize`,
`notifications/initialized` and `tools/list` at once on its stdin, and takes the time from just
before the process is spawned to the `tools/list` answer on its stdout. The same is measured for
`aria --version` (process start alone) so the figure can be read against the floor. Prints p50,
p90 and the best, asserts nothing.

Run: `cargo build --release -p aria-cli && python3 bench/mcp_serve/run.py [--bin PATH] [--runs N]`
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


def once_list(binary: str, env: dict, root: str) -> tuple[float, int]:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    payload = "".join(json.dumps(m) + "\n" for m in messages).encode()
    started = time.perf_counter()
    proc = subprocess.Popen([binary, "--root", root, "mcp", "serve"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    proc.stdin.write(payload)
    proc.stdin.flush()
    tools = 0
    for line in proc.stdout:
        answer = json.loads(line)
        if answer.get("id") == 2:
            tools = len(answer["result"]["tools"])
            break
    elapsed = time.perf_counter() - started
    proc.stdin.close()
    proc.wait()
    return elapsed * 1000, tools


def once_version(binary: str, env: dict) -> float:
    started = time.perf_counter()
    subprocess.run([binary, "--version"], env=env, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=str(REPO / "target" / "release" / "aria"))
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, root = Path(tmp) / "home", Path(tmp) / "root"
        home.mkdir()
        root.mkdir()
        (home / "aria.toml").write_text('[memory]\nembedder = "none"\n')
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ARIA_", "OPENAI_"))}
        env.update({"ARIA_HOME": str(home), "ARIA_CONFIG": str(home / "aria.toml"),
                    "HOME": str(home)})
        once_list(args.bin, env, str(root))  # creates the store, as a first use would
        lists, tools = [], 0
        versions = []
        for _ in range(args.runs):
            ms, tools = once_list(args.bin, env, str(root))
            lists.append(ms)
            versions.append(once_version(args.bin, env))
    print(f"aria mcp serve: process start to the tools/list answer ({tools} tools), "
          f"{args.runs} runs")
    print(f"  p50 {statistics.median(lists):.2f} ms  p90 {percentile(lists, 90):.2f} ms  "
          f"best {min(lists):.2f} ms   (goal <= 5 ms)")
    print(f"aria --version (process start alone): p50 {statistics.median(versions):.2f} ms  "
          f"best {min(versions):.2f} ms")


if __name__ == "__main__":
    main()
