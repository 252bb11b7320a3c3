//! Attempts in flight per origin, and the hand-off of events enqueued in
//! this process straight to its dispatcher.
//!
//! An event enqueued where a dispatcher runs, with a free slot for its
//! origin, is inserted already leased for its first attempt (the claim
//! folded into the enqueue's write) and handed to the dispatcher over a
//! channel: no claim scan, no second write before the attempt, no wait
//! for the claim loop. Everything else (held events, retries, other
//! processes' events, a full dispatcher) goes through the claim loop as
//! before.

use super::DispatchMetrics;
use crate::store::{Claimed, LeaseGrant};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::mpsc;

#[derive(Default)]
struct Counts {
    total: usize,
    per_origin: HashMap<String, usize>,
    /// A claim is under way with a snapshot of these counts: hand-offs
    /// wait until it is counted, so no origin exceeds its cap.
    claiming: bool,
}

impl Counts {
    fn take(&mut self, origin: &str) {
        self.total += 1;
        *self.per_origin.entry(origin.to_owned()).or_default() += 1;
    }
}

/// Attempts in flight in this process, in total and per origin: counted
/// when a slot is taken (a claim or a hand-off), released when the
/// outcome is recorded. The metrics' gauge follows every change.
pub(super) struct InFlight {
    counts: Mutex<Counts>,
    metrics: Arc<DispatchMetrics>,
}

impl InFlight {
    pub(super) fn new(metrics: Arc<DispatchMetrics>) -> Self {
        Self {
            counts: Mutex::default(),
            metrics,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts a claim: the free slots and the per-origin counts, or `None`
    /// when every slot is taken.
    pub(super) fn begin_claim(&self, concurrency: usize) -> Option<(usize, HashMap<String, usize>)> {
        let mut c = self.lock();
        if c.total >= concurrency {
            return None;
        }
        c.claiming = true;
        Some((concurrency - c.total, c.per_origin.clone()))
    }

    /// Ends a claim, counting what it leased.
    pub(super) fn end_claim<'a>(&self, origins: impl IntoIterator<Item = &'a str>) {
        let mut c = self.lock();
        for origin in origins {
            c.take(origin);
        }
        c.claiming = false;
        self.metrics.set_in_flight(c.total);
    }

    /// Takes a slot for `origin` if one is free and no claim is under way.
    fn try_take(&self, origin: &str, concurrency: usize, per_origin_cap: usize) -> bool {
        let mut c = self.lock();
        if c.claiming || c.total >= concurrency || c.per_origin.get(origin).copied().unwrap_or(0) >= per_origin_cap {
            return false;
        }
        c.take(origin);
        self.metrics.set_in_flight(c.total);
        true
    }

    /// Gives back the slot of one attempt.
    pub(super) fn remove(&self, origin: &str) {
        let mut c = self.lock();
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.per_origin.get_mut(origin) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                c.per_origin.remove(origin);
            }
        }
        self.metrics.set_in_flight(c.total);
    }
}

/// A running dispatcher's door for events enqueued in its process.
pub(crate) struct Handoff {
    in_flight: Arc<InFlight>,
    concurrency: usize,
    per_destination: usize,
    lease_ms: i64,
    owner: String,
    tx: mpsc::UnboundedSender<Claimed>,
}

impl Handoff {
    pub(super) fn new(
        in_flight: Arc<InFlight>,
        concurrency: usize,
        per_destination: usize,
        lease_ms: i64,
        owner: String,
        tx: mpsc::UnboundedSender<Claimed>,
    ) -> Self {
        Self {
            in_flight,
            concurrency,
            per_destination,
            lease_ms,
            owner,
            tx,
        }
    }

    /// A slot for an event to `origin` enqueued at `now_ms`, if the
    /// dispatcher has one free; its lease starts now.
    pub(crate) fn reserve(self: &Arc<Self>, origin: &str, now_ms: i64, token: i64) -> Option<Reservation> {
        if self.tx.is_closed() || !self.in_flight.try_take(origin, self.concurrency, self.per_destination) {
            return None;
        }
        Some(Reservation {
            handoff: Arc::clone(self),
            origin: origin.to_owned(),
            grant: LeaseGrant {
                token,
                owner: self.owner.clone(),
                until_ms: now_ms.saturating_add(self.lease_ms),
            },
            armed: true,
        })
    }
}

/// One slot taken for a hand-off: given back when dropped unless the
/// event was handed over ([`start`](Self::start)).
pub(crate) struct Reservation {
    handoff: Arc<Handoff>,
    origin: String,
    grant: LeaseGrant,
    armed: bool,
}

impl Reservation {
    /// The lease to insert the event with.
    pub(crate) fn grant(&self) -> &LeaseGrant {
        &self.grant
    }

    /// Hands the leased event to the dispatcher; gives it back (`Some`)
    /// when the dispatcher has stopped (its lease is then the caller's to
    /// release).
    pub(crate) fn start(mut self, claimed: Claimed) -> Option<Claimed> {
        match self.handoff.tx.send(claimed) {
            Ok(()) => {
                // The dispatcher owns the slot now; its finisher frees it.
                self.armed = false;
                None
            }
            Err(mpsc::error::SendError(claimed)) => Some(claimed),
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.armed {
            self.handoff.in_flight.remove(&self.origin);
        }
    }
}

/// Where an [`Outbox`](crate::Outbox) finds the dispatcher running on it
/// in this process, if any (shared by the outbox's clones).
#[derive(Default)]
pub(crate) struct HandoffSlot(RwLock<Option<Arc<Handoff>>>);

impl HandoffSlot {
    /// The running dispatcher's door.
    pub(crate) fn current(&self) -> Option<Arc<Handoff>> {
        self.0.read().ok().and_then(|h| h.clone())
    }

    /// Installs `handoff` (a later dispatcher on the same outbox replaces
    /// an earlier one).
    pub(super) fn set(&self, handoff: &Arc<Handoff>) {
        if let Ok(mut h) = self.0.write() {
            *h = Some(Arc::clone(handoff));
        }
    }

    /// Removes `handoff` if it is the one installed.
    pub(super) fn clear(&self, handoff: &Arc<Handoff>) {
        if let Ok(mut h) = self.0.write() {
            if h.as_ref().is_some_and(|current| Arc::ptr_eq(current, handoff)) {
                *h = None;
            }
        }
    }
}
