"""A buyer's webhook receiver on the official Python SDK (PyPI `adcp`,
`adcp.webhooks.WebhookReceiver`, as in the SDK's "Signed webhooks: receiver
quickstart"), for scripts/bench-receivers.sh.

Usage: python webhook_receiver.py JWKS_JSON UPSTREAM_URL

One process, one asyncio loop (uvicorn, which the SDK installs, running a
bare ASGI app). Per POST: `receiver.receive` verifies the RFC 9421
signature (the SDK's webhook checklist against JWKS_JSON through
StaticJwksResolver, its default in-memory replay store), parses the MCP
payload and claims its idempotency key (WebhookDedupStore on MemoryBackend);
a fresh claim is posted to UPSTREAM_URL (httpx, keep-alive; the verified
sender and the idempotency key as headers, as the gateway forwards them) and
acknowledged, then answered 200 (502 and released when the upstream fails). Any other
outcome is answered with the SDK's recommended status and headers (401 with
`WWW-Authenticate` for a signature refusal; 200 for a completed duplicate).

Prints `listening on http://127.0.0.1:PORT` once bound.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys

import httpx
import uvicorn

from adcp.signing import StaticJwksResolver
from adcp.webhooks import (
    MemoryBackend,
    WebhookDedupStore,
    WebhookReceiver,
    WebhookReceiverConfig,
    WebhookVerifyOptions,
)


def main() -> None:
    jwks_path, upstream = sys.argv[1], sys.argv[2]
    with open(jwks_path, encoding="utf-8") as f:
        jwks = json.load(f)
    receiver = WebhookReceiver(
        config=WebhookReceiverConfig(
            verify_options=WebhookVerifyOptions(jwks_resolver=StaticJwksResolver(jwks)),
            dedup=WebhookDedupStore(MemoryBackend(), ttl_seconds=86400),
            receiver_scope="bench-receiver",
            publisher_scope_for=lambda _signer: "bench-seller",
        ),
    )
    client = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=64))

    async def respond(send, status: int, headers=()) -> None:
        raw = [(k.lower().encode(), v.encode()) for k, v in headers]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": b""})

    async def app(scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        if scope["method"] != "POST":
            await respond(send, 405)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        # Plain HTTP on loopback: the URL the seller signed.
        url = f"http://{headers.get('host', '')}{scope['raw_path'].decode('latin-1')}"
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        outcome = await receiver.receive(method="POST", url=url, headers=headers, body=b"".join(chunks))
        if outcome.http_status is not None:
            await respond(send, outcome.http_status, outcome.response_headers.items())
            return
        try:
            # The verified identity and the event's key travel as headers,
            # as the gateway forwards them (the sink counts events by key).
            forwarded = {
                "content-type": "application/json",
                "x-adcp-verified-agent": outcome.sender_identity or "",
                "x-adcp-idempotency-key": outcome.idempotency_key or "",
            }
            answer = await client.post(upstream, content=b"".join(chunks), headers=forwarded)
            ok = answer.is_success
        except httpx.HTTPError:
            ok = False
        if not ok:
            await receiver.release(outcome)
            await respond(send, 502)
            return
        await receiver.acknowledge(outcome)
        await respond(send, 200)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=30)
    server = uvicorn.Server(config)

    async def run() -> None:
        print(f"listening on http://127.0.0.1:{port}", flush=True)
        await server.serve(sockets=[sock])

    asyncio.run(run())


if __name__ == "__main__":
    main()
