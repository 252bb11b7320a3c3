//! The Redis backend ([`RedisStore`]): a shared tier for a fleet, with every
//! decision taken by one Lua script (`EVALSHA`, loaded on demand).
//!
//! # Key layout
//!
//! Every key starts with [`RedisOptions::key_prefix`] (default `adcp`), so
//! several stores (or test runs) share one server without touching each
//! other. Identifiers are hex-encoded inside the keys, so no byte of a keyid,
//! sender, nonce or idempotency key can break the layout or a hash tag:
//!
//! | key | type | contents |
//! |-----|------|----------|
//! | `P:replay:{hex(keyid)}:n:ID` | string | one replay entry: its `expires_at` |
//! | `P:replay:{hex(keyid)}:z` | sorted set | the keyid's entries `ID`, scored by `expires_at` |
//! | `P:replay:agg` | sorted set | every entry `hex(keyid):ID`, scored by `expires_at` (aggregate cap) |
//! | `P:idem:{hex(sender)}:k:hex(key)` | hash | one idempotency record |
//! | `P:idem:{hex(sender)}:z` | sorted set | the sender's keys, scored by `expires_at` |
//!
//! `ID` is `u` + hex(nonce) for an unscoped entry and `s` + hex(scope) + `.`
//! + hex(nonce) for a scoped one.
//!
//! The `{…}` hash tags keep each keyid's and each sender's keys in one
//! cluster slot. The aggregate set `P:replay:agg` is the one key outside
//! those slots (it hashes on its whole name); the replay insert script
//! touches it together with the keyid's keys, so this store targets a
//! standalone server (optionally with replicas / Sentinel failover). It does
//! not speak Redis Cluster.
//!
//! # Counting without drift
//!
//! Redis cannot decrement a counter when a key expires (short of keyspace
//! notifications, which are lossy). The caps are therefore counted from
//! sorted sets scored by each entry's expiry: every write script first runs
//! `ZREMRANGEBYSCORE key -inf (now` and then `ZCARD`, and read-only counts use
//! `ZCOUNT key now +inf`. A count is thus always exactly the number of live
//! entries at the caller's `now`, whatever happened to the keys meanwhile.
//! Live entries are never evicted: at a cap the script refuses the insert.
//!
//! # Expiry
//!
//! The scripts decide liveness from the `expires_at` stored in each entry,
//! compared with the caller's `now` (inclusive, like every backend). Redis
//! TTLs only reclaim memory: each entry key gets `EXPIREAT` at its absolute
//! expiry plus [`RedisOptions::expiry_grace`]; when the caller's clock runs
//! behind the server's (`TIME`), the expiry is shifted by that offset so
//! that Redis never drops an entry the caller still considers live. The
//! sorted sets are extended with `EXPIREAT … GT` to their latest member.
//!
//! # Fail closed
//!
//! Every call is bounded by [`RedisOptions::op_timeout`]; a connection error,
//! a timeout or a script error answers `StoreError` /
//! [`IdempotencyError::Unavailable`], never a guess. The connection manager
//! reconnects by itself once the server is back.
//!
//! # Durability
//!
//! An acknowledged write is as durable as the server's persistence: run it
//! with `appendonly yes` and `appendfsync always` (or `everysec`, accepting
//! up to a second of acknowledged writes lost on a crash) and
//! `maxmemory-policy noeviction`. [`RedisStore::connect`] checks the policy
//! with `CONFIG GET maxmemory-policy` and refuses an evicting server (see
//! [`RedisOptions::check_eviction_policy`]). See `docs/operations.md`.

use crate::idempotency::{
    Claim, ClaimOutcome, ClaimToken, ConfigError, Fingerprint, IdempotencyConfig, IdempotencyError, IdempotencyRecord,
    IdempotencyStore, RecordState, SenderKey,
};
use adcp_verify::replay::{InsertOutcome, ReplayKey, ReplayLimits, ReplayStore, StoreError};
use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Script, Value};
use std::fmt;
use std::fmt::Write as _;
use std::future::Future;
use std::time::Duration;

