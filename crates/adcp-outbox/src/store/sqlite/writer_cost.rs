//! The writer's work per event, alone: enqueue (leased, as the hand-off
//! does) and a `delivered` outcome for every event, `ADCP_COST_BATCH`
//! events (default 6) and the previous batch's outcomes per transaction,
//! on one thread, against a file with the store's settings.
//!
//! Run it under callgrind for instructions per event (repeatable; the
//! kernel's share is not counted) or on its own for CPU time split into
//! user and system and the bytes written per event (WAL frames and
//! checkpoints):
//!
//! ```text
//! cargo test --release -p adcp-outbox --lib writer_cost --no-run
//! ADCP_COST_EVENTS=3000 ADCP_COST_NO_CLOCK=1 valgrind --tool=callgrind \
//!     target/release/deps/adcp_outbox-HASH --ignored writer_cost --test-threads=1
//! ADCP_COST_EVENTS=30000 target/release/deps/adcp_outbox-HASH --ignored --nocapture writer_cost
//! ```
//!
//! Keys and ids are derived from a counter, so two runs do the same work.

use super::*;
use crate::activity::ActivityStatus;
use crate::breaker::Health;
use crate::store::{AttemptFacts, Finish, Insert, LeaseGrant, Outcome};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A UUID-v4-shaped key from `n` (splitmix64): spread over the key index
/// like real random keys, the same in every run.
fn key(n: u64) -> String {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let a = mix(n.wrapping_add(0x9E37_79B9_7F4A_7C15));
    let b = mix(a);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        a & 0xffff,
        (b >> 52) & 0xfff,
        (b >> 40) & 0xfff,
        b & 0xffff_ffff_ffff
    )
}

fn row(i: u64, now: i64) -> Insert {
    let key = key(i);
    let body = format!(
        r#"{{"idempotency_key":"{key}","notification_type":"account.status_changed","notification_id":"n-{i}","fired_at":"2026-12-07T00:00:00Z","account":{{"account_id":"acc_{i}","status":"active","previous_status":"pending_approval","brand":{{"domain":"brand.example"}},"operator":"op.example"}},"reason":"approved after review"}}"#
    );
    Insert {
        id: EventId::from_stored(format!("{}{i:016}", EventId::time_floor(now))),
        signing_scope: "default".into(),
        idempotency_key: key,
        fingerprint: [7; 32],
        body_size: body.len() as u64,
        body: body.into_bytes(),
        key_id: None,
        notification_type: Some("account.status_changed".into()),
        notification_id: Some(format!("n-{i}")),
        subscriber_id: None,
        sequence_number: None,
        channel_id: None,
        principal: Some("principal-1".into()),
        resources: vec![],
        url: "http://127.0.0.1:9999/webhooks".into(),
        origin: "http://127.0.0.1:9999".into(),
        operation_id: None,
        auth_scheme: None,
        auth_credentials: None,
        coalescing_key: None,
        coalescing_window_ms: 0,
        enqueued_at_ms: now,
        horizon_ms: 86_400_000,
    }
}

fn delivered(c: Claimed, now: i64) -> Finish {
    Finish {
        id: c.id,
        lease_token: c.lease_token,
        origin: c.origin,
        outcome: Outcome::Delivered,
        facts: Some(AttemptFacts {
            status: ActivityStatus::Success,
            http_status: Some(200),
            response_time_ms: Some(3),
            error_message: None,
            completed_at_ms: now,
            health: Health::Up,
        }),
        now_ms: now,
    }
}

/// This thread's CPU time (user, system) in clock ticks.
fn thread_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rfind(')')
        .map(|i| stat[i + 2..].split(' ').collect())
        .unwrap_or_default();
    let at = |i: usize| fields.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
    (at(11), at(12))
}

/// Bytes this process has written (`wchar` of `/proc/self/io`).
fn written() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("wchar:").and_then(|v| v.trim().parse().ok()))
        .unwrap_or(0)
}

#[test]
#[ignore = "a cost harness, not a test: see the module documentation"]
fn writer_cost() {
    let n = env_u64("ADCP_COST_EVENTS", 20_000);
    let per_commit = env_u64("ADCP_COST_BATCH", 6).max(1);
    let dir = std::env::temp_dir().join(format!("adcp-writer-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conn = Connection::open(dir.join("outbox.sqlite")).unwrap();
    configure(&conn, Duration::from_secs(5)).unwrap();
    conn.set_prepared_statement_cache_capacity(64);
    migrate_sqlite(&conn, "adcp_outbox_").unwrap();
    let q = Sql::new("adcp_outbox_");
    let policy = BreakerPolicy::default();
    // The tick counters are plain reads; the wall clock is left out under
    // valgrind (ADCP_COST_NO_CLOCK) only to keep its output terse.
    let clock = std::env::var_os("ADCP_COST_NO_CLOCK").is_none();
    let (ticks0, bytes0, started) = (thread_ticks(), written(), std::time::Instant::now());
    let mut outcomes: Vec<Finish> = Vec::new();
    let mut now: i64 = 1_800_000_000_000;
    let mut i = 0;
    while i < n {
        now += 1;
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut next = Vec::new();
        for _ in 0..per_commit {
            let grant = LeaseGrant {
                token: i64::try_from(i).unwrap(),
                owner: "cost".into(),
                until_ms: now + 60_000,
            };
            let (_, claimed) = enqueue::enqueue_in(&conn, &q, &row(i, now), Some(&grant)).unwrap();
            next.push(delivered(claimed.unwrap(), now));
            i += 1;
        }
        for f in outcomes.drain(..) {
            assert!(finish::finish_in(&conn, &q, &f, &policy).unwrap());
        }
        conn.execute_batch("COMMIT").unwrap();
        outcomes = next;
    }
    let ticks = thread_ticks();
    let per_event = |x: f64| x / n as f64;
    // USER_HZ: 100 on Linux (reading it from the auxiliary vector trips
    // valgrind).
    let tick_us = 1e6 / 100.0;
    println!(
        "{n} events, {per_commit} per commit: user {:.1} µs/event, system {:.1} µs/event, {:.0} bytes written/event",
        per_event((ticks.0 - ticks0.0) as f64 * tick_us),
        per_event((ticks.1 - ticks0.1) as f64 * tick_us),
        per_event((written() - bytes0) as f64),
    );
    if clock {
        println!("wall {:.1} µs/event", per_event(started.elapsed().as_secs_f64() * 1e6));
    }
    drop(conn);
    std::fs::remove_dir_all(&dir).unwrap();
}
