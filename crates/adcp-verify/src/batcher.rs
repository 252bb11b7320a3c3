//! Ed25519 signatures of concurrent requests checked together, on threads
//! of their own: [`SignatureBatcher`].
//!
//! A server verifying requests one by one pays a full double-scalar
//! multiplication per signature. Under load many requests are waiting for
//! that step at the same moment; handed to a batcher they are checked as
//! one random linear combination ([`verify_ed25519_batch`]), which costs
//! about half as much per signature at a few dozen.

use adcp_sigbase::crypto::{verify_ed25519_batch, Algorithm, Ed25519BatchItem, VerifyingKey};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;

/// The most signatures in one batch unless configured
/// ([`SignatureBatcher::start`]).
pub const DEFAULT_MAX_BATCH: usize = 64;

/// How many signatures a batcher thread checks one at a time after a
/// batch failed.
pub const FALLBACK_SIGNATURES: usize = 256;

/// Checks the Ed25519 signatures of concurrent verifications in batches,
/// on its own threads. Cloning shares the threads; they end when the last
/// clone is dropped.
///
/// Nothing waits to fill a batch: a thread takes the first signature
/// queued and every other one already queued behind it (up to the batch
/// limit), so a lone request is checked alone, at once, and batches grow
/// only when requests arrive faster than they are checked. A batch that
/// fails is checked again one signature at a time, so each request gets
/// its own answer, and the thread checks the next
/// [`FALLBACK_SIGNATURES`] alone before it batches again: a stream of bad
/// signatures costs about what single verification costs.
///
/// Every honestly made signature gets the answer single verification
/// gives it; see [`verify_ed25519_batch`] for the one kind of signature,
/// crafted by the key's own holder, that the two may judge differently.
/// That is why batching is opt-in.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use adcp_verify::SignatureBatcher;
/// let batcher = SignatureBatcher::start(1, 64)?;
/// // Verifier::new(..).with_signature_batcher(batcher.clone())
/// # drop(batcher);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SignatureBatcher {
    queue: Sender<Job>,
    max_batch: usize,
    counts: Arc<Counts>,
}

/// What the batcher threads counted.
#[derive(Debug, Default)]
struct Counts {
    /// Groups taken from the queue (a lone signature is a group of one).
    groups: AtomicU64,
    /// Signatures checked.
    signatures: AtomicU64,
    /// Groups of several whose batch check failed.
    failed_batches: AtomicU64,
}

/// What a [`SignatureBatcher`] has done since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatcherStats {
    /// Groups of signatures taken from the queue at once; a lone
    /// signature is a group of one. `signatures / groups` is the mean
    /// batch size.
    pub groups: u64,
    /// Signatures checked.
    pub signatures: u64,
    /// Batches that failed and were checked again one signature at a time.
    pub failed_batches: u64,
}

impl std::fmt::Debug for SignatureBatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignatureBatcher")
            .field("max_batch", &self.max_batch)
            .finish_non_exhaustive()
    }
}

/// One signature to check.
struct Job {
    key: VerifyingKey,
    message: Vec<u8>,
    signature: Vec<u8>,
    answer: oneshot::Sender<bool>,
}

impl SignatureBatcher {
    /// Starts `threads` batcher threads (at least one) taking up to
    /// `max_batch` signatures (at least one) per batch.
    ///
    /// # Errors
    ///
    /// A thread could not be spawned.
    pub fn start(threads: usize, max_batch: usize) -> std::io::Result<Self> {
        let (queue, jobs) = mpsc::channel::<Job>();
        let jobs = Arc::new(Mutex::new(jobs));
        let max_batch = max_batch.max(1);
        let counts = Arc::new(Counts::default());
        for i in 0..threads.max(1) {
            let jobs = Arc::clone(&jobs);
            let counts = Arc::clone(&counts);
            std::thread::Builder::new()
                .name(format!("adcp-sig-batch-{i}"))
                .spawn(move || serve(&jobs, max_batch, &counts))?;
        }
        Ok(Self {
            queue,
            max_batch,
            counts,
        })
    }

    /// What the threads have done so far.
    #[must_use]
    pub fn stats(&self) -> BatcherStats {
        BatcherStats {
            groups: self.counts.groups.load(Ordering::Relaxed),
            signatures: self.counts.signatures.load(Ordering::Relaxed),
            failed_batches: self.counts.failed_batches.load(Ordering::Relaxed),
        }
    }

    /// The most signatures in one batch.
    #[must_use]
    pub fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// Whether `signature` by `key` over `message` verifies, checked
    /// with whatever other signatures are queued meanwhile. `None` when
    /// the key is not an Ed25519 key or the batcher's threads are gone:
    /// check the signature yourself.
    pub async fn verify(&self, key: &VerifyingKey, message: &[u8], signature: Vec<u8>) -> Option<bool> {
        if key.algorithm() != Algorithm::Ed25519 {
            return None;
        }
        let (answer, answered) = oneshot::channel();
        let job = Job {
            key: key.clone(),
            message: message.to_vec(),
            signature,
            answer,
        };
        self.queue.send(job).ok()?;
        answered.await.ok()
    }
}

