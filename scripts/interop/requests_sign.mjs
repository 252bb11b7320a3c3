// Signs one MCP `tools/call` with the official JS SDK (`@adcp/sdk`,
// signRequest) and sends it; prints one JSON line:
// {"status", "www_authenticate", "body"}.
//
// Usage: node requests_sign.mjs KEYS_JSON KID URL ARGUMENTS_JSON ID [--tamper] [--standard-base64] [--no-digest]
//
// As requests_sign.py. --standard-base64 re-encodes the `Signature` value
// (same bytes) from the unpadded base64url the SDK emits (the AdCP 3.0/3.1
// encoding) to the RFC 8941 standard base64 the AdCP 3.2 profile requires
// (see docs/interop.md). --no-digest leaves content-digest out of the
// signature (what a 3.0/3.1 signer may do for an endpoint advertising
// covers_content_digest "either" or "forbidden").
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

// Resolved from the current directory's node_modules (the script's temp dir).
const require = createRequire(`${process.cwd()}/`);
const { signRequest } = require('@adcp/sdk/signing/client');

const [keysPath, kid, url, argsPath, rpcId, ...flags] = process.argv.slice(2);
const jwk = JSON.parse(readFileSync(keysPath, 'utf8')).keys.find((k) => k.kid === kid);
const arguments_ = JSON.parse(readFileSync(argsPath, 'utf8'));
const body = JSON.stringify({
  jsonrpc: '2.0',
  id: rpcId,
  method: 'tools/call',
  params: { name: 'create_media_buy', arguments: arguments_ },
});
const headers = { 'Content-Type': 'application/json' };
const signed = signRequest(
  { method: 'POST', url, headers, body },
  {
    keyid: kid,
    alg: jwk.crv === 'Ed25519' ? 'ed25519' : 'ecdsa-p256-sha256',
    privateKey: { ...jwk, d: jwk._private_d_for_test_only },
  },
  // The SDK covers content-digest only when asked; the 3.2 profile (and a
  // capability with covers_content_digest "required") needs it.
  { coverContentDigest: !flags.includes('--no-digest') },
);
const sent = { ...headers, ...signed.headers };
if (flags.includes('--standard-base64')) {
  sent.Signature = sent.Signature.replace(/:([A-Za-z0-9_-]+=*):/, (_, v) =>
    `:${Buffer.from(v, 'base64url').toString('base64')}:`);
}
const sentBody = flags.includes('--tamper') ? body.replace('"budget":5000', '"budget":9000') : body;
const response = await fetch(url, { method: 'POST', headers: sent, body: sentBody });
console.log(JSON.stringify({
  status: response.status,
  www_authenticate: response.headers.get('www-authenticate'),
  body: await response.text(),
}));