/// Settings of a [`RedisStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// Replay-cache caps (default: the webhook caps).
    pub replay_limits: ReplayLimits,
    /// Idempotency window, lease and per-sender cap.
    pub idempotency: IdempotencyConfig,
    /// The prefix of every key (default `adcp`). Must not contain `{` or `}`.
    pub key_prefix: String,
    /// Bound on every operation, connecting included (default 5 s).
    pub op_timeout: Duration,
    /// Extra lifetime given to Redis TTLs past an entry's logical expiry, to
    /// absorb clock drift between receivers (default 60 s).
    pub expiry_grace: Duration,
    /// Check `CONFIG GET maxmemory-policy` at connect and refuse any policy
    /// but `noeviction` (default `true`). Set it to `false` only for a managed
    /// Redis that forbids `CONFIG` and whose policy you verified is
    /// `noeviction` out of band: an evicting server silently forgets claims
    /// and nonces.
    pub check_eviction_policy: bool,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            replay_limits: ReplayLimits::webhook(),
            idempotency: IdempotencyConfig::default(),
            key_prefix: "adcp".to_owned(),
            op_timeout: Duration::from_secs(5),
            expiry_grace: Duration::from_secs(60),
            check_eviction_policy: true,
        }
    }
}

/// Helpers shared by the scripts: `expire_at(key, at, now, gt)` sets the key's
/// TTL at the logical expiry `at`, shifted by how far the caller's `now` lags
/// the server clock, plus the grace (`ARGV[1]` of every script).
const PRELUDE: &str = r"
local grace = tonumber(ARGV[1])
local function expire_at(key, at, now, gt)
  local srv = tonumber(redis.call('TIME')[1])
  local skew = srv - now
  if skew < 0 then skew = 0 end
  if gt then
    redis.call('EXPIREAT', key, at + skew + grace, 'GT')
    if redis.call('TTL', key) < 0 then redis.call('EXPIREAT', key, at + skew + grace) end
  else
    redis.call('EXPIREAT', key, at + skew + grace)
  end
end
";

/// KEYS: entry, keyid set, aggregate set. ARGV: grace, now, expires_at,
/// member, aggregate member, keyid cap, aggregate cap.
/// Returns 0 inserted, 1 replayed, 2 keyid cap, 3 aggregate cap.
const INSERT: &str = r"
local now = tonumber(ARGV[2])
local exp = tonumber(ARGV[3])
local cur = redis.call('GET', KEYS[1])
if cur and tonumber(cur) >= now then return 1 end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[2])
if exp < now then return 0 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return 2 end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[7]) then return 3 end
redis.call('SET', KEYS[1], ARGV[3])
expire_at(KEYS[1], exp, now, false)
redis.call('ZADD', KEYS[2], exp, ARGV[4])
expire_at(KEYS[2], exp, now, true)
redis.call('ZADD', KEYS[3], exp, ARGV[5])
expire_at(KEYS[3], exp, now, true)
return 0
";

/// KEYS: record, sender set. ARGV: grace, now, fingerprint, lease secs,
/// window secs, per-sender cap, member.
/// Returns {0, token, attempt, lease} claimed, {1, lease} in progress,
/// {2} completed, {3} conflict, {4} sender cap.
const CLAIM: &str = r"
local now = tonumber(ARGV[2])
local lease = now + tonumber(ARGV[4])
local until_ = now + tonumber(ARGV[5])
local r = redis.call('HMGET', KEYS[1], 'fp', 'st', 'tok', 'att', 'lease', 'exp')
if r[6] and tonumber(r[6]) >= now then
  if r[1] ~= ARGV[3] then return {3} end
  if r[2] == '1' then return {2} end
  local held = tonumber(r[5])
  if now <= held then return {1, held} end
  local tok = tonumber(r[3]) + 1
  local att = tonumber(r[4]) + 1
  local exp = tonumber(r[6])
  if until_ > exp then exp = until_ end
  redis.call('HSET', KEYS[1], 'tok', tok, 'att', att, 'lease', lease, 'exp', exp)
  expire_at(KEYS[1], exp, now, false)
  redis.call('ZADD', KEYS[2], exp, ARGV[7])
  expire_at(KEYS[2], exp, now, true)
  return {0, tok, att, lease}
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return {4} end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'fp', ARGV[3], 'st', 0, 'tok', 1, 'att', 1, 'lease', lease, 'cat', 0,
  'cre', now, 'exp', until_)
expire_at(KEYS[1], until_, now, false)
redis.call('ZADD', KEYS[2], until_, ARGV[7])
expire_at(KEYS[2], until_, now, true)
return {0, 1, 1, lease}
";

/// KEYS: record, sender set. ARGV: grace, now, token, window secs, member.
/// Returns 1 owned (completed now or before by this token), 0 not owner.
const COMPLETE: &str = r"
local now = tonumber(ARGV[2])
local r = redis.call('HMGET', KEYS[1], 'st', 'tok', 'exp')
if not r[3] or tonumber(r[3]) < now then return 0 end
if tonumber(r[2]) ~= tonumber(ARGV[3]) then return 0 end
if r[1] == '1' then return 1 end
local exp = tonumber(r[3])
local until_ = now + tonumber(ARGV[4])
if until_ > exp then exp = until_ end
redis.call('HSET', KEYS[1], 'st', 1, 'cat', now, 'exp', exp)
expire_at(KEYS[1], exp, now, false)
redis.call('ZADD', KEYS[2], exp, ARGV[5])
expire_at(KEYS[2], exp, now, true)
return 1
";

