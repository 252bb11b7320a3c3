"""A minimal seller verifying signed AdCP requests with the official Python
SDK (`adcp.signing.verify_request_signature`), on `http.server`.

Usage: requests_verify.py JWKS_JSON

Trusts the keys in JWKS_JSON (StaticJwksResolver), advertises the AdCP 3.2
profile with `covers_content_digest: "required"` and `required_for:
["create_media_buy"]`, and reads the operation from the MCP `tools/call`
body. A verified request is answered 200 with a JSON-RPC result whose
structuredContent holds the verified keyid; a refused one 401 with the
SDK's `WWW-Authenticate: Signature error="<code>"`. Listens on a free
loopback port and prints "listening on http://127.0.0.1:PORT".
"""

import dataclasses
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

from adcp.signing import (
    SignatureVerificationError,
    StaticJwksResolver,
    VerifierCapability,
    VerifyOptions,
    unauthorized_response_headers,
    verify_request_signature,
)

# One options instance for the server's life: its replay store is shared by
# every request (a new VerifyOptions would start an empty one).
OPTIONS = VerifyOptions(
    now=0,
    operation="",
    capability=VerifierCapability(
        covers_content_digest="required",
        required_for=frozenset({"create_media_buy"}),
    ),
    jwks_resolver=StaticJwksResolver(json.load(open(sys.argv[1]))),
    signing_profile_version="3.2",
)


def operation(body: bytes) -> str:
    """The MCP tool name of a JSON-RPC `tools/call` (else the method)."""
    try:
        message = json.loads(body)
        if message.get("method") == "tools/call":
            return message["params"]["name"]
        return message.get("method", "")
    except (ValueError, KeyError, TypeError, AttributeError):
        return ""


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        url = f"http://{self.headers['Host']}{self.path}"
        options = dataclasses.replace(OPTIONS, now=time.time(), operation=operation(body))
        try:
            signer = verify_request_signature(
                method="POST",
                url=url,
                headers=dict(self.headers.items()),
                body=body,
                options=options,
                raw_headers=[(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()],
            )
        except SignatureVerificationError as e:
            print(f"refused: {e.code}: {e}", flush=True)
            self.answer(401, {"error": e.code}, unauthorized_response_headers(e))
            return
        print(f"verified keyid={signer.key_id}", flush=True)
        rpc_id = signer.parsed_body.get("id") if isinstance(signer.parsed_body, dict) else None
        result = {"structuredContent": {"verified_keyid": signer.key_id, "body_authenticated": signer.body_authenticated}}
        self.answer(200, {"jsonrpc": "2.0", "id": rpc_id, "result": result}, {})

    def answer(self, status: int, document: dict, headers: dict) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
