//! The Redis backend, standalone or Cluster.
//!
//! The user-facing documentation is on [`RedisStore`] (re-exported at the
//! crate root).

use crate::idempotency::{
    Claim, ClaimOutcome, ClaimRequest, ClaimToken, ConfigError, Fingerprint, IdempotencyConfig, IdempotencyError,
    IdempotencyRecord, IdempotencyStore, RecordState, SenderKey,
};
use adcp_verify::{CapKey, InsertOutcome, ReplayKey, ReplayLimits, ReplayStore, StoreError};
use async_trait::async_trait;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture};
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
    /// How many hash slots the replay cache spreads over (default 1, at most
    /// [`MAX_REPLAY_SHARDS`](RedisOptions::MAX_REPLAY_SHARDS)). With more than
    /// one, the aggregate cap is enforced per shard (see "Redis Cluster" on
    /// [`RedisStore`]). Every store sharing a prefix must use the
    /// same value; [`RedisStore::connect`] refuses a mismatch.
    pub replay_shards: u16,
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

impl RedisOptions {
    /// The most replay shards a store accepts (a quarter of the cluster's
    /// 16,384 slots).
    pub const MAX_REPLAY_SHARDS: u16 = 4_096;
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            replay_limits: ReplayLimits::webhook(),
            idempotency: IdempotencyConfig::default(),
            key_prefix: "adcp".to_owned(),
            replay_shards: 1,
            op_timeout: Duration::from_secs(5),
            expiry_grace: Duration::from_secs(60),
            check_eviction_policy: true,
        }
    }
}

/// Helpers shared by the scripts: `expire_at(key, at, gt)` sets the key's
/// TTL at the logical expiry `at`, shifted by how far the caller's `now`
/// (`ARGV[2]`) lags the server clock, plus the grace (`ARGV[1]`).
const PRELUDE: &str = r"
local grace = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local skew = nil
local function ttl_at(at)
  if not skew then
    skew = tonumber(redis.call('TIME')[1]) - now
    if skew < 0 then skew = 0 end
  end
  return at + skew + grace
end
local function expire_at(key, at, gt)
  local t = ttl_at(at)
  if gt then
    -- GT refuses both a shorter TTL and a key without one: only the
    -- latter needs the plain EXPIREAT.
    if redis.call('EXPIREAT', key, t, 'GT') == 0 and redis.call('TTL', key) == -1 then
      redis.call('EXPIREAT', key, t)
    end
  else
    redis.call('EXPIREAT', key, t)
  end
end
";

/// KEYS: entry, `(agent, keyid)` set, shard aggregate set (one hash tag).
/// ARGV: grace, now, expires_at, member, aggregate member, keyid cap, shard
/// aggregate cap.
/// Returns 0 inserted, 1 replayed, 2 keyid cap, 3 aggregate cap.
const INSERT: &str = r"
local exp = tonumber(ARGV[3])
local cur = redis.call('GET', KEYS[1])
if cur and tonumber(cur) >= now then return 1 end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[2])
if exp < now then return 0 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return 2 end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[7]) then return 3 end
redis.call('SET', KEYS[1], ARGV[3], 'EXAT', ttl_at(exp))
redis.call('ZADD', KEYS[2], exp, ARGV[4])
expire_at(KEYS[2], exp, true)
redis.call('ZADD', KEYS[3], exp, ARGV[5])
expire_at(KEYS[3], exp, true)
return 0
";

/// KEYS: record, sender set (one hash tag). ARGV: grace, now, fingerprint,
/// lease secs, window secs, per-sender cap, member.
/// Returns {0, token, attempt, lease} claimed, {1, lease} in progress,
/// {2} completed, {3} conflict, {4} sender cap.
const CLAIM: &str = r"
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
  expire_at(KEYS[1], exp, false)
  redis.call('ZADD', KEYS[2], exp, ARGV[7])
  expire_at(KEYS[2], exp, true)
  return {0, tok, att, lease}
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return {4} end
-- Every field is written, so an expired record left behind is overwritten whole.
redis.call('HSET', KEYS[1], 'fp', ARGV[3], 'st', 0, 'tok', 1, 'att', 1, 'lease', lease, 'cat', 0,
  'cre', now, 'exp', until_)
expire_at(KEYS[1], until_, false)
redis.call('ZADD', KEYS[2], until_, ARGV[7])
expire_at(KEYS[2], until_, true)
return {0, 1, 1, lease}
";

/// KEYS: record, sender set, and optionally the notification record (one
/// hash tag). ARGV: grace, now, token, window secs, member, idempotency
/// key. Returns 1 owned (completed now or before by this token), 0 not
/// owner; only an owner writes the notification record.
const COMPLETE: &str = r"
local r = redis.call('HMGET', KEYS[1], 'st', 'tok', 'exp')
if not r[3] or tonumber(r[3]) < now then return 0 end
if tonumber(r[2]) ~= tonumber(ARGV[3]) then return 0 end
local until_ = now + tonumber(ARGV[4])
if r[1] ~= '1' then
  local exp = tonumber(r[3])
  if until_ > exp then exp = until_ end
  redis.call('HSET', KEYS[1], 'st', 1, 'cat', now, 'exp', exp)
  expire_at(KEYS[1], exp, false)
  redis.call('ZADD', KEYS[2], exp, ARGV[5])
  expire_at(KEYS[2], exp, true)
