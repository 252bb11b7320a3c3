"""The seller's own server behind the gateway (direction A): answers every
POST 200 with a JSON-RPC result and appends one JSON line per request to
RECORD_FILE: the JSON-RPC id and the gateway's identity headers.

Usage: upstream.py RECORD_FILE   (prints "listening on http://127.0.0.1:PORT")
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            rpc_id = json.loads(body).get("id")
        except (ValueError, AttributeError):
            rpc_id = None
        record = {
            "id": rpc_id,
            "verified_keyid": self.headers.get("X-Adcp-Verified-Keyid"),
            "verified_agent": self.headers.get("X-Adcp-Verified-Agent"),
            "signature_state": self.headers.get("X-Adcp-Signature"),
        }
        with open(sys.argv[1], "a") as f:
            f.write(json.dumps(record) + "\n")
        data = json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": {"structuredContent": {"media_buy_id": "mb-1"}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
