#!/usr/bin/env python3
"""Runs ARIA's task set (bench/tasks/tasks.toml) against embedded models and prints, per model
and per kind of task: tasks solved, seconds per task and the latency to the first output of the
first model call; and over all tasks: tool-call validity and tool selection accuracy.

    python3 bench/tasks/run.py                                # every embedded chat model pulled
    python3 bench/tasks/run.py --model smollm2-135m-instruct  # one model (repeatable)
    python3 bench/tasks/run.py --only read-meeting-day --verbose
    python3 bench/tasks/run.py --kind project                 # the project requests only
    python3 bench/tasks/run.py --selfcheck                    # prove the expectations, no model

Two kinds of task:

  simple   one request in a fresh directory holding a few files (`files`), run with
           ARIA_ROOTS naming that directory.
  project  a request a user makes from inside a git project: the fixture
           bench/tasks/projects/NAME/ is copied into a directory named NAME and committed as a
           first commit, the overlay projects/NAME.second_commit/ (when present) is written over
           it and committed as a second one (fixed author, committer and dates, so the history
           is the same on every run), then the task's own `files` and `edits` are applied (and
           committed when the task gives `commit`). ARIA runs from inside that directory with
           neither ARIA_ROOTS nor --root: it takes the current directory as its root.

Each task runs `aria run --json` with `--backend local --model NAME` under its own ARIA_HOME
whose models/ directory links to the one the models were pulled into (--models-dir, default
$ARIA_HOME/models or ~/.local/share/aria/models), so runs never see each other's memories or
sessions. The roots and ARIA_HOME are made again at the same paths for every task, and the
model's saved prompt state ($ARIA_HOME/cache) is kept from one task to the next, as for a user
who works in one directory (--cold: not kept). Nothing here reaches the network; a model that
is not pulled is skipped with a note (`aria model pull NAME` fetches it). A task whose `check`
needs a program that is not installed (node for the `tally` project) is skipped with a note.

--selfcheck runs no model: for every task it judges the unsolved setup (which must fail), each
of the task's `solution.bad` attempts (which must fail) and its `solution` (which must pass), so
that every expectation is shown able both to pass and to fail.
"""

import argparse
import difflib
import json
import os
import re
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
PROJECTS = HERE / "projects"
KINDS = ("simple", "project")

# The fixture histories are made by this author at these times, so the commit ids are the same
# on every run and every machine.
GIT_PERSON = {
    "GIT_AUTHOR_NAME": "Sam Rivera",
    "GIT_AUTHOR_EMAIL": "sam@example.org",
    "GIT_COMMITTER_NAME": "Sam Rivera",
    "GIT_COMMITTER_EMAIL": "sam@example.org",
}
COMMIT_DATES = ("2026-03-02T10:00:00+00:00", "2026-03-09T16:30:00+00:00",
                "2026-03-10T09:15:00+00:00")
CHECK_TIMEOUT = 120


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


def audit(aria: str, env: dict, session: str, cwd: Path) -> list[dict]:
    out = subprocess.run([aria, "audit", "list", "--json"], capture_output=True, text=True,
                         env=env, cwd=cwd)
    if out.returncode != 0:
        return []
    records = json.loads(out.stdout)
    return [r for r in records if r.get("session_id") == session]


def load_tasks() -> tuple[list[dict], dict]:
    data = tomllib.loads((HERE / "tasks.toml").read_text())
    tasks, projects = data["task"], data.get("project", {})
    for t in tasks:
        t.setdefault("kind", "project" if "project" in t else "simple")
        if t["kind"] not in KINDS:
            raise SystemExit(f"task {t['id']}: kind {t['kind']!r} is not one of {KINDS}")
        if t["kind"] == "project" and t.get("project") not in projects:
            raise SystemExit(f"task {t['id']}: project {t.get('project')!r} has no "
                             "[project.*] table")
    return tasks, projects


# --- setting a task up ------------------------------------------------------------------------

def git(root: Path, base: Path, *args: str, date: str | None = None) -> str:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(base),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        **GIT_PERSON,
    }
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    out = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def commit_all(root: Path, base: Path, message: str, date: str) -> None:
    git(root, base, "add", "-A")
    git(root, base, "commit", "-q", "-m", message, date=date)


