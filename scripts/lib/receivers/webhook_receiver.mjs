// A buyer's webhook receiver on the official JS SDK (`@adcp/sdk`,
// createWebhookVerifier from `@adcp/sdk/signing/server`) and node:http, for
// scripts/bench-receivers.sh.
//
// Usage: node webhook_receiver.mjs JWKS_JSON UPSTREAM_URL [WORKERS]
//
// Per POST: the raw body is read, the SDK's webhook verifier runs its
// checklist (steps 1-13: headers, tag, window, components, key, purpose,
// revocation, signature, content-digest, replay insert) against the keys of
// JWKS_JSON (StaticJwksResolver), then the body is posted to UPSTREAM_URL
// (fetch, keep-alive) with the verified keyid and the payload's
// idempotency_key as headers (as the gateway forwards them), and the
// receiver answers 200, or 502 when the upstream does not answer 2xx. A refusal is 401 with `WWW-Authenticate: Signature
// error="<code>"` (the SDK's code), as the gateway answers.
//
// WORKERS=1 (default): one process, the SDK's default InMemoryReplayStore.
// WORKERS>1: a node:cluster of that many workers sharing one port; replay
// state must then be shared (the SDK: "Multi-replica deployments MUST pass
// an explicit replayStore"), so the workers use the SDK's
// PostgresReplayStore on DATABASE_URL (npm `pg`, installed beside the SDK)
// in a table of this run, created by the primary at start and dropped when
// it is stopped (SIGTERM).
//
// Prints `listening on http://127.0.0.1:PORT` once every worker listens.
import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(`${process.cwd()}/`);
const { createWebhookVerifier, StaticJwksResolver, PostgresReplayStore, getReplayStoreMigration } =
  require('@adcp/sdk/signing/server');

const [jwksPath, upstream, workersArg] = process.argv.slice(2);
const workers = Number(workersArg ?? 1);
// The primary names the table; its workers inherit the name.
const table = process.env.REPLAY_TABLE ?? `adcp_replay_bench_${process.pid}`;
process.env.REPLAY_TABLE = table;

function pool() {
  const { Pool } = require('pg');
  return new Pool({ connectionString: process.env.DATABASE_URL, max: 16 });
}

async function primary() {
  const db = pool();
  await db.query(getReplayStoreMigration(table));
  let listening = 0;
  cluster.on('listening', (_worker, address) => {
    listening += 1;
    if (listening === workers) console.log(`listening on http://127.0.0.1:${address.port}`);
  });
  cluster.on('exit', (worker, code) => {
    if (!stopping) {
      console.error(`worker ${worker.process.pid} exited (${code})`);
      process.exit(2);
    }
  });
  let stopping = false;
  process.on('SIGTERM', async () => {
    stopping = true;
    for (const worker of Object.values(cluster.workers)) worker.kill();
    await db.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
    await db.end();
    process.exit(0);
  });
  for (let i = 0; i < workers; i += 1) cluster.fork();
}

function serve(replayStore) {
  const jwks = JSON.parse(readFileSync(jwksPath, 'utf8'));
  const verify = createWebhookVerifier({
    jwks: new StaticJwksResolver(jwks.keys),
    ...(replayStore ? { replayStore } : {}),
  });
  const server = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verified;
      try {
        // Plain HTTP on loopback: the URL the seller signed.
        verified = await verify({ method: req.method, url: `http://${req.headers.host}${req.url}`, headers: req.headers, body });
      } catch (err) {
        const code = typeof err?.code === 'string' ? err.code : 'webhook_signature_invalid';
        res.writeHead(401, { 'WWW-Authenticate': `Signature error="${code}"`, 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: code }));
        return;
      }
      // The verified identity and the event's key travel as headers, as
      // the gateway forwards them (the sink counts events by the key).
      const headers = { 'Content-Type': 'application/json', 'X-Adcp-Verified-Keyid': verified.keyid };
      try {
        const key = JSON.parse(body).idempotency_key;
        if (typeof key === 'string') headers['X-Adcp-Idempotency-Key'] = key;
      } catch {
        // Not JSON: forwarded without a key.
      }
      try {
        const answer = await fetch(upstream, { method: 'POST', headers, body });
        await answer.arrayBuffer();
        res.writeHead(answer.ok ? 200 : 502).end();
      } catch {
        res.writeHead(502).end();
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  server.listen(workers > 1 ? Number(process.env.PORT ?? 0) : 0, '127.0.0.1', () => {
    if (workers === 1) console.log(`listening on http://127.0.0.1:${server.address().port}`);
  });
}

if (workers > 1 && cluster.isPrimary) {
  await primary();
} else if (workers > 1) {
  serve(new PostgresReplayStore(pool(), { tableName: table }));
} else {
  serve(undefined);
}