end
if KEYS[3] then
  -- A live notification record keeps its first key and only grows its
  -- expiry; an absent or expired one is written whole.
  local n = redis.call('HMGET', KEYS[3], 'key', 'exp')
  if n[1] and n[2] and tonumber(n[2]) >= now then
    if until_ > tonumber(n[2]) then
      redis.call('HSET', KEYS[3], 'exp', until_)
      expire_at(KEYS[3], until_, false)
    end
  else
    redis.call('HSET', KEYS[3], 'key', ARGV[6], 'exp', until_)
    expire_at(KEYS[3], until_, false)
  end
end
return 1
";

/// KEYS: record, sender set (one hash tag). ARGV: grace, now, token, member.
/// Returns 1 released, 0 not owner.
const RELEASE: &str = r"
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
    /// The claim script's source, for `SCRIPT LOAD` ahead of a pipeline.
    claim_code: String,
    complete: Script,
    release: Script,
}

impl Scripts {
    fn new() -> Self {
        let with_prelude = |body: &str| Script::new(&format!("{PRELUDE}{body}"));
        Self {
            insert: with_prelude(INSERT),
            claim: with_prelude(CLAIM),
            claim_code: format!("{PRELUDE}{CLAIM}"),
            complete: with_prelude(COMPLETE),
            release: with_prelude(RELEASE),
        }
    }
}

/// The connection: one managed connection to a standalone server (or a
/// Sentinel-managed primary), or a cluster connection that follows the
/// cluster's slot map (`MOVED` / `ASK`).
#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(c) => c.req_packed_command(cmd),
            Self::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Self::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(c) => c.get_db(),
            Self::Cluster(c) => c.get_db(),
        }
    }
}

/// The seed nodes of a `redis+cluster://` / `rediss+cluster://` URL, as
/// plain node URLs: `redis+cluster://user:pw@h1:6379,h2:6379/` gives
/// `redis://user:pw@h1:6379` and `redis://user:pw@h2:6379`. `None` for any
/// other URL.
fn cluster_seeds(url: &str) -> Option<Result<Vec<String>, ConfigError>> {
    let (scheme, rest) = if let Some(rest) = url.strip_prefix("redis+cluster://") {
        ("redis", rest)
    } else {
        ("rediss", url.strip_prefix("rediss+cluster://")?)
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let (userinfo, hosts) = match authority.rfind('@') {
        Some(at) => (&authority[..=at], &authority[at + 1..]),
        None => ("", authority),
    };
    let seeds: Vec<String> = hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|h| format!("{scheme}://{userinfo}{h}"))
        .collect();
    if seeds.is_empty() {
        return Some(Err(ConfigError::Url(format!(
            "{scheme}+cluster URL without a node: {url:?}"
        ))));
    }
    Some(Ok(seeds))
}

/// The key names of one store (see "Key layout" on [`RedisStore`]):
/// pure functions of the prefix and the shard count, so that the slot of
/// every key a script touches can be checked without a server.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    prefix: String,
    shards: u16,
}

/// The keys and members one replay insert touches.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReplayKeys {
    /// The entry (a string holding `expires_at`).
    entry: String,
    /// The sorted set of the entry's `(agent, keyid)` (the per-keyid cap).
    keyid_set: String,
    /// The shard's aggregate sorted set.
    aggregate_set: String,
    /// The entry's member in the keyid's set.
    member: String,
    /// The entry's member in the aggregate set.
    aggregate_member: String,
}

/// The keys and member one idempotency operation touches.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IdemKeys {
    /// The record (a hash).
    record: String,
    /// The sender's sorted set.
    sender_set: String,
    /// The record's member in the sender's set.
    member: String,
}

/// FNV-1a (64 bit): a stable hash, the same in every process and version.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl Layout {
    fn new(prefix: &str, shards: u16) -> Self {
        Self {
            prefix: prefix.to_owned(),
            shards: shards.max(1),
        }
    }

    fn shard(&self, keyid: &str) -> u64 {
        fnv1a(keyid.as_bytes()) % u64::from(self.shards)
    }

    fn replay_tag(&self, keyid: &str) -> String {
        format!("{}:replay:{{r{}}}", self.prefix, self.shard(keyid))
    }

    /// The sorted set counting `cap`'s entries. Without an agent: the
    /// per-keyid name of old; with one: `hex(keyid):a:hex(agent):z`, in the
    /// same hash tag (the shard is the raw keyid's).
    fn keyid_set(&self, cap: CapKey<'_>) -> String {
        match cap.agent {
            None => format!("{}:{}:z", self.replay_tag(cap.keyid), hex(cap.keyid.as_bytes())),
            Some(agent) => format!(
                "{}:{}:a:{}:z",
                self.replay_tag(cap.keyid),
                hex(cap.keyid.as_bytes()),
                hex(agent.as_bytes())
            ),
        }
    }

    fn entry(&self, key: ReplayKey<'_>) -> String {
        format!(
            "{}:{}:n:{}",
            self.replay_tag(key.keyid),
            hex(key.keyid.as_bytes()),
            entry_id(key)
        )
    }

    fn replay(&self, key: ReplayKey<'_>) -> ReplayKeys {
        let id = entry_id(key);
        ReplayKeys {
            entry: self.entry(key),
            keyid_set: self.keyid_set(key.cap_key()),
            aggregate_set: format!("{}:agg", self.replay_tag(key.keyid)),
            aggregate_member: format!("{}:{id}", hex(key.keyid.as_bytes())),
            member: id,
        }
    }

    fn shards_key(&self) -> String {
        format!("{}:replay:shards", self.prefix)
    }

    fn sender_set(&self, sender: &str) -> String {
        format!("{}:idem:{{s{}}}:z", self.prefix, hex(sender.as_bytes()))
    }

    /// The notification record: in the sender's hash tag, so that the
    /// completion script writing it touches one slot.
    fn notification(&self, sender: &str, notification_id: &str) -> String {
        format!(
            "{}:idem:{{s{}}}:n:{}",
            self.prefix,
            hex(sender.as_bytes()),
            hex(notification_id.as_bytes())
        )
    }

    fn idem(&self, key: SenderKey<'_>) -> IdemKeys {
        let member = hex(key.idempotency_key.as_bytes());
        IdemKeys {
            record: format!("{}:idem:{{s{}}}:k:{member}", self.prefix, hex(key.sender.as_bytes())),
            sender_set: self.sender_set(key.sender),
            member,
        }
    }
}

