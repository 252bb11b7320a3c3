//! The SQLite store against the memory store as a model: random sequences
//! of claims, completions, releases, lookups, replay inserts, clock steps
//! and reopenings, sent to two SQLite handles on one file (two processes
//! sharing it, each with its own key index) and to one `MemoryStore`,
//! answer alike at every step.

use adcp_store::{
    ClaimOutcome, ClaimToken, Fingerprint, IdempotencyConfig, IdempotencyError, IdempotencyStore, MemoryStore,
    SenderKey, SqliteOptions, SqliteStore,
};
use adcp_verify::{ReplayKey, ReplayLimits, ReplayStore};
use proptest::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

const NOW: i64 = 1_776_520_800;
const SENDER: &str = "https://seller.example/mcp";
const KEYS: [&str; 3] = ["whk_model_key_a", "whk_model_key_b", "whk_model_key_c"];

#[derive(Debug, Clone)]
enum Op {
    Claim {
        on_b: bool,
        key: usize,
        other_payload: bool,
    },
    Complete {
        on_b: bool,
        key: usize,
    },
    Release {
        on_b: bool,
        key: usize,
    },
    Lookup {
        on_b: bool,
        key: usize,
    },
    Insert {
        on_b: bool,
        nonce: u8,
    },
    /// Seconds forward: nothing, one, past a lease, past the window.
    Advance(i64),
    Reopen {
        b: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let config = IdempotencyConfig::default();
    let steps = prop_oneof![
        Just(0_i64),
        Just(1),
        Just(config.lease_secs + 1),
        Just(config.window_secs + 1)
    ];
    prop_oneof![
        4 => (any::<bool>(), 0..KEYS.len(), any::<bool>())
            .prop_map(|(on_b, key, other)| Op::Claim { on_b, key, other_payload: other }),
        2 => (any::<bool>(), 0..KEYS.len()).prop_map(|(on_b, key)| Op::Complete { on_b, key }),
        1 => (any::<bool>(), 0..KEYS.len()).prop_map(|(on_b, key)| Op::Release { on_b, key }),
        1 => (any::<bool>(), 0..KEYS.len()).prop_map(|(on_b, key)| Op::Lookup { on_b, key }),
        2 => (any::<bool>(), 0..3_u8).prop_map(|(on_b, nonce)| Op::Insert { on_b, nonce }),
        1 => steps.prop_map(Op::Advance),
        1 => any::<bool>().prop_map(|b| Op::Reopen { b }),
    ]
}

/// What both stores must agree on: outcomes without their tokens, which
/// each backend numbers its own way.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Claimed { attempt: u32, lease_expires_at: i64 },
    InProgress { lease_expires_at: i64 },
    Completed,
    Conflict,
    SenderCapReached,
    Done,
    NotOwner,
    Found(bool),
    Replay(adcp_verify::InsertOutcome),
}

fn seen_claim(outcome: &ClaimOutcome) -> Seen {
    match outcome {
        ClaimOutcome::Claimed(claim) => Seen::Claimed {
            attempt: claim.attempt,
            lease_expires_at: claim.lease_expires_at,
        },
        ClaimOutcome::InProgress { lease_expires_at } => Seen::InProgress {
            lease_expires_at: *lease_expires_at,
        },
        ClaimOutcome::Completed => Seen::Completed,
        ClaimOutcome::Conflict => Seen::Conflict,
        ClaimOutcome::SenderCapReached => Seen::SenderCapReached,
    }
}

fn seen_ownership(result: Result<(), IdempotencyError>) -> Seen {
    match result {
        Ok(()) => Seen::Done,
        Err(IdempotencyError::NotOwner) => Seen::NotOwner,
        Err(e) => panic!("store error: {e}"),
    }
}

/// One backend and the last token each key's claim gave it.
struct Side<S> {
    store: S,
    tokens: HashMap<usize, ClaimToken>,
}

impl<S: IdempotencyStore + ReplayStore> Side<S> {
    async fn apply(&mut self, op: &Op, now: i64) -> Option<Seen> {
        let key = |k: usize| SenderKey {
            sender: SENDER,
            idempotency_key: KEYS[k],
        };
        let seen = match *op {
            Op::Claim {
                key: k, other_payload, ..
            } => {
                let fp = [u8::from(other_payload); 32];
                let outcome = self
                    .store
                    .claim(key(k), Fingerprint::from_array(&fp), now)
                    .await
                    .unwrap();
                if let ClaimOutcome::Claimed(claim) = &outcome {
                    self.tokens.insert(k, claim.token);
                }
                seen_claim(&outcome)
            }
            Op::Complete { key: k, .. } => {
                let token = self.tokens.get(&k).copied().unwrap_or(ClaimToken(-1));
                seen_ownership(self.store.complete(key(k), token, now).await)
            }
            Op::Release { key: k, .. } => {
                let token = self.tokens.get(&k).copied().unwrap_or(ClaimToken(-1));
                seen_ownership(self.store.release(key(k), token, now).await)
            }
            Op::Lookup { key: k, .. } => Seen::Found(self.store.lookup(key(k), now).await.unwrap().is_some()),
            Op::Insert { nonce, .. } => {
                let nonce = [nonce];
                let entry = ReplayKey {
                    agent: Some(SENDER),
                    keyid: "model-key",
                    nonce: &nonce,
                    scope: None,
                };
                Seen::Replay(self.store.insert(entry, now + 300, now).await.unwrap())
            }
            Op::Advance(_) | Op::Reopen { .. } => return None,
        };
        Some(seen)
    }
}

fn on_b(op: &Op) -> bool {
    match *op {
        Op::Claim { on_b, .. }
        | Op::Complete { on_b, .. }
        | Op::Release { on_b, .. }
        | Op::Lookup { on_b, .. }
        | Op::Insert { on_b, .. } => on_b,
        Op::Advance(_) | Op::Reopen { .. } => false,
    }
}

static FILES: AtomicUsize = AtomicUsize::new(0);

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn two_sqlite_handles_answer_like_the_memory_store(ops in prop::collection::vec(op(), 1..40)) {
        let dir = std::env::temp_dir().join(format!(
            "adcp-store-model-{}-{}",
            std::process::id(),
            FILES.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path: PathBuf = dir.join("model.sqlite");
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let open = || SqliteStore::open(&path, SqliteOptions::default()).unwrap();
            let mut model = Side {
                store: MemoryStore::new(ReplayLimits::webhook(), IdempotencyConfig::default()).unwrap(),
                tokens: HashMap::new(),
            };
            // Tokens belong to the file, whichever handle got them.
            let mut tokens = HashMap::new();
            let mut a = open();
            let mut b = open();
            let mut now = NOW;
            for (step, op) in ops.iter().enumerate() {
                match *op {
                    Op::Advance(secs) => now += secs,
                    Op::Reopen { b: reopen_b } => {
                        if reopen_b {
                            drop(std::mem::replace(&mut b, open()));
                        } else {
                            drop(std::mem::replace(&mut a, open()));
                        }
                    }
                    _ => {
                        let handle = if on_b(op) { b.clone() } else { a.clone() };
                        let mut side = Side { store: handle, tokens: std::mem::take(&mut tokens) };
                        let got = side.apply(op, now).await;
                        tokens = side.tokens;
                        let want = model.apply(op, now).await;
                        assert_eq!(got, want, "step {step}: {op:?} in {ops:?}");
                    }
                }
            }
        });
        drop(runtime);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
