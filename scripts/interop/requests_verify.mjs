// A minimal seller verifying signed AdCP requests with the official JS SDK
// (`@adcp/sdk`, createExpressVerifier) on node:http.
//
// Usage: node requests_verify.mjs JWKS_JSON
//
// As requests_verify.py: trusts JWKS_JSON (StaticJwksResolver), requires
// signatures for create_media_buy with content-digest covered, reads the
// operation from the MCP `tools/call` body; 200 with the verified keyid in
// structuredContent, or the middleware's 401. The middleware is written
// for Express; node:http gets the two things it needs from Express (the
// raw body and `res.status().set().json()`) from a few lines below rather
// than installing Express.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(`${process.cwd()}/`);
const { createExpressVerifier, StaticJwksResolver } = require('@adcp/sdk/signing/server');

const jwks = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const verify = createExpressVerifier({
  capability: { supported: true, covers_content_digest: 'required', required_for: ['create_media_buy'] },
  jwks: new StaticJwksResolver(jwks.keys),
  // The MCP tool name of a JSON-RPC tools/call (else the method).
  resolveOperation: (req) => {
    try {
      const message = JSON.parse(req.rawBody);
      return message.method === 'tools/call' ? message.params?.name : message.method;
    } catch {
      return undefined;
    }
  },
  // Plain HTTP on loopback: the URL the client signed.
  getUrl: (req) => `http://${req.headers.host}${req.url}`,
});

function send(res, status, document, headers = {}) {
  res.writeHead(status, { ...headers, 'Content-Type': 'application/json' });
  res.end(JSON.stringify(document));
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    req.rawBody = Buffer.concat(chunks).toString('utf8');
    const expressRes = {
      status: (code) => ({ set: (k, v) => ({ json: (body) => {
        console.log(`refused: ${JSON.stringify(body)}`);
        send(res, code, body, { [k]: v });
      } }) }),
    };
    verify(req, expressRes, (err) => {
      if (err) return send(res, 500, { error: String(err) });
      const signer = req.verifiedSigner;
      console.log(`verified keyid=${signer?.keyid}`);
      const id = JSON.parse(req.rawBody).id ?? null;
      send(res, 200, { jsonrpc: '2.0', id, result: { structuredContent: { verified_keyid: signer?.keyid ?? null } } });
    });
  });
});
server.listen(0, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