/// KEYS: record, sender set. ARGV: grace, now, token, member.
/// Returns 1 released, 0 not owner.
const RELEASE: &str = r"
local now = tonumber(ARGV[2])
local r = redis.call('HMGET', KEYS[1], 'st', 'tok', 'exp')
if not r[3] or tonumber(r[3]) < now then return 0 end
if r[1] ~= '0' or tonumber(r[2]) ~= tonumber(ARGV[3]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[4])
return 1
";

struct Scripts {
    insert: Script,
    claim: Script,
    complete: Script,
    release: Script,
}

impl Scripts {
    fn new() -> Self {
        let with_prelude = |body: &str| Script::new(&format!("{PRELUDE}{body}"));
        Self {
            insert: with_prelude(INSERT),
            claim: with_prelude(CLAIM),
            complete: with_prelude(COMPLETE),
            release: with_prelude(RELEASE),
        }
    }
}

/// A [`ReplayStore`] and [`IdempotencyStore`] in Redis. See the [module
/// docs](self).
pub struct RedisStore {
    options: RedisOptions,
    conn: ConnectionManager,
    scripts: Scripts,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn rd(e: impl fmt::Display) -> String {
    format!("redis: {e}")
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn cap(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl RedisStore {
    /// Connects to `url` (`redis://` or `rediss://` when the `redis` crate is
    /// built with TLS), checks the settings and the server's eviction policy.
    /// Fails when the server is unreachable within
    /// [`RedisOptions::op_timeout`], when the window is shorter than 24 h,
    /// or when the server may evict keys.
    pub async fn connect(url: &str, options: RedisOptions) -> Result<Self, ConfigError> {
        options.idempotency.validate()?;
        if options.key_prefix.is_empty() || options.key_prefix.contains(['{', '}']) {
            return Err(ConfigError::Backend(format!(
                "invalid key prefix {:?} (non-empty, without braces)",
                options.key_prefix
            )));
        }
        let client = redis::Client::open(url).map_err(|e| ConfigError::Url(rd(e)))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(options.op_timeout))
            .set_response_timeout(Some(options.op_timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let conn = tokio::time::timeout(options.op_timeout, ConnectionManager::new_with_config(client, config))
            .await
            .map_err(|_| ConfigError::Backend(format!("redis: connect timed out after {:?}", options.op_timeout)))?
            .map_err(|e| ConfigError::Backend(rd(e)))?;
        let store = Self {
            options,
            conn,
            scripts: Scripts::new(),
        };
        if store.options.check_eviction_policy {
            store.check_eviction_policy().await?;
        }
        Ok(store)
    }

    async fn check_eviction_policy(&self) -> Result<(), ConfigError> {
        let reply: Vec<String> = self
            .run(|mut c| async move {
                redis::cmd("CONFIG")
                    .arg("GET")
                    .arg("maxmemory-policy")
                    .query_async(&mut c)
                    .await
            })
            .await
            .map_err(|e| {
                ConfigError::Backend(format!(
                    "{e}; cannot read maxmemory-policy (for a managed Redis without CONFIG, verify it is \
                     `noeviction` and set RedisOptions::check_eviction_policy = false)"
                ))
            })?;
        match reply.get(1).map(String::as_str) {
            Some("noeviction") => Ok(()),
            other => Err(ConfigError::Backend(format!(
                "redis maxmemory-policy is {other:?}; an evicting server forgets claims and nonces: \
                 set `maxmemory-policy noeviction`"
            ))),
        }
    }

    /// The settings in force.
    #[must_use]
    pub fn options(&self) -> &RedisOptions {
        &self.options
    }

    /// Deletes every key under the store's prefix (test and decommissioning
    /// utility; uses `SCAN`, not `KEYS`). Returns how many were deleted.
    pub async fn delete_all(&self) -> Result<u64, StoreError> {
        let pattern = format!("{}:*", self.options.key_prefix);
        let mut cursor: u64 = 0;
        let mut deleted = 0u64;
        loop {
            let pattern = pattern.clone();
            let (next, keys): (u64, Vec<Vec<u8>>) = self
                .run(move |mut c| async move {
                    redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(pattern)
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(&mut c)
                        .await
                })
                .await
                .map_err(StoreError)?;
            if !keys.is_empty() {
                let n: u64 = self
                    .run(move |mut c| async move { redis::cmd("DEL").arg(keys).query_async(&mut c).await })
                    .await
                    .map_err(StoreError)?;
                deleted += n;
            }
            if next == 0 {
                return Ok(deleted);
            }
            cursor = next;
        }
    }

    /// Runs one request on a clone of the managed connection within the
    /// operation timeout.
    async fn run<T, F, Fut>(&self, f: F) -> Result<T, String>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        match tokio::time::timeout(self.options.op_timeout, f(self.conn.clone())).await {
            Ok(result) => result.map_err(rd),
            Err(_) => Err(format!("redis: timed out after {:?}", self.options.op_timeout)),
        }
    }

    fn grace(&self) -> i64 {
        i64::try_from(self.options.expiry_grace.as_secs()).unwrap_or(i64::MAX / 4)
    }

    fn keyid_tag(&self, keyid: &str) -> String {
        format!("{}:replay:{{{}}}", self.options.key_prefix, hex(keyid.as_bytes()))
    }

    fn sender_tag(&self, sender: &str) -> String {
        format!("{}:idem:{{{}}}", self.options.key_prefix, hex(sender.as_bytes()))
    }

    fn record_key(&self, key: SenderKey<'_>) -> (String, String, String) {
        let tag = self.sender_tag(key.sender);
        let member = hex(key.idempotency_key.as_bytes());
        (format!("{tag}:k:{member}"), format!("{tag}:z"), member)
    }
}

fn entry_id(key: ReplayKey<'_>) -> String {
    match key.scope {
        None => format!("u{}", hex(key.nonce)),
        Some(scope) => format!("s{}.{}", hex(scope.as_bytes()), hex(key.nonce)),
    }
}

fn int(value: Option<&Value>) -> Result<i64, String> {
    match value {
        Some(Value::Int(n)) => Ok(*n),
        other => Err(format!("redis: unexpected script reply {other:?}")),
    }
}

#[async_trait]
impl ReplayStore for RedisStore {
    async fn keyid_cap_reached(&self, keyid: &str, now: i64) -> Result<bool, StoreError> {
        let set = format!("{}:z", self.keyid_tag(keyid));
        let n: u64 = self
            .run(move |mut c| async move {
                redis::cmd("ZCOUNT")
                    .arg(set)
                    .arg(now)
                    .arg("+inf")
                    .query_async(&mut c)
                    .await
            })
            .await
            .map_err(StoreError)?;
        Ok(n >= self.options.replay_limits.per_keyid_cap as u64)
    }

    async fn contains(&self, key: ReplayKey<'_>, now: i64) -> Result<bool, StoreError> {
        let entry = format!("{}:n:{}", self.keyid_tag(key.keyid), entry_id(key));
        let held: Option<i64> = self
            .run(move |mut c| async move { redis::cmd("GET").arg(entry).query_async(&mut c).await })
            .await
            .map_err(StoreError)?;
        Ok(held.is_some_and(|expires_at| expires_at >= now))
    }

    async fn insert(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Result<InsertOutcome, StoreError> {
        let tag = self.keyid_tag(key.keyid);
        let id = entry_id(key);
        let mut invocation = self.scripts.insert.prepare_invoke();
        invocation
            .key(format!("{tag}:n:{id}"))
            .key(format!("{tag}:z"))
            .key(format!("{}:replay:agg", self.options.key_prefix))
            .arg(self.grace())
            .arg(now)
            .arg(expires_at)
            .arg(&id)
            .arg(format!("{}:{id}", hex(key.keyid.as_bytes())))
            .arg(cap(self.options.replay_limits.per_keyid_cap as u64))
            .arg(cap(self.options.replay_limits.aggregate_cap as u64));
        let code: i64 = self
            .run(|mut c| async move { invocation.invoke_async(&mut c).await })
            .await
            .map_err(StoreError)?;
        match code {
            0 => Ok(InsertOutcome::Inserted),
            1 => Ok(InsertOutcome::Replayed),
            2 => Ok(InsertOutcome::KeyidCapReached),
            3 => Ok(InsertOutcome::AggregateCapReached),
            other => Err(StoreError(format!("redis: unexpected insert reply {other}"))),
        }
    }
}

#[async_trait]
impl IdempotencyStore for RedisStore {
    fn config(&self) -> IdempotencyConfig {
        self.options.idempotency
    }

    async fn claim(
        &self,
        key: SenderKey<'_>,
        fingerprint: Fingerprint<'_>,
        now: i64,
    ) -> Result<ClaimOutcome, IdempotencyError> {
        if fingerprint.0.len() > Fingerprint::MAX_LEN {
            return Err(IdempotencyError::FingerprintTooLong);
        }
        let config = self.options.idempotency;
        let (record, set, member) = self.record_key(key);
        let mut invocation = self.scripts.claim.prepare_invoke();
        invocation
            .key(record)
            .key(set)
            .arg(self.grace())
            .arg(now)
            .arg(fingerprint.0)
            .arg(config.lease_secs)
            .arg(config.window_secs)
            .arg(cap(config.per_sender_cap))
            .arg(member);
        let reply: Vec<Value> = self
            .run(|mut c| async move { invocation.invoke_async(&mut c).await })
            .await
            .map_err(IdempotencyError::Unavailable)?;
        let outcome = match int(reply.first()).map_err(IdempotencyError::Unavailable)? {
            0 => {
                let token = int(reply.get(1)).map_err(IdempotencyError::Unavailable)?;
                let attempt = int(reply.get(2)).map_err(IdempotencyError::Unavailable)?;
                let lease_expires_at = int(reply.get(3)).map_err(IdempotencyError::Unavailable)?;
                ClaimOutcome::Claimed(Claim {
                    token: ClaimToken(token),
                    attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                    lease_expires_at,
                })
            }
            1 => ClaimOutcome::InProgress {
                lease_expires_at: int(reply.get(1)).map_err(IdempotencyError::Unavailable)?,
            },
            2 => ClaimOutcome::Completed,
            3 => ClaimOutcome::Conflict,
            4 => ClaimOutcome::SenderCapReached,
            other => {
                return Err(IdempotencyError::Unavailable(format!(
                    "redis: unexpected claim reply {other}"
                )))
            }
        };
        Ok(outcome)
    }

    async fn complete(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        let (record, set, member) = self.record_key(key);
        let mut invocation = self.scripts.complete.prepare_invoke();
        invocation
            .key(record)
            .key(set)
            .arg(self.grace())
            .arg(now)
            .arg(token.0)
            .arg(self.options.idempotency.window_secs)
            .arg(member);
        let owned: i64 = self
            .run(|mut c| async move { invocation.invoke_async(&mut c).await })
            .await
            .map_err(IdempotencyError::Unavailable)?;
        if owned == 1 {
            Ok(())
        } else {
            Err(IdempotencyError::NotOwner)
        }
    }

    async fn release(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        let (record, set, member) = self.record_key(key);
        let mut invocation = self.scripts.release.prepare_invoke();
        invocation
            .key(record)
            .key(set)
            .arg(self.grace())
            .arg(now)
            .arg(token.0)
            .arg(member);
        let released: i64 = self
            .run(|mut c| async move { invocation.invoke_async(&mut c).await })
            .await
            .map_err(IdempotencyError::Unavailable)?;
        if released == 1 {
            Ok(())
        } else {
            Err(IdempotencyError::NotOwner)
        }
    }

    async fn lookup(&self, key: SenderKey<'_>, now: i64) -> Result<Option<IdempotencyRecord>, IdempotencyError> {
        let (record, _, _) = self.record_key(key);
        type Fields = (
            Option<Vec<u8>>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
        );
        let fields: Fields = self
            .run(move |mut c| async move {
                redis::cmd("HMGET")
                    .arg(record)
                    .arg(&["fp", "st", "tok", "att", "lease", "cat", "cre", "exp"])
                    .query_async(&mut c)
                    .await
            })
            .await
            .map_err(IdempotencyError::Unavailable)?;
        let (Some(fingerprint), Some(st), Some(tok), Some(att), Some(lease), Some(cat), Some(cre), Some(exp)) = fields
        else {
            return Ok(None);
        };
        if exp < now {
            return Ok(None);
        }
        let token = ClaimToken(tok);
        let state = if st == 1 {
            RecordState::Completed {
                token,
                completed_at: cat,
            }
        } else {
            RecordState::Claimed {
                token,
                attempt: u32::try_from(att).unwrap_or(u32::MAX),
                lease_expires_at: lease,
            }
        };
        Ok(Some(IdempotencyRecord {
            state,
            fingerprint,
            created_at: cre,
            expires_at: exp,
        }))
    }

    async fn sender_len(&self, sender: &str, now: i64) -> Result<u64, IdempotencyError> {
        let set = format!("{}:z", self.sender_tag(sender));
        self.run(move |mut c| async move {
            redis::cmd("ZCOUNT")
                .arg(set)
                .arg(now)
                .arg("+inf")
                .query_async(&mut c)
                .await
        })
        .await
        .map_err(IdempotencyError::Unavailable)
    }
}
