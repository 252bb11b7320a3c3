//! The periodic purge of the store's expired rows: SQLite and PostgreSQL
//! keep an expired row until a write touches it or something deletes it,
//! and nothing but a purge deletes expired notification records.

use crate::Gateway;
use adcp_sigbase::Clock;
use adcp_store::PurgeExpired;
use std::sync::Arc;
use std::time::Duration;

/// Longest wait before the first purge: it runs shortly after start (or
/// after one interval, when that is shorter), not one whole interval
/// later, so a restarted gateway soon gives back what piled up.
const FIRST_PURGE_DELAY: Duration = Duration::from_secs(5);

/// What the purge task needs: the store's purge, how often, and the clock
/// expiry is judged by (the verifier's and the store's).
#[derive(Clone)]
pub(crate) struct Purge {
    pub(crate) store: Arc<dyn PurgeExpired>,
    pub(crate) interval: Duration,
    pub(crate) clock: Arc<dyn Clock>,
}

impl Purge {
    /// The purge `options` ask for, if any: a purge handle and a non-zero
    /// interval.
    pub(crate) fn new(
        store: Option<&Arc<dyn PurgeExpired>>,
        interval: Duration,
        clock: Option<&Arc<dyn Clock>>,
    ) -> Option<Self> {
        let store = Arc::clone(store?);
        if interval.is_zero() {
            return None;
        }
        let clock = clock.map_or_else(|| Arc::new(adcp_sigbase::SystemClock) as Arc<dyn Clock>, Arc::clone);
        Some(Self { store, interval, clock })
    }

    /// Purges once shortly after start, then every interval, until `stop`
    /// fires or its sender is dropped (a purge in progress is abandoned:
    /// the next one deletes what it did not). A failure is logged and
    /// counted, never fatal.
    pub(crate) async fn run(self, gateway: Gateway, mut stop: tokio::sync::oneshot::Receiver<()>) {
        let mut wait = self.interval.min(FIRST_PURGE_DELAY);
        loop {
            tokio::select! {
                _ = &mut stop => return,
                () = tokio::time::sleep(wait) => {}
            }
            wait = self.interval;
            let now = self.clock.now();
            let purged = tokio::select! {
                _ = &mut stop => return,
                purged = self.store.purge_expired(now) => purged,
            };
            match purged {
                Ok(rows) => {
                    gateway.metrics().purged(rows);
                    if rows > 0 {
                        tracing::debug!(rows, "purged expired store rows");
                    }
                }
                Err(error) => {
                    gateway.metrics().purge_failed();
                    tracing::warn!(
                        %error,
                        retry_in_secs = self.interval.as_secs(),
                        "purging the store's expired rows failed; retrying at the next interval"
                    );
                }
            }
        }
    }
}