def write_files(root: Path, files: dict) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def apply_edits(root: Path, edits: list, what: str) -> None:
    """Each edit is [path, old, new]: every `old` in the file becomes `new`."""
    for name, old, new in edits:
        path = root / name
        text = path.read_text()
        if old not in text:
            raise RuntimeError(f"{what}: {name} has no {old!r} to replace")
        path.write_text(text.replace(old, new))


def apply_change(root: Path, change: dict, what: str) -> None:
    """Writes `files`, applies `edits`, removes `delete` (a task's setup or a solution)."""
    write_files(root, change.get("files", {}))
    apply_edits(root, change.get("edits", []), what)
    for name in change.get("delete", []):
        (root / name).unlink()


def task_root(task: dict, base: Path) -> Path:
    return base / (task["project"] if task["kind"] == "project" else "root")


def prepare(task: dict, projects: dict, base: Path) -> Path:
    """Makes the task's root afresh in `base` (every earlier root is removed) and returns it."""
    for d in base.iterdir():
        if d.is_dir() and d.name not in ("home", "shared-cache"):
            shutil.rmtree(d)
    root = task_root(task, base)
    if task["kind"] == "project":
        name = task["project"]
        project = projects[name]
        shutil.copytree(PROJECTS / name, root)
        git(root, base, "init", "-q", "-b", "main")
        commit_all(root, base, project["first_commit"], COMMIT_DATES[0])
        second = PROJECTS / f"{name}.second_commit"
        if second.is_dir():
            shutil.copytree(second, root, dirs_exist_ok=True)
            commit_all(root, base, project["second_commit"], COMMIT_DATES[1])
    else:
        root.mkdir()
    apply_change(root, task, f"task {task['id']}")
    if task.get("commit"):
        commit_all(root, base, task["commit"], COMMIT_DATES[2])
    return root


# --- judging ----------------------------------------------------------------------------------

