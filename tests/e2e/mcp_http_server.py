#!/usr/bin/env python3
"""A Streamable HTTP MCP server built on the official `mcp` package, for ARIA's client tests.

Serves on 127.0.0.1:PORT/mcp (the port is argv[1]) and prints "ready" once it listens. It
wants the header `X-Test-Key` to equal $MCP_TEST_KEY when that is set (to show that ARIA sends
headers from environment variables). Tools:
  add(a, b)        -> the sum, as text
  shout(text)      -> the text in capitals
  crash()          -> the server process exits in the middle of the call
  hang(seconds)    -> sleeps (to see ARIA's timeout)
  flood(size)      -> `size` characters of text (to see ARIA's cap)
  wrong_shape()    -> structured content that breaks its own output schema
and one resource (notes://today) and one prompt (review, with the argument `language`).
"""

from __future__ import annotations

import os
import sys
import time

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import JSONResponse

server = MCPServer("e2e-http-server")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


@server.tool()
def crash() -> str:
    """Exit the server in the middle of the call."""
    os._exit(3)


@server.tool()
def hang(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "woke up"


@server.tool()
def flood(size: int) -> str:
    """Answer with `size` characters."""
    return "x" * size


@server.tool(structured_output=True)
def wrong_shape() -> dict[str, int]:
    """Structured content whose values are not what its schema says."""
    return {"count": "not a number"}  # type: ignore[dict-item]


@server.resource("notes://today")
def today() -> str:
    """Today's notes."""
    return "Buy milk. Call the plumber about the kitchen tap."


@server.prompt()
def review(language: str) -> str:
    """Ask for a code review in a language."""
    return f"Review this change carefully; answer in {language}."


class NeedsKey(BaseHTTPMiddleware):
    async def dispatch(self, request, call_next):
        want = os.environ.get("MCP_TEST_KEY")
        if want and request.headers.get("x-test-key") != want:
            return JSONResponse({"error": "missing or wrong X-Test-Key"}, status_code=401)
        return await call_next(request)


def main() -> None:
    port = int(sys.argv[1])
    app = server.streamable_http_app()
    app.add_middleware(NeedsKey)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    print("ready", flush=True)
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
