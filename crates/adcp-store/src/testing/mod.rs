//! The contract every store backend passes (feature `testing`), for the
//! backends of this crate and for third-party ones alike.
//!
//! The cases ([`cases`]) pin down what the receiver relies on: the replay
//! caps reject instead of evicting, TTL boundaries are inclusive, one
//! claim wins per key under concurrency, leases are taken over with a new
//! fencing token, notification records keep their first key, and so on. A
//! backend provides fresh, empty stores through [`Backend`] (or, for a
//! shared server where every store lives in a namespace of its own,
//! through [`Tier`] wrapped in [`Shared`]); [`contract_tests!`] then
//! expands to one `#[test]` per case, and [`run_all`] runs every case in
//! one call.
//!
//! A third-party backend, in its own crate's tests (with
//! `adcp-store = { version = "…", features = ["testing"] }` among the
//! dev-dependencies; the in-memory stores stand in for it here):
//!
//! ```
//! use adcp_store::{IdempotencyConfig, MemoryIdempotencyStore};
//! use adcp_store::testing::{self, Backend};
//! use adcp_verify::{MemoryReplayStore, ReplayLimits};
//! use async_trait::async_trait;
//! use std::sync::Arc;
//!
//! /// Makes fresh, empty stores of the backend under test.
//! struct MyBackend;
//!
//! #[async_trait]
//! impl Backend for MyBackend {
//!     type Replay = MemoryReplayStore;
//!     type Idem = MemoryIdempotencyStore;
//!
//!     async fn new() -> Self {
//!         MyBackend // connect, create a temporary directory, …
//!     }
//!
//!     async fn replay(&self, limits: ReplayLimits) -> Arc<MemoryReplayStore> {
//!         Arc::new(MemoryReplayStore::new(limits))
//!     }
//!
//!     async fn idem(&self, config: IdempotencyConfig) -> Arc<MemoryIdempotencyStore> {
//!         Arc::new(MemoryIdempotencyStore::new(config).expect("a valid config"))
//!     }
//!
//!     async fn cleanup(&self) {} // drop what `replay` and `idem` created
//! }
//!
//! // One `#[test]` per case (each on a fresh backend and runtime) ...
//! testing::contract_tests!(MyBackend);
//!
//! // ... or every case, one after another, in one call.
//! # fn main() {
//! testing::block_on(testing::run_all::<MyBackend>());
//! # }
//! ```

// A contract case fails the way a test does: by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod cases;

use crate::idempotency::{IdempotencyConfig, IdempotencyStore};
use adcp_verify::{ReplayLimits, ReplayStore};
use async_trait::async_trait;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// The instant (Unix seconds) the cases run at: every case passes `now`
/// explicitly, around this value.
pub const NOW: i64 = 1_776_520_800;
/// One day in seconds, the shortest idempotency window the cases use.
pub const DAY: i64 = 86_400;

/// Makes fresh, empty stores of one backend and removes them afterwards.
/// One value serves one case: [`run`] creates it, hands it to the case
/// and calls [`cleanup`](Backend::cleanup), even when the case panics.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// The replay store the backend opens.
    type Replay: ReplayStore + 'static;
    /// The idempotency store the backend opens.
    type Idem: IdempotencyStore + 'static;
    /// A backend ready to open stores (a temporary directory, a
    /// connection, …).
    async fn new() -> Self;
    /// A fresh, empty replay store enforcing `limits`.
    async fn replay(&self, limits: ReplayLimits) -> Arc<Self::Replay>;
    /// A fresh, empty idempotency store with `config`.
    async fn idem(&self, config: IdempotencyConfig) -> Arc<Self::Idem>;
    /// Removes everything the stores created (files, schemas, keys).
    async fn cleanup(&self);
}

/// A shared tier (PostgreSQL, Redis): every store it opens lives in a
/// namespace of its own, removed afterwards. [`Shared`] makes it a
/// [`Backend`].
#[async_trait]
pub trait Tier: Send + Sync + 'static {
    /// The store serving both duties.
    type Store: ReplayStore + IdempotencyStore + 'static;
    /// A store in a fresh namespace, with these caps and settings.
    async fn open(replay_limits: ReplayLimits, idempotency: IdempotencyConfig) -> Self::Store;
    /// Removes everything `store` wrote.
    async fn remove(store: &Self::Store);
}

/// The [`Backend`] of a [`Tier`]: remembers the stores it opened and
/// removes them in `cleanup`. Settings not under test are the defaults
/// (webhook replay caps, default idempotency settings).
pub struct Shared<T: Tier> {
    stores: Mutex<Vec<Arc<T::Store>>>,
}

impl<T: Tier> Shared<T> {
    async fn open(&self, replay_limits: ReplayLimits, idempotency: IdempotencyConfig) -> Arc<T::Store> {
        let store = Arc::new(T::open(replay_limits, idempotency).await);
        self.stores.lock().unwrap().push(Arc::clone(&store));
        store
    }
}

#[async_trait]
impl<T: Tier> Backend for Shared<T> {
    type Replay = T::Store;
    type Idem = T::Store;