def snapshot(root: Path) -> dict:
    """The root's files and their bytes; git's own files and Python's byte-code caches aside
    (running the tests writes those, and they are nobody's work)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts and "__pycache__" not in p.parts
    }


def _rx(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


def _norm_item(text: str) -> str:
    text = re.sub(r"[`'\"“”‘’]", "", text).strip().rstrip(".").strip()
    return re.sub(r"\s+", " ", text).lower()


BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")


def list_add_problem(name: str, spec, before: bytes | None, path: Path) -> str | None:
    """Whether the file is its old text with one list item added, in a list (next to another
    item), under the heading `under` when given. Nothing else may change."""
    item, under = (spec, None) if isinstance(spec, str) else (spec["item"], spec.get("under"))
    if before is None or not path.is_file():
        return f"{name} is missing"

    def lines(text: str) -> list[str]:
        out = [line.rstrip() for line in text.splitlines()]
        while out and not out[-1]:
            out.pop()
        return out

    old, new = lines(before.decode(errors="replace")), lines(path.read_text(errors="replace"))
    if len(new) != len(old) + 1:
        return f"{name}: expected one line added, found {len(new) - len(old)} more lines"
    i = next((k for k in range(len(old)) if old[k] != new[k]), len(old))
    if new[:i] != old[:i] or new[i + 1:] != old[i:]:
        return f"{name}: more than one line added or changed"
    m = BULLET.match(new[i])
    if not m or _norm_item(m.group(1)) != _norm_item(item):
        return f"{name}: the added line {new[i]!r} is not the item {item!r}"
    near = [new[k] for k in (i - 1, i + 1) if 0 <= k < len(new)]
    if not any(BULLET.match(line) for line in near):
        return f"{name}: the added item is not in a list"
    if under is not None:
        heading = next((new[k] for k in range(i - 1, -1, -1) if new[k].startswith("#")), None)
        if heading != under:
            return f"{name}: the added item is under {heading!r}, not {under!r}"
    return None


def changed_lines(old: bytes, new: bytes) -> int:
    a = old.decode(errors="replace").splitlines()
    b = new.decode(errors="replace").splitlines()
    removed = added = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return max(removed, added)


def run_checks(task: dict, root: Path, base: Path) -> list[str]:
    """Runs each `check` command in a copy of the root (so that what they write, byte code or
    test output, is not taken for the model's work); each must exit 0."""
    problems = []
    for argv in task.get("check", []):
        scratch = Path(tempfile.mkdtemp(prefix="check-", dir=base))
        try:
            copy = scratch / root.name
            shutil.copytree(root, copy, symlinks=True)
            env = {"PATH": os.environ.get("PATH", ""), "HOME": str(base),
                   "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1"}
            try:
                out = subprocess.run(argv, cwd=copy, env=env, capture_output=True, text=True,
                                     timeout=CHECK_TIMEOUT, stdin=subprocess.DEVNULL)
                if out.returncode != 0:
                    said = (out.stderr + "\n" + out.stdout).strip().splitlines()
                    # node --test names the failed test on a `not ok` line; unittest ends with
                    # FAILED (failures=N) on stderr.
                    said = next((x for x in said if x.lstrip().startswith("not ok")),
                                (out.stderr.strip() or out.stdout.strip() or " ").splitlines()[-1])
                    problems.append(
                        f"`{' '.join(argv)}` exits {out.returncode}: {said.strip()[:160]}")
            except subprocess.TimeoutExpired:
                problems.append(f"`{' '.join(argv)}` took over {CHECK_TIMEOUT} s")
            except FileNotFoundError:
                problems.append(f"`{argv[0]}` is not installed")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return problems


def judge(task: dict, answer: str, code: int, root: Path, before: dict, base: Path) -> list[str]:
    """What went wrong (empty when the task is solved)."""
    problems = []
    low = answer.lower()
    wants = task.get("answer")
    if wants and not any(w.lower() in low for w in wants):
        problems.append(f"answer lacks any of {wants}")
    for group in task.get("answer_all", []):
        if not any(_rx(p).search(answer) for p in group):
            problems.append(f"answer matches none of {group}")
    for pattern in task.get("wrong", []):
        if _rx(pattern).search(answer):
            problems.append(f"answer matches {pattern!r}, which is wrong")
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
    for name in task.get("keep", []):
        path = root / name
        if not path.is_file() or path.read_bytes() != before.get(name):
            problems.append(f"{name} was changed or removed (it must be kept as it was)")
    for name, most in task.get("max_changed_lines", {}).items():
        path = root / name
        if name in before and path.is_file():
            n = changed_lines(before[name], path.read_bytes())
            if n > most:
                problems.append(f"{name}: {n} lines changed, at most {most} expected")
    for name, spec in task.get("list_add", {}).items():
        problem = list_add_problem(name, spec, before.get(name), root / name)
        if problem:
            problems.append(problem)
    if task.get("unchanged") and snapshot(root) != before:
        problems.append("files changed")
    refusal = "absent" in task
    if not refusal and code != task.get("exit", 0):
        problems.append(f"exit {code}")
    problems += run_checks(task, root, base)
    return problems


def missing_programs(task: dict) -> list[str]:
    """The programs the task's setup and checks need that are not installed."""
    needed = {argv[0] for argv in task.get("check", [])}
    if task["kind"] == "project":
        needed.add("git")
    return sorted(p for p in needed if not shutil.which(p))


# --- running ----------------------------------------------------------------------------------

def run_task(aria: str, model: str, task: dict, projects: dict, models_dir: Path, timeout: int,
             verbose: bool, base: Path, cold: bool):
    """Runs one task in `base`: a fresh ARIA_HOME and root each time, at the same paths, as for
    a user who keeps working in one directory. The model's saved prompt state
    ($ARIA_HOME/cache) is shared between the tasks of one model unless `cold`."""
    tmp = base
    home = tmp / "home"
    shutil.rmtree(home, ignore_errors=True)
    root = prepare(task, projects, tmp)
    home.mkdir()
    (home / "models").symlink_to(models_dir.resolve())
    if not cold:
        shared = tmp / "shared-cache"
        shared.mkdir(exist_ok=True)
        (home / "cache").symlink_to(shared)
    before = snapshot(root)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "ARIA_HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp / "config"),
    }
    if task["kind"] == "simple":
        env["ARIA_ROOTS"] = str(root)
    # A project task names no root at all: ARIA works in the directory it is started from.
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
    records = audit(aria, env, result.get("session_id", ""), root) if result else []
    problems = judge(task, answer, code, root, before, tmp)
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
        print(f"  {task['id']} [{task['kind']}]: exit {code}, {seconds:.1f} s, answer {answer[:120]!r}")
        if task["kind"] == "project":
            commits = git(root, tmp, "rev-list", "--count", "HEAD").strip()
            print(f"      root {root} (the current directory, no --root or ARIA_ROOTS), "
                  f"{commits} commits")
            said = next((line for line in stderr.splitlines() if "working in" in line), None)
            if said:
                print(f"      aria: {said.strip()[:200]}")
        tools_used = [r["payload"].get("tool") or r["payload"].get("name")
                      for r in records if r["kind"] == "tool.start"]
        if tools_used:
            print(f"      tools: {', '.join(str(t) for t in tools_used)}")
        for p in problems:
            print(f"      {p}")
        if code not in (0, 1) and stderr:
            print("      stderr: " + stderr.strip().splitlines()[-1][:200])
    return {
        "id": task["id"],
        "kind": task["kind"],
        "solved": not problems,
        "problems": problems,
        "answer": answer,
        "seconds": seconds,
        "calls": starts + invalid,
        "invalid": invalid,
        "selected_ok": selected_ok,
        "first_output_ms": first,
    }


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}" if values else "–"


