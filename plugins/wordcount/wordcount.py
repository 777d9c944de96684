"""wordcount, an example ARIA plugin: counts the lines, words and characters of a text file.

ARIA runs it in its sandbox with one JSON request on stdin,
{"tool": "word_count", "arguments": {"path": ...}, "roots": [...]}, and reads one JSON answer
from stdout: {"result": {...}} or {"error": "message"}.
"""

import json
import os
import sys


def answer(value):
    sys.stdout.write(json.dumps(value) + "\n")


def main():
    request = json.loads(sys.stdin.readline())
    if request.get("tool") != "word_count":
        return answer({"error": f"this plugin has no tool {request.get('tool')!r}"})
    given = request["arguments"]["path"]
    roots = [os.path.realpath(r) for r in request.get("roots", [])]
    if not roots:
        return answer({"error": "no root to read in"})
    path = os.path.realpath(given if os.path.isabs(given) else os.path.join(roots[0], given))
    if not any(path == r or path.startswith(r + os.sep) for r in roots):
        return answer({"error": f"{given} is outside the roots ({', '.join(roots)})"})
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        return answer({"error": f"cannot read {given}: {e.strerror}"})
    answer({"result": {"path": given, "lines": text.count("\n") + (1 if text and not text.endswith("\n") else 0),
                       "words": len(text.split()), "characters": len(text)}})


if __name__ == "__main__":
    main()