/// A [`ReplayStore`] and [`IdempotencyStore`] in Redis.
///
/// The Redis backend ([`RedisStore`]): a shared tier for a fleet, with every
/// decision taken by one Lua script (`EVALSHA`, loaded on demand).
///
/// # Key layout
///
/// Every key starts with [`RedisOptions::key_prefix`] (default `adcp`), so
/// several stores (or test runs) share one server without touching each
/// other. Identifiers are hex-encoded inside the keys, so no byte of a keyid,
/// sender, nonce or idempotency key can break the layout or a hash tag:
///
/// | key | type | contents |
/// |-----|------|----------|
/// | `P:replay:{rS}:hex(keyid):n:ID` | string | one replay entry: its `expires_at` |
/// | `P:replay:{rS}:hex(keyid):z` | sorted set | the entries `ID` inserted without an agent, scored by `expires_at` (per-keyid cap) |
/// | `P:replay:{rS}:hex(keyid):a:hex(agent):z` | sorted set | the entries `ID` inserted for `agent`, scored by `expires_at` (per-`(agent, keyid)` cap) |
/// | `P:replay:{rS}:agg` | sorted set | shard `S`'s entries `hex(keyid):ID`, scored by `expires_at` (aggregate cap) |
/// | `P:replay:shards` | string | the shard count every store on this prefix must use |
/// | `P:idem:{s hex(sender)}:k:hex(key)` | hash | one idempotency record |
/// | `P:idem:{s hex(sender)}:z` | sorted set | the sender's keys, scored by `expires_at` |
/// | `P:idem:{s hex(sender)}:n:hex(notification_id)` | hash | one notification record: the first key (`key`) and `exp` |
///
/// `ID` is `u` followed by hex(nonce) for an unscoped entry, and `s`,
/// hex(scope), `.` and hex(nonce) for a scoped one. `s hex(sender)` is the
/// letter `s` followed by the hex sender, so that no hash tag is ever empty
/// (Redis hashes a key with an empty `{}` on its whole name). `S` is the
/// keyid's replay shard, FNV-1a(keyid) mod [`RedisOptions::replay_shards`].
///
/// Replay uniqueness is the entry key, per `(keyid, scope, nonce)` whoever
/// signed; the per-keyid cap is counted in the sorted set of the entry's
/// `(agent, keyid)` ([`ReplayKey::agent`]). Both are named from the raw
/// keyid's shard, so the insert script still touches one slot. The pair is
/// unambiguous: `hex(keyid)` has no `:`, and what follows it (`n`, `z` or
/// `a`) says which kind of key it is; the agent set without an agent keeps
/// the per-keyid name, so entries written before agents existed still
/// count toward `agent: None`. When an expired entry of one agent is
/// overwritten for another, its member stays in the first agent's set with
/// its past score, where it no longer counts (see below) and is trimmed by
/// that set's next write.
///
/// # Redis Cluster
///
/// Every script touches the keys of one hash tag only, so each script runs
/// on one slot, as Redis Cluster requires (it refuses a script whose keys
/// span slots with `CROSSSLOT`): the insert-with-cap touches the entry, the
/// keyid's set and its shard's aggregate set, all tagged `{rS}`; a claim,
/// completion or release touches the record and the sender's set (and a
/// completion its notification record), all tagged `{s hex(sender)}`. Idempotency records spread over the cluster by
/// sender; replay entries spread over [`RedisOptions::replay_shards`] slots.
///
/// The aggregate cap needs every entry of a shard in one slot, so with `N`
/// shards it is enforced per shard: each shard holds at most
/// ⌊`aggregate_cap` / `N`⌋ live entries. The total never exceeds
/// `aggregate_cap`; a shard can refuse (`AggregateCapReached`) while others
/// have room. With the default `N = 1` the cap is exact and every replay key
/// lives in one slot (one node of a cluster); raise `N` (for example to 4×
/// the number of primaries) when the replay cache must spread over a
/// cluster, and keep `aggregate_cap / N` above the per-keyid cap. The shard
/// count is recorded under `P:replay:shards` at connect and a store with
/// another count is refused, because a keyid must map to the same shard on
/// every receiver.
///
/// A `redis://` URL opens one [`ConnectionManager`] (a standalone server or
/// a primary behind Sentinel); a `redis+cluster://host:port,host:port` URL
/// opens a cluster connection from those seed nodes, which follows the
/// cluster's slot map (`MOVED`, `ASK`). On a cluster,
/// [`IdempotencyStore::claim_many`] sends one pipeline per sender (a cluster
/// pipeline stays in one slot), the eviction-policy check reads every node,
/// and [`RedisStore::delete_all`] scans every primary. The contract suite
/// runs against a test-owned three-primary cluster.
///
/// # Counting without drift
///
/// Redis cannot decrement a counter when a key expires (short of keyspace
/// notifications, which are lossy). The caps are therefore counted from
/// sorted sets scored by each entry's expiry: every write script first runs
/// `ZREMRANGEBYSCORE key -inf (now` and then `ZCARD`, and read-only counts use
/// `ZCOUNT key now +inf`. A count is thus always exactly the number of live
/// entries at the caller's `now`, whatever happened to the keys meanwhile.
/// Live entries are never evicted: at a cap the script refuses the insert.
///
/// # Expiry
///
/// The scripts decide liveness from the `expires_at` stored in each entry,
/// compared with the caller's `now` (inclusive, like every backend). Redis
/// TTLs only reclaim memory: each entry key gets `EXPIREAT` at its absolute
/// expiry plus [`RedisOptions::expiry_grace`]; when the caller's clock runs
/// behind the server's (`TIME`), the expiry is shifted by that offset so
/// that Redis never drops an entry the caller still considers live. The
/// sorted sets are extended with `EXPIREAT … GT` to their latest member.
///
/// # Fail closed
///
/// Every call is bounded by [`RedisOptions::op_timeout`]; a connection error,
/// a timeout or a script error answers `StoreError` /
/// [`IdempotencyError::Unavailable`], never a guess. The connection manager
/// reconnects by itself once the server is back.
///
/// # Server version
///
/// Redis 7.0 or later (the scripts use `EXPIREAT … GT` and `SET … EXAT`).
///
/// # Durability
///
/// An acknowledged write is only as durable as the server's persistence;
/// Redis replies before anything reaches disk unless told otherwise:
///
/// - `appendonly yes` + `appendfsync always`: every write is fsynced to the
///   AOF before the reply, so every acknowledged claim, completion and nonce
///   survives `kill -9` and power loss. Costs one fsync per write (tested:
///   a SIGKILLed server restarted on its AOF still holds every acknowledged
///   claim).
/// - `appendonly yes` + `appendfsync everysec`: the AOF is fsynced once a
///   second, so a crash or power loss can drop up to about one second of
///   acknowledged writes (two in the worst case, when a slow fsync delays
///   the next one). A lost completion or claim lets the sender's retry be
///   applied a second time; a lost nonce reopens a replay window for that
///   signature. Acceptable only when side effects tolerate it.
/// - RDB snapshots alone or `appendfsync no`: everything since the last
///   snapshot (or the kernel's flush) can be lost; not suitable.
///
/// Replication is asynchronous, so a failover to a replica can lose the
/// last acknowledged writes the same way. Run the server with
/// `maxmemory-policy noeviction`: [`RedisStore::connect`] checks the policy
/// with `CONFIG GET maxmemory-policy` and refuses an evicting server (see
/// [`RedisOptions::check_eviction_policy`]). See `docs/operations.md`.
pub struct RedisStore {
    options: RedisOptions,
    layout: Layout,
    conn: Conn,
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
    /// Connects to `url` — `redis://` (or `rediss://` when the `redis` crate
    /// is built with TLS) for one server, `redis+cluster://h1:p1,h2:p2,…`
    /// for a Redis Cluster given by seed nodes — and checks the settings and
    /// the eviction policy of the server (of every node of a cluster).
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
        if options.replay_shards == 0 || options.replay_shards > RedisOptions::MAX_REPLAY_SHARDS {
            return Err(ConfigError::Backend(format!(
                "replay_shards must be between 1 and {}, got {}",
                RedisOptions::MAX_REPLAY_SHARDS,
                options.replay_shards
            )));
        }
        let timed_out = || ConfigError::Backend(format!("redis: connect timed out after {:?}", options.op_timeout));
        let conn = match cluster_seeds(url) {
            Some(seeds) => {
                let client = ClusterClientBuilder::new(seeds?)
                    .connection_timeout(options.op_timeout)
                    .response_timeout(options.op_timeout)
                    .retries(2)
                    .build()
                    .map_err(|e| ConfigError::Url(rd(e)))?;
                let conn = tokio::time::timeout(options.op_timeout, client.get_async_connection())
                    .await
                    .map_err(|_| timed_out())?
                    .map_err(|e| ConfigError::Backend(rd(e)))?;
                Conn::Cluster(conn)
            }
            None => {
                let client = redis::Client::open(url).map_err(|e| ConfigError::Url(rd(e)))?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(options.op_timeout))
                    .set_response_timeout(Some(options.op_timeout))
                    .set_number_of_retries(1)
                    .set_max_delay(Duration::from_millis(500));
                let conn = tokio::time::timeout(options.op_timeout, ConnectionManager::new_with_config(client, config))
                    .await
                    .map_err(|_| timed_out())?
                    .map_err(|e| ConfigError::Backend(rd(e)))?;
                Conn::Single(conn)
            }
        };
        let store = Self {
            layout: Layout::new(&options.key_prefix, options.replay_shards),
            options,
            conn,
            scripts: Scripts::new(),
        };
        if store.options.check_eviction_policy {
            store.check_eviction_policy().await?;
        }
        store.check_replay_shards().await?;
        Ok(store)
    }

    /// Records the shard count under the prefix (first store) or checks it
    /// against the recorded one: a keyid must map to one shard fleet-wide.
    async fn check_replay_shards(&self) -> Result<(), ConfigError> {
        let key = self.layout.shards_key();
        let shards = self.options.replay_shards;
        let recorded: Option<String> = self
            .run(|mut c| async move {
                // Record the count unless one is there, then read what is there.
                let _: Option<String> = redis::cmd("SET")
                    .arg(&key)
                    .arg(shards)
                    .arg("NX")
                    .query_async(&mut c)
                    .await?;
                redis::cmd("GET").arg(&key).query_async(&mut c).await
            })
            .await
            .map_err(ConfigError::Backend)?;
        match recorded {
            Some(n) if n == shards.to_string() => Ok(()),
            None => Err(ConfigError::Backend(format!(
                "could not record replay_shards under prefix {:?}",
                self.options.key_prefix
            ))),
            Some(n) => Err(ConfigError::Backend(format!(
                "replay_shards is {shards} but the stores already using prefix {:?} use {n}; \
                 every store on a prefix must use the same count",
                self.options.key_prefix
            ))),
        }
    }

    /// Checks `maxmemory-policy` on the server, or on every node of a
    /// cluster (a replica may be promoted).
    async fn check_eviction_policy(&self) -> Result<(), ConfigError> {
        let cannot = |e: String| {
            ConfigError::Backend(format!(
                "{e}; cannot read maxmemory-policy (for a managed Redis without CONFIG, verify it is \
                 `noeviction` and set RedisOptions::check_eviction_policy = false)"
            ))
        };
        for node in self.nodes(false).await.map_err(cannot)? {
            let mut cmd = redis::cmd("CONFIG");
            cmd.arg("GET").arg("maxmemory-policy");
            let reply: Vec<String> = self.on_node(node.as_ref(), cmd).await.map_err(cannot)?;
            match reply.get(1).map(String::as_str) {
                Some("noeviction") => {}
                other => {
                    let on = node
                        .map(|(host, port)| format!(" on {host}:{port}"))
                        .unwrap_or_default();
                    return Err(ConfigError::Backend(format!(
                        "redis maxmemory-policy is {other:?}{on}; an evicting server forgets claims and nonces: \
                         set `maxmemory-policy noeviction`"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The nodes to address one by one: `[None]` (the one server) on a
    /// standalone connection; every reachable node of a cluster (only the
    /// primaries when `primaries_only`), from `CLUSTER NODES`.
    async fn nodes(&self, primaries_only: bool) -> Result<Vec<Option<(String, u16)>>, String> {
        if matches!(self.conn, Conn::Single(_)) {
            return Ok(vec![None]);
        }
        let text: String = self
            .run(|mut c| async move { redis::cmd("CLUSTER").arg("NODES").query_async(&mut c).await })
            .await?;
        let mut nodes = Vec::new();
        for line in text.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let (Some(addr), Some(flags)) = (fields.get(1), fields.get(2)) else {
                continue;
            };
            if flags.contains("fail") || flags.contains("noaddr") || (primaries_only && !flags.contains("master")) {
                continue;
            }
            let addr = addr.split(['@', ',']).next().unwrap_or_default();
            if let Some((host, port)) = addr.rsplit_once(':') {
                if let Ok(port) = port.parse() {
                    nodes.push(Some((host.to_owned(), port)));
                }
            }
        }
        if nodes.is_empty() {
            return Err("redis: CLUSTER NODES listed no usable node".to_owned());
        }
        Ok(nodes)
    }

    /// Runs `cmd` on `node` (a cluster node by address), or on the server.
    async fn on_node<T: redis::FromRedisValue>(&self, node: Option<&(String, u16)>, cmd: Cmd) -> Result<T, String> {
        let node = node.cloned();
        self.run(move |c| async move {
            match (c, node) {
                (Conn::Cluster(mut c), Some((host, port))) => {
                    let routing = redis::cluster_routing::RoutingInfo::SingleNode(
                        redis::cluster_routing::SingleNodeRoutingInfo::ByAddress { host, port },
                    );
                    let value = c.route_command(cmd, routing).await?;
                    Ok(redis::from_redis_value(value)?)
                }
                (mut c, _) => cmd.query_async(&mut c).await,
            }
        })
        .await
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
        let mut deleted = 0u64;
        // On a cluster every primary holds its own slots: scan each.
        for node in self.nodes(true).await.map_err(StoreError)? {
            let mut cursor: u64 = 0;
            loop {
                let mut scan = redis::cmd("SCAN");
                scan.arg(cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(1000);
                let (next, keys): (u64, Vec<Vec<u8>>) = self.on_node(node.as_ref(), scan).await.map_err(StoreError)?;
                deleted += self.delete_keys(keys).await.map_err(StoreError)?;
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(deleted)
    }

    /// One `DEL` per key (a multi-key `DEL` would span slots): one pipeline
    /// on a standalone server, one call per key on a cluster (a cluster
    /// pipeline must stay in one slot).
    async fn delete_keys(&self, keys: Vec<Vec<u8>>) -> Result<u64, String> {
        if keys.is_empty() {
            return Ok(0);
        }
        self.run(move |mut c| async move {
            if matches!(c, Conn::Single(_)) {
                let mut pipe = redis::pipe();
                for key in keys {
                    pipe.cmd("DEL").arg(key);
                }
                let n: Vec<u64> = pipe.query_async(&mut c).await?;
                return Ok(n.iter().sum());
            }
            let mut deleted = 0;
            for key in keys {
                let n: u64 = redis::cmd("DEL").arg(key).query_async(&mut c).await?;
                deleted += n;
            }
            Ok(deleted)
        })
        .await
    }

    /// Runs one request on a clone of the managed connection within the
    /// operation timeout.
    async fn run<T, F, Fut>(&self, f: F) -> Result<T, String>
    where
        F: FnOnce(Conn) -> Fut,
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

    /// The per-shard aggregate cap: ⌊aggregate_cap / shards⌋.
    fn shard_aggregate_cap(&self) -> i64 {
        cap((self.options.replay_limits.aggregate_cap / usize::from(self.layout.shards)) as u64)
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

/// Decodes the claim script's reply (see `CLAIM`).
fn claim_outcome(reply: &[Value]) -> Result<ClaimOutcome, IdempotencyError> {
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

#[async_trait]
impl ReplayStore for RedisStore {
    async fn keyid_cap_reached(&self, partition: CapKey<'_>, now: i64) -> Result<bool, StoreError> {
        let set = self.layout.keyid_set(partition);
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
        let entry = self.layout.entry(key);
        let held: Option<i64> = self
            .run(move |mut c| async move { redis::cmd("GET").arg(entry).query_async(&mut c).await })
            .await
            .map_err(StoreError)?;
        Ok(held.is_some_and(|expires_at| expires_at >= now))
    }

    async fn insert(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Result<InsertOutcome, StoreError> {
        let keys = self.layout.replay(key);
        let mut invocation = self.scripts.insert.prepare_invoke();
        invocation
            .key(keys.entry)
            .key(keys.keyid_set)
            .key(keys.aggregate_set)
            .arg(self.grace())
            .arg(now)
            .arg(expires_at)
            .arg(keys.member)
            .arg(keys.aggregate_member)
            .arg(cap(self.options.replay_limits.per_keyid_cap as u64))
            .arg(self.shard_aggregate_cap());
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
        let config = self.options.idempotency;
        let keys = self.layout.idem(key);
        let mut invocation = self.scripts.claim.prepare_invoke();
        invocation
            .key(keys.record)
            .key(keys.sender_set)
            .arg(self.grace())
            .arg(now)
            .arg(fingerprint.as_bytes())
            .arg(config.lease_secs)
            .arg(config.window_secs)
            .arg(cap(config.per_sender_cap))
            .arg(keys.member);
        let reply: Vec<Value> = self
            .run(|mut c| async move { invocation.invoke_async(&mut c).await })
            .await
            .map_err(IdempotencyError::Unavailable)?;
        claim_outcome(&reply)
    }

    /// One pipeline: `SCRIPT LOAD` of the claim script (so no `EVALSHA` can
    /// miss it), then one `EVALSHA` per request. Each claim is one atomic
    /// script; a failed round trip answers `Unavailable` for every request
    /// sent in it. Keep batches to a few thousand requests, so that one
    /// pipeline finishes well within [`RedisOptions::op_timeout`].
    async fn claim_many(&self, requests: &[ClaimRequest<'_>], now: i64) -> Vec<Result<ClaimOutcome, IdempotencyError>> {
        let config = self.options.idempotency;
        let mut results: Vec<Result<ClaimOutcome, IdempotencyError>> = Vec::with_capacity(requests.len());
        // One pipeline on a standalone server; on a cluster one per sender
        // (a cluster pipeline must stay in one slot, and a sender's keys
        // share one). Each starts with `SCRIPT LOAD` on its node.
        let cluster = matches!(self.conn, Conn::Cluster(_));
        let mut groups: Vec<(Vec<usize>, Pipeline)> = Vec::new();
        let mut group_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (i, request) in requests.iter().enumerate() {
            // A placeholder, replaced by the reply below.
            results.push(Err(IdempotencyError::Unavailable("redis: no reply".to_owned())));
            let group_key = if cluster { request.key.sender } else { "" };
            let g = *group_of.entry(group_key).or_insert_with(|| {
                let mut pipe = redis::pipe();
                pipe.cmd("SCRIPT").arg("LOAD").arg(&self.scripts.claim_code).ignore();
                groups.push((Vec::new(), pipe));
                groups.len() - 1
            });
            let Some((sent, pipe)) = groups.get_mut(g) else {
                continue;
            };
            let keys = self.layout.idem(request.key);
            pipe.cmd("EVALSHA")
                .arg(self.scripts.claim.get_hash())
                .arg(2)
                .arg(keys.record)
                .arg(keys.sender_set)
                .arg(self.grace())
                .arg(now)
                .arg(request.fingerprint.as_bytes())
                .arg(config.lease_secs)
                .arg(config.window_secs)
                .arg(cap(config.per_sender_cap))
                .arg(keys.member);
            sent.push(i);
        }
        let mut tasks = tokio::task::JoinSet::new();
        for (sent, pipe) in groups {
            let mut conn = self.conn.clone();
            let timeout = self.options.op_timeout;
            tasks.spawn(async move {
                let replies: Result<Vec<Vec<Value>>, String> =
                    match tokio::time::timeout(timeout, pipe.query_async(&mut conn)).await {
                        Ok(replies) => replies.map_err(rd),
                        Err(_) => Err(format!("redis: timed out after {timeout:?}")),
                    };
                (sent, replies)
            });
        }
        while let Some(done) = tasks.join_next().await {
            let (sent, replies) = match done {
                Ok(done) => done,
                // A panicked task leaves its placeholders: `Unavailable`.
                Err(_) => continue,
            };
            let answers: Vec<Result<ClaimOutcome, IdempotencyError>> = match replies {
                Ok(replies) if replies.len() == sent.len() => replies.iter().map(|r| claim_outcome(r)).collect(),
                Ok(replies) => {
                    let e = format!("redis: {} replies to {} claims", replies.len(), sent.len());
                    sent.iter()
                        .map(|_| Err(IdempotencyError::Unavailable(e.clone())))
                        .collect()
                }
                Err(e) => sent
                    .iter()
                    .map(|_| Err(IdempotencyError::Unavailable(e.clone())))
                    .collect(),
            };
            for (i, answer) in sent.into_iter().zip(answers) {
                if let Some(slot) = results.get_mut(i) {
                    *slot = answer;
                }
            }
        }
        results
    }
    async fn complete(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        self.complete_with_notification(key, token, None, now).await
    }

    /// One script: the completion and the notification record, in the
    /// sender's slot.
    async fn complete_with_notification(
        &self,
        key: SenderKey<'_>,
        token: ClaimToken,
        notification_id: Option<&str>,
        now: i64,
    ) -> Result<(), IdempotencyError> {
        crate::notification::check_optional(notification_id)?;
        let keys = self.layout.idem(key);
        let mut invocation = self.scripts.complete.prepare_invoke();
        invocation.key(keys.record).key(keys.sender_set);
        if let Some(notification_id) = notification_id {
            invocation.key(self.layout.notification(key.sender, notification_id));
        }
        invocation
            .arg(self.grace())
            .arg(now)
            .arg(token.0)
            .arg(self.options.idempotency.window_secs)
            .arg(keys.member)
            .arg(key.idempotency_key);
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

    async fn notification_origin(
        &self,
        sender: &str,
        notification_id: &str,
        now: i64,
    ) -> Result<Option<String>, IdempotencyError> {
        crate::notification::check(notification_id)?;
        let record = self.layout.notification(sender, notification_id);
        let fields: (Option<String>, Option<i64>) = self
            .run(move |mut c| async move {
                redis::cmd("HMGET")
                    .arg(record)
                    .arg(&["key", "exp"])
                    .query_async(&mut c)
                    .await
            })
            .await
            .map_err(IdempotencyError::Unavailable)?;
        match fields {
            (None, None) => Ok(None),
            (Some(first), Some(expires_at)) => Ok((expires_at >= now).then_some(first)),
            // The script writes both fields at once: a half record was not
            // written by this store, so it is not trusted as "unknown".
            _ => Err(IdempotencyError::Unavailable(
                "redis: malformed notification record".to_owned(),
            )),
        }
    }

    async fn release(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        let keys = self.layout.idem(key);
        let mut invocation = self.scripts.release.prepare_invoke();
        invocation
            .key(keys.record)
            .key(keys.sender_set)
            .arg(self.grace())
            .arg(now)
            .arg(token.0)
            .arg(keys.member);
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
        let record = self.layout.idem(key).record;
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
        let set = self.layout.sender_set(sender);
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// CRC16-XMODEM (polynomial 0x1021, initial 0), as Redis Cluster uses.
    fn crc16(bytes: &[u8]) -> u16 {
        let mut crc: u16 = 0;
        for &b in bytes {
            crc ^= u16::from(b) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 {
                    (crc << 1) ^ 0x1021
                } else {
                    crc << 1
                };
            }
        }
        crc
    }

    /// The cluster slot of `key`: the CRC16 of its hash tag (the bytes
    /// between the first `{` and the next `}`, when not empty), else of the
    /// whole key, modulo 16,384.
    fn slot(key: &str) -> u16 {
        let bytes = key.as_bytes();
        let hashed = match bytes.iter().position(|&b| b == b'{') {
            Some(open) => match bytes[open + 1..].iter().position(|&b| b == b'}') {
                Some(len) if len > 0 => &bytes[open + 1..open + 1 + len],
                _ => bytes,
            },
            None => bytes,
        };
        crc16(hashed) % 16_384
    }

    fn assert_one_slot(keys: &[&str]) {
        let first = slot(keys[0]);
        for key in keys {
            assert_eq!(slot(key), first, "{key} is not in the slot of {} ({keys:?})", keys[0]);
        }
    }

    #[test]
    fn crc16_matches_the_cluster_specification() {
        // The check value of CRC16-XMODEM and the example of the Redis
        // Cluster specification.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(slot("123456789"), 12_739);
        assert_eq!(slot("{user1000}.following"), slot("{user1000}.followers"));
        assert_eq!(slot("foo{}{bar}"), crc16(b"foo{}{bar}") % 16_384);
        assert_eq!(slot("foo{{bar}}zap"), crc16(b"{bar") % 16_384);
    }

    const KEYIDS: [&str; 6] = ["seller-2026", "", "k{1}", "}{", "kid with spaces", "ключ"];
    const NONCES: [&[u8]; 3] = [b"0123456789abcdef", b"", &[0, 0x7b, 0x7d, 0xff]];
    const SCOPES: [Option<&str>; 3] = [None, Some(""), Some("https://buyer.example/{hook}")];
    const AGENTS: [Option<&str>; 4] = [None, Some(""), Some("https://seller.example/mcp"), Some("a}{:z")];

    #[test]
    fn every_replay_insert_touches_one_slot() {
        for shards in [1, 2, 16, RedisOptions::MAX_REPLAY_SHARDS] {
            for prefix in ["adcp", "tenant:7"] {
                let layout = Layout::new(prefix, shards);
                for keyid in KEYIDS {
                    for nonce in NONCES {
                        for scope in SCOPES {
                            for agent in AGENTS {
                                let key = ReplayKey {
                                    agent,
                                    keyid,
                                    nonce,
                                    scope,
                                };
                                let keys = layout.replay(key);
                                // The insert script's KEYS, and the keys the
                                // read paths use for the same entry.
                                assert_one_slot(&[
                                    &keys.entry,
                                    &keys.keyid_set,
                                    &keys.aggregate_set,
                                    &layout.entry(key),
                                    &layout.keyid_set(key.cap_key()),
                                    &layout.keyid_set(CapKey { agent: None, keyid }),
                                ]);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn replay_shards_spread_keyids_over_distinct_slots() {
        let layout = Layout::new("adcp", 16);
        let mut slots = std::collections::HashSet::new();
        let mut shards = std::collections::HashSet::new();
        for i in 0..200 {
            let keyid = format!("seller-{i}");
            shards.insert(layout.shard(&keyid));
            slots.insert(slot(&layout.keyid_set(CapKey {
                agent: None,
                keyid: &keyid,
            })));
        }
        assert_eq!(shards.len(), 16);
        assert_eq!(slots.len(), 16, "each shard is its own slot");
        // One shard: everything in one slot, whatever the keyid.
        let one = Layout::new("adcp", 1);
        let set = |keyid| one.keyid_set(CapKey { agent: None, keyid });
        assert_one_slot(&[&set("a"), &set("b"), &set("c")]);
    }

    #[test]
    fn agent_keyid_pairs_name_distinct_sets() {
        let layout = Layout::new("adcp", 1);
        // Pairs a separator-based encoding would confuse: every name must
        // differ, and none may be an entry key.
        let pairs: [(Option<&str>, &str); 7] = [
            (None, "k"),
            (Some(""), "k"),
            (Some("a"), "k"),
            (Some("k:a"), ""),
            (None, "k:a"),
            (Some("a:z"), "k"),
            (Some("a"), "k:z"),
        ];
        let names: std::collections::HashSet<String> = pairs
            .iter()
            .map(|&(agent, keyid)| layout.keyid_set(CapKey { agent, keyid }))
            .collect();
        assert_eq!(names.len(), pairs.len(), "{names:?}");
        for name in &names {
            assert!(!name.contains(":n:"), "{name}");
        }
    }

    #[test]
    fn every_idempotency_script_touches_one_slot() {
        let layout = Layout::new("adcp", 1);
        for sender in ["https://seller.example/mcp", "hmac:cred-7", "", "{x}", "}"] {
            for key in ["whk_01HW9D3H8F", "", "{", "a}b"] {
                let keys = layout.idem(SenderKey {
                    sender,
                    idempotency_key: key,
                });
                // claim, complete and release all take KEYS = [record, sender
                // set]; a completion may add its notification record.
                for notification_id in ["ntf_01HW9D3H8F", "", "{n}", "}"] {
                    assert_one_slot(&[
                        &keys.record,
                        &keys.sender_set,
                        &layout.sender_set(sender),
                        &layout.notification(sender, notification_id),
                    ]);
                }
            }
        }
        // Different senders spread over slots.
        let a = layout.sender_set("https://a.example/mcp");
        let b = layout.sender_set("https://b.example/mcp");
        assert_ne!(slot(&a), slot(&b));
    }

    #[test]
    fn cluster_urls_name_their_seed_nodes() {
        let seeds = |url: &str| cluster_seeds(url).map(|r| r.map_err(|e| e.to_string()));
        assert_eq!(seeds("redis://h:6379"), None);
        assert_eq!(seeds("rediss://h:6379"), None);
        assert_eq!(
            seeds("redis+cluster://a:7000,b:7001"),
            Some(Ok(vec!["redis://a:7000".to_owned(), "redis://b:7001".to_owned()]))
        );
        assert_eq!(
            seeds("rediss+cluster://user:p%40ss@a:7000,b:7001/?x=1"),
            Some(Ok(vec![
                "rediss://user:p%40ss@a:7000".to_owned(),
                "rediss://user:p%40ss@b:7001".to_owned()
            ]))
        );
        assert_eq!(
            seeds("redis+cluster://a:7000,"),
            Some(Ok(vec!["redis://a:7000".to_owned()]))
        );
        assert!(matches!(seeds("redis+cluster://"), Some(Err(_))));
        assert!(matches!(seeds("redis+cluster://user@/"), Some(Err(_))));
    }

    #[test]
    fn identifiers_cannot_break_the_layout() {
        let layout = Layout::new("adcp", 1);
        let keys = layout.replay(ReplayKey {
            agent: None,
            keyid: "a}:z",
            nonce: b"{",
            scope: Some("}"),
        });
        assert_eq!(keys.entry, "adcp:replay:{r0}:617d3a7a:n:s7d.7b");
        assert_eq!(keys.keyid_set, "adcp:replay:{r0}:617d3a7a:z");
        let agented = layout.replay(ReplayKey {
            agent: Some("}:a"),
            keyid: "a}:z",
            nonce: b"{",
            scope: Some("}"),
        });
        // Same entry (uniqueness ignores the agent), the agent's own set.
        assert_eq!(agented.entry, keys.entry);
        assert_eq!(agented.member, keys.member);
        assert_eq!(agented.aggregate_member, keys.aggregate_member);
        assert_eq!(agented.keyid_set, "adcp:replay:{r0}:617d3a7a:a:7d3a61:z");
        assert_eq!(keys.aggregate_set, "adcp:replay:{r0}:agg");
        let idem = layout.idem(SenderKey {
            sender: "}",
            idempotency_key: "{",
        });
        assert_eq!(idem.record, "adcp:idem:{s7d}:k:7b");
        assert_eq!(idem.sender_set, "adcp:idem:{s7d}:z");
        assert_eq!(layout.notification("}", "{:"), "adcp:idem:{s7d}:n:7b3a");
    }
}