def report(model: str, rows: list[dict]) -> None:
    solved = sum(r["solved"] for r in rows)
    calls = sum(r["calls"] for r in rows)
    invalid = sum(r["invalid"] for r in rows)
    judged = [r for r in rows if r["selected_ok"] is not None]
    firsts = [r["first_output_ms"] / 1000 for r in rows if r["first_output_ms"] is not None]
    secs = [r["seconds"] for r in rows]
    print(f"\n{model}")
    print("  kind       solved            median s/task   median first output (s)")
    groups = [(k, [r for r in rows if r["kind"] == k]) for k in KINDS]
    for kind, group in [*((k, g) for k, g in groups if g), ("all", rows)]:
        ok = sum(r["solved"] for r in group)
        share = f"{ok}/{len(group)} ({100 * ok / max(len(group), 1):.0f} %)"
        first = [r["first_output_ms"] / 1000 for r in group if r["first_output_ms"] is not None]
        print(f"  {kind:<10} {share:<17} {_median([r['seconds'] for r in group]):>13}   "
              f"{_median(first):>12}")
    validity = f"{100 * (calls - invalid) / calls:.0f} % of {calls}" if calls else "no calls"
    print(f"  tasks solved:          {solved}/{len(rows)} ({100 * solved / max(len(rows), 1):.0f} %)")
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


# --- proving the expectations -----------------------------------------------------------------

