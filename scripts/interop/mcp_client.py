"""An MCP client on the official Python SDK (PyPI `mcp`), Streamable HTTP,
run against URL (the gateway, or the server itself for comparison).

MODE is `legacy` (the initialize handshake: 2025-11-25, a session, the GET
stream, DELETE on close) or a per-request revision (`2026-07-28`). With
--sign, every `tools/call` POST is signed (AdCP 3.2 request profile) by
`ADCP_SIG sign --profile request` with KEY_FILE, in an HTTP request hook:
the MCP client itself is unchanged.

The session: connect; tools/list; a signed tools/call of create_media_buy
answered as an event stream (progress notifications, then the result); the
same call unsigned; with `legacy`, `announce`, whose notification comes on
the GET stream; then close (DELETE of the session with `legacy`).

Usage: mcp_client.py URL MODE [--sign ADCP_SIG KEY_FILE]
Prints one JSON line: {"protocol_version", "tools", "progress", "result",
"elapsed", "list_changed", "unsigned_call", "error"}.
"""

import json
import sys
import time

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

signing = {"on": False}


def main() -> None:
    url, mode = sys.argv[1], sys.argv[2]
    sign = sys.argv[3:6] if len(sys.argv) > 3 and sys.argv[3] == "--sign" else None
    out = {"protocol_version": None, "tools": None, "progress": 0, "result": None, "elapsed": None,
           "list_changed": None, "unsigned_call": None, "error": None}
    try:
        anyio.run(session, url, mode, sign, out)
    except BaseException as e:  # noqa: BLE001 - reported, not raised
        out["error"] = describe(e)
    print(json.dumps(out), flush=True)


def describe(e: BaseException) -> str:
    inner = getattr(e, "exceptions", None)
    if inner:
        return "; ".join(describe(x) for x in inner)
    return f"{type(e).__name__}: {e}"


def payload(result) -> dict:
    """A tool result's JSON: its structured content, else its first text."""
    if result.is_error:
        return {"error": str(result.content)}
    if result.structured_content is not None:
        return result.structured_content
    try:
        return json.loads(result.content[0].text)
    except (IndexError, AttributeError, ValueError):
        return {"content": str(result.content)}


async def session(url: str, mode: str, sign: list[str] | None, out: dict) -> None:
    async def sign_hook(request: httpx2.Request) -> None:
        if not signing["on"] or request.method != "POST":
            return
        body = request.read()
        try:
            if json.loads(body).get("method") != "tools/call":
                return
        except ValueError:
            return
        _, adcp_sig, key = sign
        done = await anyio.run_process([adcp_sig, "sign", "--profile", "request", "--url", str(request.url),
                                        "--body", body.decode(), "--key", key,
                                        "--content-type", request.headers.get("content-type", "application/json")])
        signed = json.loads(done.stdout)
        for name in ("Signature", "Signature-Input", "Content-Digest"):
            request.headers[name] = signed["headers"][name]

    hooks = {"request": [sign_hook]} if sign else {}
    list_changed = anyio.Event()

    async def on_message(message) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/tools/list_changed":
            list_changed.set()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        out["progress"] += 1

    async with httpx2.AsyncClient(event_hooks=hooks, timeout=httpx2.Timeout(30.0, read=120.0)) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, message_handler=on_message) as client:
            out["protocol_version"] = client.protocol_version
            out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
            signing["on"] = sign is not None
            started = time.monotonic()
            result = await client.call_tool("create_media_buy", {"idempotency_key": "k-1"},
                                            progress_callback=on_progress)
            out["elapsed"] = round(time.monotonic() - started, 2)
            out["result"] = payload(result)
            signing["on"] = False
            try:
                unsigned = await client.call_tool("create_media_buy", {"idempotency_key": "k-2"})
                out["unsigned_call"] = "error result" if unsigned.is_error else "accepted"
            except Exception as e:  # noqa: BLE001 - the expected refusal
                out["unsigned_call"] = f"refused: {describe(e)}"
            if mode == "legacy":
                await client.call_tool("announce", {})
                with anyio.move_on_after(10):
                    await list_changed.wait()
                out["list_changed"] = list_changed.is_set()


if __name__ == "__main__":
    main()
