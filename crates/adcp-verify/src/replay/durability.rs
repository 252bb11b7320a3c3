//! When a replay entry answered before its commit becomes durable.

use super::StoreError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// The boxed wait of a [`Durability`] still pending.
type Pending = Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'static>>;

/// Whether the write behind an answer is durable yet, and how to wait until
/// it is: what [`ReplayStore::insert_early`](super::ReplayStore::insert_early)
/// returns next to its answer.
///
/// A group-committing store can answer an insert as soon as it ran inside
/// the current transaction, and report the commit separately. The caller
/// may keep working meanwhile (the body checks, its own next store
/// operation), but must [`wait`](Self::wait) before it acts on the answer
/// in a way a crash must not undo (accepting the request, forwarding it):
/// until then a crash may lose the entry, and the same request would pass
/// step 12 again. A refusal needs no wait.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use adcp_verify::{Durability, StoreError};
///
/// assert!(Durability::durable().wait().await.is_ok());
/// let lost = Durability::pending(async { Err(StoreError("disk full".into())) });
/// assert!(lost.is_pending());
/// assert!(lost.wait().await.is_err());
/// # });
/// ```
#[must_use = "a pending write must be waited for before the request is accepted"]
pub struct Durability(Option<Pending>);

impl Durability {
    /// Already durable (every store that answers only after its write is).
    pub const fn durable() -> Self {
        Self(None)
    }

    /// Durable once `commit` resolves `Ok`; `Err` means the write was lost
    /// (the transaction that held it did not commit) and the answer it
    /// backed must not be acted on.
    pub fn pending(commit: impl Future<Output = Result<(), StoreError>> + Send + 'static) -> Self {
        Self(Some(Box::pin(commit)))
    }

    /// Whether [`wait`](Self::wait) may have to wait.
    pub const fn is_pending(&self) -> bool {
        self.0.is_some()
    }

    /// Waits until the write is durable.
    ///
    /// # Errors
    ///
    /// The write was lost, or the store could not say.
    pub async fn wait(self) -> Result<(), StoreError> {
        match self.0 {
            None => Ok(()),
            Some(commit) => commit.await,
        }
    }
}

impl Default for Durability {
    fn default() -> Self {
        Self::durable()
    }
}

impl fmt::Debug for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_pending() {
            "Durability::Pending"
        } else {
            "Durability::Durable"
        })
    }
}
