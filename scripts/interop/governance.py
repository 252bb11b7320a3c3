#!/usr/bin/env python3
"""Python side of scripts/interop-governance.sh: drives the official AdCP
Python SDK (package `adcp`, module `adcp.governance`) for the governance
token interop check. Run inside the venv the script creates.

Subcommands (all files are JSON; every result goes to stdout):

  version                      the installed `adcp` version
  public-jwks VECTORS OUT      writes {"keys": [test key minus its private part]}
  private-jwk VECTORS OUT      writes the test key (with `_private_d_for_test_only`)
  issue VECTORS CLAIMS PAYLOAD issue_governance_authorization() from the same
                               claims file `adcp-sig gov sign` reads; prints the token
  verify VECTORS TOKEN PAYLOAD --task --audience --caller --issuer --phase
         --amount --currency --now [--media-buy-id] [--subject] [--revocation-list FILE]
                               verify_governance_authorization(); prints
                               {"ok", "error_code", "message"}; exit 0 / 1
  hash PAYLOAD...              compute_governed_payload_hash(); one hash a line
                               (`error:<exception>` when the SDK refuses one)
  sign-revocation-list VECTORS LIST
                               the list as a flattened JWS (typ
                               adcp-gov-revocation+jws) signed with the test key
  claim TOKEN NAME             one claim of a token (unverified; JSON)
  tamper TOKEN claims|signature
                               the token with one byte changed: in the decoded
                               claims (the last byte of `jti`, re-encoded, so
                               only the signature can catch it) or in the
                               signature (its first byte)

VECTORS is the suite's governance/governance-authorization.json: the test
key and nothing else is read from it. The key is TEST-ONLY material.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
from datetime import datetime
from importlib.metadata import version
from urllib.parse import urlsplit

# The SDK is imported where it is used: importing `adcp` takes seconds,
# and `claim` / `tamper` need only the standard library.

TEST_D = "_private_d_for_test_only"


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def load(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def test_key(vectors: str) -> dict:
    return load(vectors)["signed_jws"]["test_key"]


def public_jwk(vectors: str) -> dict:
    key = dict(test_key(vectors))
    key.pop(TEST_D, None)
    key.pop("$comment", None)
    return key


def cmd_issue(a) -> int:
    """Maps the claims object (`adcp-sig gov sign` format) onto the SDK's
    keyword arguments, so both sides issue from one description."""
    from adcp.governance import issue_governance_authorization
    from adcp.signing.crypto import private_key_from_jwk

    key = test_key(a.vectors)
    c = load(a.claims)
    token = issue_governance_authorization(
        private_key=private_key_from_jwk(key, d_field=TEST_D),
        key_id=key["kid"],
        alg="EdDSA",
        issuer=c["iss"],
        subject=c["sub"],
        plan_hash=c["plan_hash"],
        audience=c["aud"],
        caller=c["caller"],
        check_id=c["check_id"],
        task=c["authorized_task"],
        payload=load(a.payload),
        authorized_commitment=c["authorized_commitment"],
        issued_at=c["iat"],
        not_before=c.get("nbf"),
        expires_at=c["exp"],
        jti=c["jti"],
        phase=c["phase"],
        media_buy_id=c.get("media_buy_id"),
    )
    print(token)
    return 0


class ListResolver:
    """A GovernanceRevocationResolver over a bare revocation list file (the
    JWS payload form `adcp-sig gov verify --revocation-list` also reads).
    The SDK takes revocation status through this callback and does not
    parse lists itself; it wants `issuer` as the origin of `iss`."""

    def __init__(self, path: str) -> None:
        self.doc = load(path)

    def resolve(self, issuer: str, kid: str, jti: str):
        from adcp.governance import GovernanceRevocationStatus

        d = self.doc
        origin = urlsplit(issuer)
        if d.get("issuer") != f"{origin.scheme}://{origin.netloc}":
            raise ValueError("revocation list of another issuer")
        next_update = datetime.fromisoformat(d["next_update"].replace("Z", "+00:00")).timestamp()
        return GovernanceRevocationStatus(
            issuer=d["issuer"],
            key_revoked=kid in d.get("revoked_kids", []),
            jti_revoked=jti in d.get("revoked_jtis", []),
            next_update=next_update,
        )


def cmd_verify(a) -> int:
    from adcp.governance import InMemoryGovernanceReplayStore, verify_governance_authorization
    from adcp.signing.jwks import StaticJwksResolver

    result = asyncio.run(
        verify_governance_authorization(
            token=open(a.token, encoding="utf-8").read().strip(),
            expected_issuer=a.issuer,
            expected_audience=a.audience,
            authenticated_caller=a.caller,
            expected_task=a.task,
            payload=load(a.payload),
            actual_commitment={"amount": float(a.amount), "currency": a.currency},
            jwks=StaticJwksResolver({"keys": [public_jwk(a.vectors)]}),
            replay_store=InMemoryGovernanceReplayStore(),
            expected_phase=a.phase,
            expected_subject=a.subject,
            expected_media_buy_id=a.media_buy_id,
            revocation_resolver=ListResolver(a.revocation_list) if a.revocation_list else None,
            now=lambda: float(a.now),
        )
    )
    if result.ok:
        print(json.dumps({"ok": True, "error_code": None, "message": None}))
        return 0
    print(json.dumps({"ok": False, "error_code": result.error, "message": result.message}))
    return 1


def cmd_sign_revocation_list(a) -> int:
    from adcp.signing.crypto import ALG_ED25519, private_key_from_jwk, sign_signature_base

    key = test_key(a.vectors)
    header = {"alg": "EdDSA", "kid": key["kid"], "typ": "adcp-gov-revocation+jws"}
    protected = b64url_encode(json.dumps(header, separators=(",", ":")).encode())
    payload = b64url_encode(json.dumps(load(a.list), separators=(",", ":")).encode())
    signature = sign_signature_base(
        alg=ALG_ED25519,
        private_key=private_key_from_jwk(key, d_field=TEST_D),
        signature_base=f"{protected}.{payload}".encode("ascii"),
    )
    print(json.dumps({"protected": protected, "payload": payload, "signature": b64url_encode(signature)}))
    return 0


def segments(path: str) -> list[str]:
    return open(path, encoding="utf-8").read().strip().split(".")


def cmd_claim(a) -> int:
    claims = json.loads(b64url_decode(segments(a.token)[1]))
    print(json.dumps(claims.get(a.name)))
    return 0


def cmd_tamper(a) -> int:
    header, claims, signature = segments(a.token)
    if a.where == "claims":
        raw = b64url_decode(claims)
        jti = json.loads(raw)["jti"].encode()
        at = raw.index(b'"jti":"' + jti + b'"') + len(b'"jti":"') + len(jti) - 1
        changed = b"x" if raw[at : at + 1] != b"x" else b"y"
        claims = b64url_encode(raw[:at] + changed + raw[at + 1 :])
    else:
        raw = bytearray(b64url_decode(signature))
        raw[0] ^= 0x01
        signature = b64url_encode(bytes(raw))
    print(f"{header}.{claims}.{signature}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("version")
    for name in ("public-jwks", "private-jwk"):
        s = sub.add_parser(name)
        s.add_argument("vectors")
        s.add_argument("out")
    s = sub.add_parser("issue")
    s.add_argument("vectors")
    s.add_argument("claims")
    s.add_argument("payload")
    s = sub.add_parser("verify")
    s.add_argument("vectors")
    s.add_argument("token", help="a file holding the compact token")
    s.add_argument("payload")
    for flag in ("task", "audience", "caller", "issuer", "phase", "amount", "currency", "now"):
        s.add_argument(f"--{flag}", required=True)
    s.add_argument("--media-buy-id")
    s.add_argument("--subject", help="the prior opaque sub (the SDK requires it for execution phases)")
    s.add_argument("--revocation-list")
    s = sub.add_parser("hash")
    s.add_argument("payload", nargs="+")
    s = sub.add_parser("sign-revocation-list")
    s.add_argument("vectors")
    s.add_argument("list")
    s = sub.add_parser("claim")
    s.add_argument("token", help="a file holding the compact token")
    s.add_argument("name")
    s = sub.add_parser("tamper")
    s.add_argument("token", help="a file holding the compact token")
    s.add_argument("where", choices=["claims", "signature"])
    a = p.parse_args()

    if a.cmd == "version":
        print(version("adcp"))
        return 0
    if a.cmd in ("public-jwks", "private-jwk"):
        out = {"keys": [public_jwk(a.vectors)]} if a.cmd == "public-jwks" else test_key(a.vectors)
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(out, f)
        return 0
    if a.cmd == "issue":
        return cmd_issue(a)
    if a.cmd == "verify":
        return cmd_verify(a)
    if a.cmd == "hash":
        from adcp.governance import compute_governed_payload_hash

        for path in a.payload:
            try:
                print(compute_governed_payload_hash(load(path)))
            except Exception as e:  # e.g. rfc8785.IntegerDomainError
                print(f"error:{type(e).__name__}")
        return 0
    if a.cmd == "claim":
        return cmd_claim(a)
    if a.cmd == "tamper":
        return cmd_tamper(a)
    return cmd_sign_revocation_list(a)


if __name__ == "__main__":
    sys.exit(main())