    async fn new() -> Self {
        Shared {
            stores: Mutex::new(Vec::new()),
        }
    }

    async fn replay(&self, limits: ReplayLimits) -> Arc<T::Store> {
        self.open(limits, IdempotencyConfig::default()).await
    }

    async fn idem(&self, config: IdempotencyConfig) -> Arc<T::Store> {
        self.open(ReplayLimits::webhook(), config).await
    }

    async fn cleanup(&self) {
        let stores = std::mem::take(&mut *self.stores.lock().unwrap());
        for store in stores {
            T::remove(&store).await;
        }
    }
}

/// Runs `case` against a fresh backend, cleans up even when it panics
/// (the panic is then resumed). Call it inside a Tokio runtime: cases
/// spawn tasks.
pub async fn run<B, F, Fut>(case: F)
where
    B: Backend,
    F: FnOnce(Arc<B>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let backend = Arc::new(B::new().await);
    let result = tokio::spawn(case(Arc::clone(&backend))).await;
    backend.cleanup().await;
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// Runs every case of the contract against `B`, one after another, each
/// on a fresh backend ([`run`]); the first failing case panics, and its
/// name is the last one printed to stderr.
pub async fn run_all<B: Backend>() {
    crate::__contract_tests!(@all @body B);
}

/// Runs `future` to completion on a new multi-thread Tokio runtime (four
/// workers, every driver enabled), as each test of [`contract_tests!`]
/// does.
///
/// # Panics
///
/// When the runtime cannot be built.
pub fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a Tokio runtime")
        .block_on(future)
}

/// Expands to one `#[test]` per contract case for a [`Backend`], each on
/// a fresh backend and a runtime of its own ([`block_on`], [`run`]); the
/// tests are named after the [`cases`]. `contract_tests!(sequential NAME,
/// Backend)` instead defines one `async fn NAME()` running every case
/// one after another (for a backend whose fixture is shared by the cases
/// and owned by one test). The caller needs no Tokio dependency of its
/// own.
///
/// See the [module docs](self) for an example.
#[doc(inline)]
pub use crate::__contract_tests as contract_tests;

#[doc(hidden)]
#[macro_export]
macro_rules! __contract_tests {
    ($backend:ty) => {
        $crate::__contract_tests!(@all @cases $backend);
    };
    (sequential $name:ident, $backend:ty) => {
        async fn $name() {
            $crate::__contract_tests!(@all @body $backend);
        }
    };
    (@all @$mode:ident $($args:tt)*) => {
        $crate::__contract_tests!(@$mode $($args)*;
            replay_first_sighting_then_replay, replay_ttl_boundary_is_inclusive, replay_expired_entry_is_replaced,
            replay_already_expired_insert_stores_nothing, replay_per_keyid_cap_rejects_instead_of_evicting,
            replay_is_reported_even_at_the_cap, replay_aggregate_cap_rejects_every_keyid,
            replay_keyid_cap_is_reported_before_aggregate_cap, replay_zero_caps_refuse_everything,
            replay_expired_entries_free_capacity, replay_scope_separates_entries,
            replay_concurrent_inserts_of_one_key_yield_one_insert, replay_concurrent_inserts_never_exceed_the_keyid_cap,
            replay_concurrent_inserts_never_exceed_the_aggregate_cap,
            replay_agents_sharing_a_keyid_have_their_own_cap, replay_uniqueness_ignores_the_agent,
            replay_without_agent_counts_per_keyid, replay_expiry_frees_the_agent_keyid_count,
            replay_concurrent_agents_never_exceed_their_own_cap,
            idem_claim_complete_then_duplicate, idem_in_progress_then_takeover_after_lease,
            idem_conflict_on_changed_payload, idem_release_lets_a_retry_claim, idem_window_expiry,
            idem_sender_cap_rejects_instead_of_evicting, idem_senders_are_isolated, idem_aliases_share_one_keyspace,
            idem_concurrent_claims_have_one_winner_per_key, idem_rejects_long_fingerprints,
            idem_claim_many_answers_each_request_like_claim, idem_claim_many_takes_over_an_expired_lease_once,
            idem_concurrent_batched_claims_have_one_winner_per_key,
            notification_recorded_on_complete, notification_not_recorded_without_ownership,
            notification_keeps_the_first_key_across_re_emissions,
            notification_concurrent_re_emissions_agree_on_one_first_key, notification_none_completes_like_complete,
            notification_expires_with_the_window, notification_aliases_share_one_keyspace,
            notification_senders_are_isolated, notification_rejects_long_ids
        );
    };
    (@cases $backend:ty; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::testing::block_on($crate::testing::run::<$backend, _, _>(|b| async move {
                    $crate::testing::cases::$case(&*b).await
                }));
            }
        )*
    };
    (@body $backend:ty; $($case:ident),* $(,)?) => {
        $(
            ::std::eprintln!("adcp-store contract case {}", ::std::stringify!($case));
            $crate::testing::run::<$backend, _, _>(|b| async move {
                $crate::testing::cases::$case(&*b).await
            })
            .await;
        )*
    };
}
