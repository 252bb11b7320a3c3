"""An MCP server on the official Python SDK (PyPI `mcp`), Streamable HTTP
at /mcp, stateful (sessions, the GET stream) for the handshake-era
revisions and per-request for 2026-07-28, whichever the client speaks.

Tools:
  create_media_buy, get_products  report progress STEPS times, STEP_SECONDS
      apart, then answer: the answer is an event stream lasting longer
      than the gateway's --upstream-timeout.
  announce  sends notifications/tools/list_changed outside any request: on
      the session's GET stream (handshake-era revisions).

Usage: mcp_server.py   (prints "listening on http://127.0.0.1:PORT")
"""

import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

STEPS = 3
STEP_SECONDS = 1.0

server = MCPServer("interop-seller", log_level="WARNING")


async def stream_progress(ctx: Context) -> None:
    for step in range(STEPS):
        await ctx.report_progress(step + 1, STEPS, f"step {step + 1}")
        await anyio.sleep(STEP_SECONDS)


@server.tool()
async def create_media_buy(idempotency_key: str, ctx: Context) -> dict:
    """Creates a media buy (AdCP: must be signed)."""
    await stream_progress(ctx)
    return {"media_buy_id": f"mb-{idempotency_key}", "status": "active"}


@server.tool()
async def get_products(brief: str, ctx: Context) -> dict:
    """Lists products (AdCP: signing not required)."""
    await stream_progress(ctx)
    return {"products": [{"product_id": "p-1", "name": brief}]}


@server.tool()
async def announce(ctx: Context) -> str:
    """Sends notifications/tools/list_changed on the session's GET stream."""
    await ctx.session.send_tool_list_changed()
    return "announced"


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
