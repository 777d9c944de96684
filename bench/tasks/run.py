#!/usr/bin/env python3
"""Runs ARIA's task set (bench/tasks/tasks.toml) against embedded models and prints, per model:
tasks solved, tool-call validity, tool selection accuracy, seconds per task and the latency to
the first output of the first model call.

    python3 bench/tasks/run.py                                # every embedded chat model pulled
    python3 bench/tasks/run.py --model smollm2-135m-instruct  # one model (repeatable)
    python3 bench/tasks/run.py --only read-meeting-day --verbose

Each task runs `aria run --json` with `--backend local --model NAME` in a fresh root, under its
own ARIA_HOME whose models/ directory links to the one the models were pulled into
(--models-dir, default $ARIA_HOME/models or ~/.local/share/aria/models), so runs never see each
other's memories or sessions. The root and ARIA_HOME are made again at the same paths for every
task, and the model's saved prompt state ($ARIA_HOME/cache) is kept from one task to the next,
as for a user who works in one directory (--cold: not kept). Nothing here reaches the network; a model that is not pulled is
skipped with a note (`aria model pull NAME` fetches it).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def default_models_dir() -> Path:
    home = os.environ.get("ARIA_HOME")
    if home:
        return Path(home) / "models"
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "aria" / "models"


def pulled_chat_models(aria: str, models_dir: Path) -> list[str]:
    env = dict(os.environ, ARIA_HOME=str(models_dir.parent))
    out = subprocess.run([aria, "model", "list", "--json"], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return []
    try:
        rows = json.loads(out.stdout)
    except json.JSONDecodeError:
        return []
    return [r["name"] for r in rows if r.get("kind") == "chat" and r.get("state") == "installed"]


def audit(aria: str, env: dict, session: str) -> list[dict]:
    out = subprocess.run([aria, "audit", "list", "--json"], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return []
    records = json.loads(out.stdout)
    return [r for r in records if r.get("session_id") == session]


def judge(task: dict, answer: str, code: int, root: Path, before: dict) -> list[str]:
    """What went wrong (empty when the task is solved)."""
    problems = []
    low = answer.lower()
    wants = task.get("answer")
    if wants and not any(w.lower() in low for w in wants):
        problems.append(f"answer lacks any of {wants}")
    for bad in task.get("absent", []):
        if bad.lower() in low:
            problems.append(f"answer contains {bad!r}")
    for name, text in task.get("contains", {}).items():
        path = root / name
        if not path.is_file() or text not in path.read_text(errors="replace"):
            problems.append(f"{name} lacks {text!r}")
    for name, text in task.get("equals", {}).items():
        path = root / name
        got = path.read_text(errors="replace") if path.is_file() else None
        if got is None or got.rstrip() != text.rstrip():
            problems.append(f"{name} is not the expected text (the rest of the file kept)")
    for name, text in task.get("lacks", {}).items():
        path = root / name
        if path.is_file() and text in path.read_text(errors="replace"):
            problems.append(f"{name} still has {text!r}")
    if task.get("unchanged") and snapshot(root) != before:
        problems.append("files changed")
    refusal = "absent" in task
    if not refusal and code != task.get("exit", 0):
        problems.append(f"exit {code}")
    return problems


def snapshot(root: Path) -> dict:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def run_task(aria: str, model: str, task: dict, models_dir: Path, timeout: int, verbose: bool,
             base: Path, cold: bool):
    """Runs one task in `base`: a fresh ARIA_HOME and root each time, at the same paths, as for
    a user who keeps working in one directory. The model's saved prompt state
    ($ARIA_HOME/cache) is shared between the tasks of one model unless `cold`."""
    tmp = base
    home, root = tmp / "home", tmp / "root"
    for d in (home, root, tmp / "config"):
        shutil.rmtree(d, ignore_errors=True)
    home.mkdir()
    root.mkdir()
    (home / "models").symlink_to(models_dir.resolve())
    if not cold:
        shared = tmp / "shared-cache"
        shared.mkdir(exist_ok=True)
        (home / "cache").symlink_to(shared)
    for name, text in task.get("files", {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    before = snapshot(root)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "ARIA_HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "ARIA_ROOTS": str(root),
    }
    cmd = [aria, "--backend", "local", "--model", model, "run", "--json", "--task", task["prompt"]]
    started = time.monotonic()
    try:
        out = subprocess.run(
            cmd, capture_output=True, text=True, env=env, cwd=root, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        code, stdout, stderr = out.returncode, out.stdout, out.stderr
    except subprocess.TimeoutExpired:
        code, stdout, stderr = -1, "", f"timed out after {timeout} s"
    seconds = time.monotonic() - started
    try:
        result = json.loads(stdout)
    except json.JSONDecodeError:
        result = {}
    answer = result.get("answer") or ""
    records = audit(aria, env, result.get("session_id", "")) if result else []
    problems = judge(task, answer, code, root, before)
    if code == -1:
        problems.append("timeout")
    starts = sum(1 for r in records if r["kind"] == "tool.start")
    invalid = sum(1 for r in records if r["kind"] == "tool.invalid")
    offered = set()
    for r in records:
        if r["kind"] == "tools.selected":
            offered.update(r["payload"].get("offered", []))
    needed = task.get("tools", [])
    selected_ok = all(t in offered for t in needed) if needed and offered else None
    first = next(
        (r["payload"].get("first_output_ms") for r in records if r["kind"] == "model.response"),
        None,
    )
    if verbose:
        print(f"  {task['id']}: exit {code}, {seconds:.1f} s, answer {answer[:120]!r}")
        for p in problems:
            print(f"      {p}")
        if code not in (0, 1) and stderr:
            print("      stderr: " + stderr.strip().splitlines()[-1][:200])
    return {
        "id": task["id"],
        "solved": not problems,
        "problems": problems,
        "seconds": seconds,
        "calls": starts + invalid,
        "invalid": invalid,
        "selected_ok": selected_ok,
        "first_output_ms": first,
    }


def report(model: str, rows: list[dict]) -> None:
    solved = sum(r["solved"] for r in rows)
    calls = sum(r["calls"] for r in rows)
    invalid = sum(r["invalid"] for r in rows)
    judged = [r for r in rows if r["selected_ok"] is not None]
    firsts = [r["first_output_ms"] / 1000 for r in rows if r["first_output_ms"] is not None]
    secs = [r["seconds"] for r in rows]
    print(f"\n{model}")
    print(f"  tasks solved:          {solved}/{len(rows)} ({100 * solved / max(len(rows), 1):.0f} %)")
    validity = f"{100 * (calls - invalid) / calls:.0f} % of {calls}" if calls else "no calls"
    print(f"  valid tool calls:      {validity}")
    if judged:
        ok = sum(r["selected_ok"] for r in judged)
        print(f"  needed tools offered:  {ok}/{len(judged)} tasks")
    print(f"  seconds per task:      median {statistics.median(secs):.1f}, max {max(secs):.1f}")
    if firsts:
        print(f"  first output (s):      median {statistics.median(firsts):.1f}, max {max(firsts):.1f}")
    failed = [r for r in rows if not r["solved"]]
    if failed:
        print("  not solved: " + ", ".join(f"{r['id']} ({'; '.join(r['problems'])})" for r in failed))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aria", default=str(REPO / "target" / "release" / "aria"))
    ap.add_argument("--model", action="append", help="catalog name (repeatable); default: every pulled chat model")
    ap.add_argument("--models-dir", type=Path, default=default_models_dir())
    ap.add_argument("--only", action="append", help="task id (repeatable)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per task")
    ap.add_argument("--json", action="store_true", help="print the per-task rows as JSON too")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--cold", action="store_true",
                    help="no saved prompt state between tasks (each run computes its system turn)")
    args = ap.parse_args()
    if not Path(args.aria).exists() and not shutil.which(args.aria):
        print(f"no aria binary at {args.aria}: build it with `cargo build --release`", file=sys.stderr)
        return 2
    tasks = tomllib.loads((HERE / "tasks.toml").read_text())["task"]
    if args.only:
        tasks = [t for t in tasks if t["id"] in args.only]
    models = args.model or pulled_chat_models(args.aria, args.models_dir)
    if not models:
        print(f"no chat model is pulled in {args.models_dir}: run `aria model pull`", file=sys.stderr)
        return 2
    for model in models:
        if not (args.models_dir / model).is_dir():
            print(f"\n{model}: not pulled in {args.models_dir} (`aria model pull {model}`); skipped")
            continue
        print(f"\n{model}: {len(tasks)} tasks")
        with tempfile.TemporaryDirectory(prefix="aria-tasks-") as base:
            rows = [
                run_task(args.aria, model, t, args.models_dir, args.timeout, args.verbose,
                         Path(base), args.cold)
                for t in tasks
            ]
        report(model, rows)
        if args.json:
            print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
