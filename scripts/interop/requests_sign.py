"""Signs one MCP `tools/call` with the official Python SDK (`adcp.signing`)
and sends it; prints one JSON line: {"status", "www_authenticate", "body"}.

Usage: requests_sign.py KEYS_JSON KID URL ARGUMENTS_JSON ID [--tamper]

KEYS_JSON is the suite's request-signing/keys.json (the private scalar is
read from `_private_d_for_test_only`); ARGUMENTS_JSON the operation's
arguments; ID the JSON-RPC id (lets the upstream's record be matched).
--tamper changes the body after signing (the signature still covers the
original Content-Digest), which a verifier must refuse.
"""

import json
import sys
import urllib.error
import urllib.request

from adcp.signing import sign_request
from adcp.signing.crypto import alg_for_jwk, private_key_from_jwk


def main() -> None:
    keys_path, kid, url, args_path, rpc_id = sys.argv[1:6]
    tamper = "--tamper" in sys.argv[6:]
    jwk = next(k for k in json.load(open(keys_path))["keys"] if k["kid"] == kid)
    arguments = json.load(open(args_path))
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": rpc_id,
            "method": "tools/call",
            "params": {"name": "create_media_buy", "arguments": arguments},
        }
    ).encode()
    headers = {"Content-Type": "application/json"}
    # The AdCP 3.2 request profile: standard base64, content-digest covered.
    signed = sign_request(
        method="POST",
        url=url,
        headers=headers,
        body=body,
        private_key=private_key_from_jwk(jwk, d_field="_private_d_for_test_only"),
        key_id=kid,
        alg=alg_for_jwk(jwk),
        signing_profile_version="3.2",
    )
    headers.update(signed.as_dict())
    if tamper:
        body = body.replace(b'"budget": 5000', b'"budget": 9000')
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, answer, www = response.status, response.read(), None
    except urllib.error.HTTPError as e:
        status, answer, www = e.code, e.read(), e.headers.get("WWW-Authenticate")
    print(json.dumps({"status": status, "www_authenticate": www, "body": answer.decode("utf-8", "replace")}))


main()