def selfcheck(tasks: list[dict], projects: dict, verbose: bool) -> int:
    """For every task: the unsolved setup and each `solution.bad` must fail; the `solution`
    and each of `solution.also` (other right answers or changes) must pass. `verbose` says why
    each failing one fails. Returns the number of tasks not shown both ways."""
    failures = 0
    with tempfile.TemporaryDirectory(prefix="aria-tasks-selfcheck-") as tmp:
        base = Path(tmp)

        def attempt(task: dict, change: dict | None) -> list[str]:
            root = prepare(task, projects, base)
            before = snapshot(root)
            answer, code = "", 0
            if change is not None:
                apply_change(root, change, f"solution of {task['id']}")
                answer, code = change.get("answer", ""), change.get("exit", 0)
            return judge(task, answer, code, root, before, base)

        for task in tasks:
            sol = task.get("solution")
            wrong, why = [], []
            if sol is None:
                wrong.append("no solution to check against")
            else:
                unsolved = {"answer": sol["unsolved_answer"]} if "unsolved_answer" in sol else None
                problems = attempt(task, unsolved)
                if not problems:
                    wrong.append("the unsolved setup passes")
                elif verbose:
                    why.append("unsolved: " + "; ".join(problems))
                for i, bad in enumerate(sol.get("bad", [])):
                    problems = attempt(task, bad)
                    if not problems:
                        wrong.append(f"bad attempt {i + 1} passes: {bad}")
                    elif verbose:
                        why.append(f"bad {i + 1}: " + "; ".join(problems))
                problems = attempt(task, sol)
                if problems:
                    wrong.append("the solution fails: " + "; ".join(problems))
                for other in sol.get("also", []):
                    change = {**sol, "answer": other} if isinstance(other, str) else other
                    problems = attempt(task, change)
                    if problems:
                        wrong.append(f"the other right attempt {other!r} fails: "
                                     + "; ".join(problems))
            if wrong:
                print(f"  {task['id']:<36} FAILED")
                for w in wrong:
                    print(f"      {w}")
            else:
                bads, also = len(sol.get("bad", [])), len(sol.get("also", []))
                print(f"  {task['id']:<36} ok: unsolved and {bads} bad attempt"
                      f"{'s' if bads != 1 else ''} fail, the solution"
                      f"{f' and {also} other right attempt' if also else ''}"
                      f"{'s' if also > 1 else ''} pass"
                      f"{'es' if not also else ''}")
                for w in why:
                    print(f"      {w}")
            failures += bool(wrong)
    print(f"\nselfcheck: {len(tasks) - failures}/{len(tasks)} tasks' expectations proven "
          f"({sum(t['kind'] == 'simple' for t in tasks)} simple, "
          f"{sum(t['kind'] == 'project' for t in tasks)} project)")
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aria", default=str(REPO / "target" / "release" / "aria"))
    ap.add_argument("--model", action="append", help="catalog name (repeatable); default: every pulled chat model")
    ap.add_argument("--models-dir", type=Path, default=default_models_dir())
    ap.add_argument("--only", action="append", help="task id (repeatable)")
    ap.add_argument("--kind", choices=KINDS, help="only the tasks of this kind")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per task")
    ap.add_argument("--json", action="store_true", help="print the per-task rows as JSON too")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--cold", action="store_true",
                    help="no saved prompt state between tasks (each run computes its system turn)")
    ap.add_argument("--selfcheck", action="store_true",
                    help="run no model: show that each task's expectations fail unsolved and "
                         "pass with the task's solution")
    args = ap.parse_args()
    tasks, projects = load_tasks()
    if args.only:
        unknown = set(args.only) - {t["id"] for t in tasks}
        if unknown:
            print(f"no such task: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        tasks = [t for t in tasks if t["id"] in args.only]
    if args.kind:
        tasks = [t for t in tasks if t["kind"] == args.kind]
    runnable = []
    for t in tasks:
        missing = missing_programs(t)
        if missing:
            print(f"{t['id']}: skipped, it needs {', '.join(missing)}", file=sys.stderr)
        else:
            runnable.append(t)
    tasks = runnable
    if args.selfcheck:
        return 1 if selfcheck(tasks, projects, args.verbose) else 0
    if not Path(args.aria).exists() and not shutil.which(args.aria):
        print(f"no aria binary at {args.aria}: build it with `cargo build --release`", file=sys.stderr)
        return 2
    models = args.model or pulled_chat_models(args.aria, args.models_dir)
    if not models:
        print(f"no chat model is pulled in {args.models_dir}: run `aria model pull`", file=sys.stderr)
        return 2
    for model in models:
        if not (args.models_dir / model).is_dir():
            print(f"\n{model}: not pulled in {args.models_dir} (`aria model pull {model}`); skipped")
            continue
        kinds = ", ".join(f"{sum(t['kind'] == k for t in tasks)} {k}" for k in KINDS)
        print(f"\n{model}: {len(tasks)} tasks ({kinds})")
        with tempfile.TemporaryDirectory(prefix="aria-tasks-") as base:
            rows = [
                run_task(args.aria, model, t, projects, args.models_dir, args.timeout,
                         args.verbose, Path(base), args.cold)
                for t in tasks
            ]
        report(model, rows)
        if args.json:
            print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
