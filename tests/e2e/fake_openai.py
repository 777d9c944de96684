#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat-completions server for end-to-end tests (stdlib only).

It listens on 127.0.0.1 (port 0: the system picks one, see `.port`) and answers each
`POST /v1/chat/completions` with the next turn of a script, streamed in OpenAI's SSE chunk format
when the request says `"stream": true` and as one JSON object otherwise. `GET /v1/models` lists
one model. When the script runs out it answers "(script ended)".

A turn is one of:
  "plain text"                                         -> a text answer
  {"text": "…", "chunk": 8, "delay": 0.0}              -> a text answer in chunks of `chunk`
                                                          characters, `delay` seconds apart
  {"tool_calls": [{"name": "file_write",               -> tool calls (arguments: an object, or
                   "arguments": {"path": "a.txt"}}]}      a JSON string sent as it is)
A turn may carry both `text` and `tool_calls`.

Side requests that ARIA makes on its own are answered without using up a turn, so a script only
describes the conversation: memory extraction (a request offering the `record_memories` tool)
gets an empty list of memories. Every request body is kept in `.requests` (and the side ones in
`.side_requests`) so tests can assert on what ARIA sent.

Use it from Python:
    server = FakeOpenAI(["Hello!"]).start(); ...; server.stop()
or from a shell (prints the port, serves until interrupted):
    python3 tests/e2e/fake_openai.py SCRIPT.json [--port N]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "scripted"
SCRIPT_ENDED = "(script ended)"
EXTRACTION_TOOL = "record_memories"


def normalise_turn(turn):
    """A script turn as a dict with `text`, `tool_calls`, `chunk` and `delay`."""
    if isinstance(turn, str):
        turn = {"text": turn}
    if not isinstance(turn, dict):
        raise ValueError(f"a script turn is a string or an object, not {turn!r}")
    calls = []
    for i, call in enumerate(turn.get("tool_calls") or []):
        args = call.get("arguments", {})
        if not isinstance(args, str):
            args = json.dumps(args)
        calls.append({"id": call.get("id") or f"call_{uuid.uuid4().hex[:12]}_{i}",
                      "name": call["name"], "arguments": args})
    return {"text": turn.get("text") or "", "tool_calls": calls,
            "chunk": max(1, int(turn.get("chunk", 8))), "delay": float(turn.get("delay", 0.0))}


class FakeOpenAI:
    """The server. `start()` returns self; `port` and `base_url` are set once started."""

    def __init__(self, script=None, host: str = "127.0.0.1", port: int = 0):
        self._lock = threading.Lock()
        self._turns: list = []
        self.requests: list = []
        self.side_requests: list = []
        self._host, self._want_port = host, port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None
        self.set_script(script or [])

    # -- script -----------------------------------------------------------------------------
    def set_script(self, script) -> None:
        """Replaces what is left of the script (and forgets the requests seen so far)."""
        turns = [normalise_turn(t) for t in script]
        with self._lock:
            self._turns = turns
            self.requests = []
            self.side_requests = []

    def remaining(self) -> int:
        with self._lock:
            return len(self._turns)

    def _next_turn(self, body: dict) -> dict:
        with self._lock:
            if is_side_request(body):
                self.side_requests.append(body)
                return side_answer(body)
            self.requests.append(body)
            if self._turns:
                return self._turns.pop(0)
        return normalise_turn(SCRIPT_ENDED)

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    def start(self) -> "FakeOpenAI":
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer((self._host, self._want_port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def is_side_request(body: dict) -> bool:
    """True for the requests ARIA makes besides the conversation (memory extraction)."""
    for tool in body.get("tools") or []:
        if (tool.get("function") or {}).get("name") == EXTRACTION_TOOL:
            return True
    return False


def side_answer(body: dict) -> dict:
    return normalise_turn({"tool_calls": [{"name": EXTRACTION_TOOL,
                                           "arguments": {"memories": []}}]})


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep test output quiet
        pass

    def _send_json(self, status: int, value) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": MODEL, "object": "model", "created": 0, "owned_by": "fake-openai"}]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}",
                                            "type": "invalid_request_error"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}",
                                            "type": "invalid_request_error"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError as e:
            self._send_json(400, {"error": {"message": f"not JSON: {e}",
                                            "type": "invalid_request_error"}})
            return
        turn = self.fake._next_turn(body)
        model = body.get("model") or MODEL
        if body.get("stream"):
            self._stream(turn, model, bool((body.get("stream_options") or {}).get("include_usage")))
        else:
            self._send_json(200, completion(turn, model))

    def _stream(self, turn: dict, model: str, include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for chunk in stream_chunks(turn, model, include_usage):
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                if turn["delay"] and chunk["choices"] and "content" in chunk["choices"][0]["delta"]:
                    time.sleep(turn["delay"])
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (a cancelled run): nothing to finish


def _usage(turn: dict) -> dict:
    out = max(1, len(turn["text"]) // 4 + 4 * len(turn["tool_calls"]))
    return {"prompt_tokens": 20, "completion_tokens": out, "total_tokens": 20 + out}


def stream_chunks(turn: dict, model: str, include_usage: bool):
    """The chunks of one streamed answer, as OpenAI sends them."""
    cid = f"chatcmpl-{uuid.uuid4().hex[:16]}"
    created = int(time.time())

    def chunk(delta, finish=None):
        return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    text, size = turn["text"], turn["chunk"]
    for i in range(0, len(text), size):
        yield chunk({"content": text[i:i + size]})
    for index, call in enumerate(turn["tool_calls"]):
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": call["name"], "arguments": ""}}]})
        args = call["arguments"]
        for i in range(0, len(args), 16):
            yield chunk({"tool_calls": [{"index": index,
                                         "function": {"arguments": args[i:i + 16]}}]})
    yield chunk({}, "tool_calls" if turn["tool_calls"] else "stop")
    if include_usage:
        yield {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
               "choices": [], "usage": _usage(turn)}


def completion(turn: dict, model: str) -> dict:
    """One non-streamed answer."""
    message = {"role": "assistant", "content": turn["text"] or None}
    if turn["tool_calls"]:
        message["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"]}}
                                 for c in turn["tool_calls"]]
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if turn["tool_calls"] else "stop"}],
            "usage": _usage(turn)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("script", help="a JSON file: a list of turns")
    parser.add_argument("--port", type=int, default=0, help="default: any free port")
    args = parser.parse_args(argv)
    with open(args.script, encoding="utf-8") as f:
        script = json.load(f)
    if not isinstance(script, list):
        print("the script must be a JSON list of turns", file=sys.stderr)
        return 2
    server = FakeOpenAI(script, port=args.port).start()
    print(server.port, flush=True)
    print(f"serving {len(script)} turn(s) at {server.base_url}", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