/// A batcher thread: until every sender is gone, takes the first queued
/// signature and those behind it, checks them, answers each.
fn serve(jobs: &Mutex<Receiver<Job>>, max_batch: usize, counts: &Counts) {
    let mut batch: Vec<Job> = Vec::with_capacity(max_batch);
    let mut alone_for = 0_usize;
    loop {
        {
            // One thread at a time gathers; the others check meanwhile.
            let jobs = jobs.lock().unwrap_or_else(PoisonError::into_inner);
            match jobs.recv() {
                Ok(job) => batch.push(job),
                Err(_) => return,
            }
            while batch.len() < max_batch {
                match jobs.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            }
        }
        counts.groups.fetch_add(1, Ordering::Relaxed);
        counts.signatures.fetch_add(batch.len() as u64, Ordering::Relaxed);
        let batched = batch.len() > 1 && alone_for == 0;
        let together = batched && batch_verifies(&batch);
        if batched && !together {
            counts.failed_batches.fetch_add(1, Ordering::Relaxed);
            alone_for = FALLBACK_SIGNATURES;
        } else if !batched {
            alone_for = alone_for.saturating_sub(batch.len());
        }
        for job in batch.drain(..) {
            let ok = together || verifies(&job);
            // A caller that stopped waiting needs no answer.
            let _ = job.answer.send(ok);
        }
    }
}

fn batch_verifies(batch: &[Job]) -> bool {
    let items: Vec<Ed25519BatchItem<'_>> = batch
        .iter()
        .map(|job| Ed25519BatchItem {
            key: &job.key,
            message: &job.message,
            signature: &job.signature,
        })
        .collect();
    verify_ed25519_batch(&items).is_ok()
}

fn verifies(job: &Job) -> bool {
    job.key.verify(Algorithm::Ed25519, &job.message, &job.signature).is_ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use adcp_sigbase::crypto::SigningKey;

    fn signed(seed: u8, message: &[u8]) -> (VerifyingKey, Vec<u8>) {
        let key = SigningKey::ed25519_from_seed(&[seed; 32]).unwrap();
        (key.verifying_key(), key.sign(message).unwrap().as_bytes().to_vec())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_signatures_get_their_own_answers() {
        let batcher = SignatureBatcher::start(2, 16).unwrap();
        let mut tasks = Vec::new();
        for i in 0..200_u8 {
            let batcher = batcher.clone();
            tasks.push(tokio::spawn(async move {
                let message = [i; 48];
                let (key, mut signature) = signed(i % 7 + 1, &message);
                // Every fifth signature is tampered with.
                let bad = i % 5 == 0;
                if bad {
                    signature[3] ^= 1;
                }
                (bad, batcher.verify(&key, &message, signature).await)
            }));
        }
        for task in tasks {
            let (bad, answer) = task.await.unwrap();
            assert_eq!(answer, Some(!bad));
        }
        let stats = batcher.stats();
        assert_eq!(stats.signatures, 200);
        assert!(stats.groups >= 1 && stats.groups <= 200, "{stats:?}");
    }

    #[tokio::test]
    async fn a_lone_signature_and_a_wrong_message_are_judged_as_single_verification_judges_them() {
        let batcher = SignatureBatcher::start(1, 64).unwrap();
        let (key, signature) = signed(9, b"base");
        assert_eq!(batcher.verify(&key, b"base", signature.clone()).await, Some(true));
        assert_eq!(batcher.verify(&key, b"other base", signature).await, Some(false));
        let short = vec![0_u8; 10];
        assert_eq!(batcher.verify(&key, b"base", short).await, Some(false));
    }

    #[tokio::test]
    async fn keys_of_other_algorithms_are_left_to_the_caller() {
        let batcher = SignatureBatcher::start(1, 64).unwrap();
        let p256 = SigningKey::generate_p256().unwrap();
        let signature = p256.sign(b"base").unwrap().as_bytes().to_vec();
        assert_eq!(batcher.verify(&p256.verifying_key(), b"base", signature).await, None);
    }

    #[test]
    fn a_failed_batch_is_checked_again_alone_then_the_next_signatures_too() {
        let (queue, jobs) = mpsc::channel::<Job>();
        let mut answers = Vec::new();
        let bad = [2_u8, 6];
        for i in 0..12_u8 {
            let message = [i; 32];
            let (key, mut signature) = signed(i + 1, &message);
            if bad.contains(&i) {
                signature[0] ^= 1;
            }
            let (answer, answered) = oneshot::channel();
            queue
                .send(Job {
                    key,
                    message: message.to_vec(),
                    signature,
                    answer,
                })
                .unwrap();
            answers.push(answered);
        }
        drop(queue);
        let counts = Counts::default();
        // Groups of four: the first fails as a batch; the second, with a
        // bad signature too, is already checked one by one.
        serve(&Mutex::new(jobs), 4, &counts);
        let got: Vec<bool> = answers.into_iter().map(|mut a| a.try_recv().unwrap()).collect();
        let expected: Vec<bool> = (0..12_u8).map(|i| !bad.contains(&i)).collect();
        assert_eq!(got, expected);
        assert_eq!(counts.groups.load(Ordering::Relaxed), 3);
        assert_eq!(counts.failed_batches.load(Ordering::Relaxed), 1);
        assert_eq!(counts.signatures.load(Ordering::Relaxed), 12);
    }
}
