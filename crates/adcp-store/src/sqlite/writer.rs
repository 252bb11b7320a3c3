//! Group commit: one thread owns the connection and runs every operation,
//! many per transaction.
//!
//! With `synchronous=FULL` each commit costs an fsync, and the fsync, not
//! the SQL, bounds a store that commits once per operation. The writer
//! takes one job (blocking), drains whatever else is already queued (up to
//! [`MAX_BATCH`] jobs), runs them in arrival order inside one
//! `BEGIN IMMEDIATE` transaction, each in a savepoint of its own, and
//! commits once. Callers are answered only after that commit, so an
//! acknowledged write is on disk, exactly as when every operation was its
//! own transaction; concurrent callers merely share the fsync.
//!
//! A job whose SQL fails is rolled back to its savepoint and answers its own
//! error; the others are unaffected. When a failure rolled back the whole
//! transaction anyway (SQLite may do so on `SQLITE_FULL`, I/O errors or
//! `SQLITE_BUSY`), the jobs that had succeeded in it are run again in a new
//! transaction: none of them was answered yet, so nothing acknowledged is
//! lost and none is answered for effects that were undone. If `BEGIN` or
//! `COMMIT` fails, every job of the batch answers that error.

use rusqlite::Connection;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::thread::JoinHandle;
use tokio::sync::oneshot;

/// Most jobs one transaction takes: bounds how long the write lock is held
/// (other processes sharing the file wait for it) and how long the first
/// job of a batch waits for the last.
const MAX_BATCH: usize = 256;

/// WAL pages after which a commit checkpoints (`PRAGMA wal_autocheckpoint`).
///
/// A checkpoint runs inside the commit that crosses this many pages, with
/// every caller of that batch waiting while pages are copied to the
/// database file and it is fsynced; a page written several times in
/// between is copied once. Each event of the replay and idempotency store
/// dirties random leaves, so at SQLite's default (1,000) checkpoints were
/// about a fifth of the writer's system time; at 16,000 (a WAL of up to
/// about 64 MiB at 4 KiB pages) the gateway on that store handles about
/// 15 % more events per second (docs/performance.md). Moving the
/// checkpoints to a second connection instead was slower: under sustained
/// writes its `PASSIVE` checkpoints never let the WAL restart.
const WAL_AUTOCHECKPOINT_PAGES: i64 = 16_000;

/// Statements the writer runs around the jobs.
const BEGIN: &str = "BEGIN IMMEDIATE";
const COMMIT: &str = "COMMIT";
/// The savepoint each job runs in.
const SAVEPOINT: &str = "SAVEPOINT adcp_job";
const RELEASE: &str = "RELEASE adcp_job";
const ROLLBACK_TO: &str = "ROLLBACK TO adcp_job";

/// One queued operation, type-erased so one channel carries them all.
trait Job: Send {
    /// Runs the operation on the writer's connection, inside the batch
    /// transaction, and keeps its result for [`answer`](Job::answer).
    /// `Err` (its message) when its SQL failed. May run again if the batch
    /// transaction was lost before the commit.
    fn run(&mut self, conn: &Connection) -> Result<(), String>;
    /// Sends the caller its kept result, or `error` instead.
    fn answer(self: Box<Self>, error: Option<String>);
    /// Whether it runs in a savepoint of its own (see
    /// [`SqliteWriter::submit_unguarded`]).
    fn guarded(&self) -> bool;
}

/// A [`Job`] running `f` and replying on a oneshot channel.
struct Op<T, F> {
    f: F,
    result: Option<Result<T, String>>,
    reply: oneshot::Sender<Result<T, String>>,
    guarded: bool,
}

impl<T, F> Job for Op<T, F>
where
    T: Send,
    F: FnMut(&Connection) -> rusqlite::Result<T> + Send,
{
    fn run(&mut self, conn: &Connection) -> Result<(), String> {
        self.result = None;
        let result = (self.f)(conn).map_err(|e| format!("sqlite: {e}"));
        let status = match &result {
            Ok(_) => Ok(()),
            Err(e) => Err(e.clone()),
        };
        self.result = Some(result);
        status
    }

    fn answer(self: Box<Self>, error: Option<String>) {
        let answer = match (error, self.result) {
            (Some(e), _) => Err(e),
            (None, Some(result)) => result,
            (None, None) => Err("sqlite: the operation did not run".to_owned()),
        };
        // The caller may have given up (its future was dropped): nothing to do.
        let _ = self.reply.send(answer);
    }

    fn guarded(&self) -> bool {
        self.guarded
    }
}

/// A [`Job`] answering as soon as it ran (before the commit) and reporting
/// the commit on a second channel (see [`SqliteWriter::submit_early`]).
struct EarlyOp<T, F> {
    f: F,
    result: Option<Result<T, String>>,
    /// Taken when the early answer goes out.
    early: Option<oneshot::Sender<Result<T, String>>>,
    /// What the early answer said, for a run again after a lost batch.
    sent: Option<T>,
    durable: oneshot::Sender<Result<(), String>>,
}

/// Why a durability fails when a re-run disagrees with the early answer.
const REANSWERED: &str = "sqlite: the batch was rolled back and the operation, run again, answered differently";

impl<T, F> Job for EarlyOp<T, F>
where
    T: Clone + PartialEq + Send,
    F: FnMut(&Connection) -> rusqlite::Result<T> + Send,
{
    fn run(&mut self, conn: &Connection) -> Result<(), String> {
        self.result = None;
        let result = (self.f)(conn).map_err(|e| format!("sqlite: {e}"));
        let status = match &result {
            Ok(value) => {
                if let Some(early) = self.early.take() {
                    self.sent = Some(value.clone());
                    // The caller may have given up: nothing to do.
                    let _ = early.send(Ok(value.clone()));
                }
                Ok(())
            }
            Err(e) => Err(e.clone()),
        };
        self.result = Some(result);
        status
    }

    fn answer(self: Box<Self>, error: Option<String>) {
        let this = *self;
        let outcome = match (error, this.result) {
            (Some(e), _) => Err(e),
            (None, Some(result)) => result,
            (None, None) => Err("sqlite: the operation did not run".to_owned()),
        };
        let durable = match this.early {
            // Never answered early (it failed first): one answer for both.
            Some(early) => {
                let durable = outcome.as_ref().map(drop).map_err(Clone::clone);
                let _ = early.send(outcome);
                durable
            }
            None => match outcome {
                Ok(value) if this.sent.as_ref() == Some(&value) => Ok(()),
                Ok(_) => Err(REANSWERED.to_owned()),
                Err(e) => Err(e),
            },
        };
        let _ = this.durable.send(durable);
    }

    fn guarded(&self) -> bool {
        false
    }
}

/// Where [`SqliteWriter::submit_early`] answers: the operation's result as
/// soon as it ran, then whether the transaction that ran it committed.
pub type EarlyAnswer<T> = (
    oneshot::Receiver<Result<T, String>>,
    oneshot::Receiver<Result<(), String>>,
);

/// A group-commit writer: one thread owns a SQLite connection and runs
/// every submitted operation on it, many per `BEGIN IMMEDIATE`
/// transaction, each in a savepoint of its own, answering each caller
/// only after the commit that made its effects durable (see the module
/// documentation of `SqliteStore` for the guarantees). `SqliteStore` is
/// built on it; other crates with their own tables in the same kind of
/// file (the seller's outbox) reuse it rather than writing a second one.
///
/// When it is dropped, the queue closes; the thread finishes the jobs
/// already queued, closes the connection and exits, and the drop waits for
/// it.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let conn = rusqlite::Connection::open_in_memory()?;
/// let writer = adcp_store::SqliteWriter::start(conn)?;
/// let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// let answer = writer.submit(|conn| conn.query_row("SELECT 40 + 2", [], |row| row.get::<_, i64>(0)))?;
/// assert_eq!(rt.block_on(answer)??, 42);
/// # Ok(())
/// # }
/// ```
pub struct SqliteWriter {
    jobs: Option<mpsc::Sender<Box<dyn Job>>>,
    thread: Option<JoinHandle<()>>,
}

impl SqliteWriter {
    /// Starts the writer thread, which takes ownership of `conn` (already
    /// configured: WAL, `synchronous`, busy timeout). The connection
    /// checkpoints the WAL every 16,000 pages rather than SQLite's 1,000
    /// (fewer, larger checkpoints inside the batches' commits).
    ///
    /// # Errors
    ///
    /// The thread could not be spawned, or the checkpoint setting was
    /// refused.
    pub fn start(conn: Connection) -> std::io::Result<Self> {
        Self::start_observed(conn, Box::new(()))
    }

    /// [`start`](Self::start), telling `observer` when each batch
    /// transaction begins and whenever changes of the transaction are
    /// undone (see [`BatchObserver`]).
    pub(crate) fn start_observed(conn: Connection, observer: Box<dyn BatchObserver>) -> std::io::Result<Self> {
        conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)
            .map_err(std::io::Error::other)?;
        let (jobs, queue) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("adcp-sqlite-writer".to_owned())
            .spawn(move || serve(conn, &queue, observer.as_ref()))?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Queues `f` and returns where its answer will arrive: `Ok` with `f`'s
    /// result once the transaction that ran it committed, or the error
    /// (`f`'s, or the commit's) as a message. `f` may run more than once
    /// (when an I/O error rolled back the whole batch before its commit),
    /// so it must only act on the connection.
    ///
    /// # Errors
    ///
    /// The writer thread has stopped.
    pub fn submit<T, F>(&self, f: F) -> Result<oneshot::Receiver<Result<T, String>>, String>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.queue(f, true)
    }

    /// [`submit`](Self::submit) for an operation that runs without a
    /// savepoint of its own: cheaper (SQLite keeps no statement-journal copy
    /// of the pages it changes, one per page per job), for operations whose
    /// errors are the store's own (I/O, a full disk) rather than expected
    /// refusals. An `Err` from `f` (or a panic) rolls back the whole batch
    /// transaction: `f` answers its error and the batch's other jobs run
    /// again in a new transaction, so no partial effect of `f` survives.
    /// An operation that refuses by design should return its refusal as a
    /// value, before writing anything.
    ///
    /// # Errors
    ///
    /// The writer thread has stopped.
    pub fn submit_unguarded<T, F>(&self, f: F) -> Result<oneshot::Receiver<Result<T, String>>, String>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.queue(f, false)
    }

    /// [`submit_unguarded`](Self::submit_unguarded), answered twice: the
    /// first receiver gets `f`'s result as soon as `f` ran inside the open
    /// batch transaction, before the commit; the second gets `Ok` once that
    /// transaction committed, or the error that lost it. Jobs submitted
    /// after the early answer arrived commit in the same transaction or a
    /// later one (one thread, first in, first out), so when one of them is
    /// answered after its commit, this one's commit is decided too.
    ///
    /// Nothing else may see the effect before the second answer: until
    /// then a crash or a failed commit can undo it. If the batch is rolled
    /// back and `f` runs again, the second answer is `Ok` only when the new
    /// result equals the one already sent. A failure before any result was
    /// sent arrives on both receivers.
    ///
    /// # Errors
    ///
    /// The writer thread has stopped.
    pub fn submit_early<T, F>(&self, f: F) -> Result<EarlyAnswer<T>, String>
    where
        T: Clone + PartialEq + Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (early, answer) = oneshot::channel();
        let (durable, committed) = oneshot::channel();
        self.send(Box::new(EarlyOp {
            f,
            result: None,
            early: Some(early),
            sent: None,
            durable,
        }))?;
        Ok((answer, committed))
    }

    fn send(&self, job: Box<dyn Job>) -> Result<(), String> {
        self.jobs.as_ref().ok_or_else(stopped)?.send(job).map_err(|_| stopped())
    }

    fn queue<T, F>(&self, f: F, guarded: bool) -> Result<oneshot::Receiver<Result<T, String>>, String>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.send(Box::new(Op {
            f,
            result: None,
            reply,
            guarded,
        }))?;
        Ok(answer)
    }
}

/// The error of a call the writer thread can no longer serve.
pub(crate) fn stopped() -> String {
    "sqlite: the store's writer thread has stopped".to_owned()
}

impl Drop for SqliteWriter {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            // A panic of the thread was already reported by its hook, and
            // the callers it left got an error; nothing more to do here.
            let _ = thread.join();
        }
    }
}

/// Told by the writer thread what happens to its batch transactions, for
/// state kept beside the database that must follow it: the store's key
/// index (`key_index.rs`) catches up with other connections' rows when a
/// transaction begins, and is rebuilt after anything was undone.
pub(crate) trait BatchObserver: Send {
    /// A batch transaction began (`BEGIN IMMEDIATE` succeeded): the write
    /// lock is held, every other connection's commit is visible.
    fn begun(&self);
    /// Changes made since the last [`begun`](Self::begun) may have been
    /// undone (a rollback to a job's savepoint, of the whole transaction,
    /// or a failed commit).
    fn rolled_back(&self);
}

/// No observer.
impl BatchObserver for () {
    fn begun(&self) {}
    fn rolled_back(&self) {}
}

/// The writer thread: batches until the queue closes.
fn serve(conn: Connection, queue: &mpsc::Receiver<Box<dyn Job>>, observer: &dyn BatchObserver) {
    while let Ok(first) = queue.recv() {
        let mut batch = VecDeque::with_capacity(MAX_BATCH);
        batch.push_back(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push_back(job),
                Err(_) => break,
            }
        }
        commit_batch(&conn, batch, observer);
    }
}

/// Runs `pending` in order in one transaction (more if a failure rolls the
/// transaction back), commits, then answers every job.
fn commit_batch(conn: &Connection, mut pending: VecDeque<Box<dyn Job>>, observer: &dyn BatchObserver) {
    'transaction: while !pending.is_empty() {
        if let Err(e) = control(conn, BEGIN) {
            // Should a transaction have been left open, close it so that
            // the next batch can begin.
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            let e = format!("sqlite: {e}");
            observer.rolled_back();
            for job in pending {
                job.answer(Some(e.clone()));
            }
            return;
        }
        observer.begun();
        let mut applied: Vec<Box<dyn Job>> = Vec::with_capacity(pending.len());
        while let Some(mut job) = pending.pop_front() {
            let step = if job.guarded() {
                run_in_savepoint(conn, job.as_mut())
            } else {
                run_unguarded(conn, job.as_mut())
            };
            match step {
                Step::Applied => applied.push(job),
                Step::Failed(error) => {
                    observer.rolled_back();
                    job.answer(error);
                }
                Step::TransactionLost(error) => {
                    job.answer(error);
                    if !conn.is_autocommit() {
                        let _ = conn.execute_batch("ROLLBACK");
                    }
                    observer.rolled_back();
                    // Their effects were undone and nobody was answered:
                    // run them again, first, in a new transaction.
                    for job in applied.into_iter().rev() {
                        pending.push_front(job);
                    }
                    continue 'transaction;
                }
            }
        }
        let error = control(conn, COMMIT).err().map(|e| {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            observer.rolled_back();
            format!("sqlite: {e}")
        });
        for job in applied {
            job.answer(error.clone());
        }
    }
}

/// Runs a transaction-control statement, parsed once (it runs around every
/// job).
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// How one job went inside the batch transaction.
enum Step {
    /// Its changes are in the transaction; answer after the commit.
    Applied,
    /// Rolled back to its savepoint; answer now (its own result, or this
    /// error if it panicked).
    Failed(Option<String>),
    /// Failed, and the batch transaction did not survive the failure.
    TransactionLost(Option<String>),
}

fn run_in_savepoint(conn: &Connection, job: &mut dyn Job) -> Step {
    if let Err(e) = control(conn, SAVEPOINT) {
        return Step::TransactionLost(Some(format!("sqlite: {e}")));
    }
    // A job must not panic; if one does anyway, it alone fails and the
    // thread keeps serving the others.
    let panicked = match catch_unwind(AssertUnwindSafe(|| job.run(conn))) {
        Ok(Ok(())) => {
            return match control(conn, RELEASE) {
                Ok(()) => Step::Applied,
                Err(e) => Step::TransactionLost(Some(format!("sqlite: {e}"))),
            }
        }
        Ok(Err(_)) => None,
        Err(_) => Some("sqlite: the store operation panicked".to_owned()),
    };
    // `ROLLBACK TO` keeps the savepoint open: release it too.
    if !conn.is_autocommit() && control(conn, ROLLBACK_TO).is_ok() && control(conn, RELEASE).is_ok() {
        Step::Failed(panicked)
    } else {
        Step::TransactionLost(panicked)
    }
}

/// Runs a job without a savepoint: a failure loses the batch transaction.
fn run_unguarded(conn: &Connection, job: &mut dyn Job) -> Step {
    match catch_unwind(AssertUnwindSafe(|| job.run(conn))) {
        Ok(Ok(())) => Step::Applied,
        Ok(Err(_)) => Step::TransactionLost(None),
        Err(_) => Step::TransactionLost(Some("sqlite: the store operation panicked".to_owned())),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    fn writer() -> SqliteWriter {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (v INTEGER NOT NULL)").unwrap();
        SqliteWriter::start(conn).unwrap()
    }

    /// Occupies the writer for a moment, so that the jobs submitted next
    /// are all queued when it drains its queue: they form one batch.
    fn hold(writer: &SqliteWriter) -> oneshot::Receiver<Result<(), String>> {
        let held = writer
            .submit(|_: &Connection| {
                std::thread::sleep(Duration::from_millis(300));
                Ok(())
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        held
    }

    fn insert(writer: &SqliteWriter, v: i64, runs: &Arc<AtomicUsize>) -> oneshot::Receiver<Result<usize, String>> {
        let runs = Arc::clone(runs);
        writer
            .submit(move |conn: &Connection| {
                runs.fetch_add(1, Ordering::SeqCst);
                conn.execute("INSERT INTO t (v) VALUES (?1)", [v])
            })
            .unwrap()
    }

    fn count(writer: &SqliteWriter) -> oneshot::Receiver<Result<i64, String>> {
        writer
            .submit(|conn: &Connection| conn.query_row("SELECT COUNT(*) FROM t", [], |row| row.get(0)))
            .unwrap()
    }

    #[test]
    fn an_unguarded_job_that_fails_leaves_nothing_and_its_batch_runs_again() {
        let writer = writer();
        let runs = Arc::new(AtomicUsize::new(0));
        let held = hold(&writer);
        let first = insert(&writer, 1, &runs);
        let fast = writer
            .submit_unguarded(|conn: &Connection| conn.execute("INSERT INTO t (v) VALUES (5)", []))
            .unwrap();
        let failing = writer
            .submit_unguarded(|conn: &Connection| {
                conn.execute("INSERT INTO t (v) VALUES (98)", [])?;
                conn.execute("INSERT INTO missing (v) VALUES (1)", [])
            })
            .unwrap();
        let second = insert(&writer, 2, &runs);
        let seen = writer
            .submit(|conn: &Connection| {
                conn.query_row("SELECT COUNT(*), COALESCE(SUM(v = 98), 0) FROM t", [], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
                })
            })
            .unwrap();
        held.blocking_recv().unwrap().unwrap();
        assert_eq!(first.blocking_recv().unwrap(), Ok(1));
        assert_eq!(fast.blocking_recv().unwrap(), Ok(1));
        let e = failing.blocking_recv().unwrap().unwrap_err();
        assert!(e.contains("no such table"), "{e}");
        assert_eq!(second.blocking_recv().unwrap(), Ok(1));
        // The failing job's first insert is gone; everything else is in,
        // once: the jobs before it ran again in a new transaction.
        assert_eq!(seen.blocking_recv().unwrap(), Ok((3, 0)));
        assert_eq!(
            runs.load(Ordering::SeqCst),
            3,
            "the first insert ran twice, committed once"
        );
    }

    #[test]
    fn a_failing_or_panicking_job_fails_alone_in_its_batch() {
        let writer = writer();
        let runs = Arc::new(AtomicUsize::new(0));
        let held = hold(&writer);
        let first = insert(&writer, 1, &runs);
        let bad_sql = writer
            .submit(|conn: &Connection| conn.execute("INSERT INTO missing (v) VALUES (1)", []))
            .unwrap();
        let panicked = writer
            .submit(|conn: &Connection| -> rusqlite::Result<()> {
                conn.execute("INSERT INTO t (v) VALUES (99)", [])?;
                panic!("a job must not panic, but if it does...")
            })
            .unwrap();
        let second = insert(&writer, 2, &runs);
        let seen = count(&writer);
        held.blocking_recv().unwrap().unwrap();
        assert_eq!(first.blocking_recv().unwrap(), Ok(1));
        let e = bad_sql.blocking_recv().unwrap().unwrap_err();
        assert!(e.contains("no such table"), "{e}");
        let e = panicked.blocking_recv().unwrap().unwrap_err();
        assert!(e.contains("panicked"), "{e}");
        assert_eq!(second.blocking_recv().unwrap(), Ok(1));
        // The panicking job's insert was rolled back with it.
        assert_eq!(seen.blocking_recv().unwrap(), Ok(2));
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        // The thread keeps serving.
        assert_eq!(count(&writer).blocking_recv().unwrap(), Ok(2));
    }

    #[test]
    fn jobs_of_a_lost_transaction_run_again_before_anyone_is_answered() {
        let writer = writer();
        let runs = Arc::new(AtomicUsize::new(0));
        let held = hold(&writer);
        let first = insert(&writer, 1, &runs);
        // Stands for an error after which SQLite rolled the whole
        // transaction back (SQLITE_FULL, an I/O error): the insert above is
        // undone and must be run again, not acknowledged.
        let lost = writer
            .submit(|conn: &Connection| -> rusqlite::Result<()> {
                conn.execute_batch("ROLLBACK")?;
                Err(rusqlite::Error::InvalidQuery)
            })
            .unwrap();
        let second = insert(&writer, 2, &runs);
        let seen = count(&writer);
        held.blocking_recv().unwrap().unwrap();
        assert_eq!(first.blocking_recv().unwrap(), Ok(1));
        assert!(lost.blocking_recv().unwrap().is_err());
        assert_eq!(second.blocking_recv().unwrap(), Ok(1));
        assert_eq!(seen.blocking_recv().unwrap(), Ok(2));
        assert_eq!(runs.load(Ordering::SeqCst), 3, "the first insert ran twice");
    }

    #[test]
    fn the_writer_checkpoints_every_16000_wal_pages() {
        let dir = std::env::temp_dir().join(format!("adcp-writer-checkpoint-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conn = Connection::open(dir.join("db.sqlite")).unwrap();
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).unwrap();
        let writer = SqliteWriter::start(conn).unwrap();
        let pages = writer
            .submit(|conn: &Connection| conn.query_row("PRAGMA wal_autocheckpoint", [], |r| r.get::<_, i64>(0)))
            .unwrap();
        assert_eq!(pages.blocking_recv().unwrap(), Ok(WAL_AUTOCHECKPOINT_PAGES));
        drop(writer);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dropping_the_writer_runs_the_queued_jobs_then_joins_the_thread() {
        let writer = writer();
        let runs = Arc::new(AtomicUsize::new(0));
        let held = hold(&writer);
        let queued: Vec<_> = (0..10).map(|v| insert(&writer, v, &runs)).collect();
        drop(writer);
        // The drop returned: the thread was joined after serving the queue.
        assert_eq!(runs.load(Ordering::SeqCst), 10);
        held.blocking_recv().unwrap().unwrap();
        for answer in queued {
            assert_eq!(answer.blocking_recv().unwrap(), Ok(1));
        }
    }
    #[test]
    fn an_early_job_answers_before_its_commit_and_reports_the_commit_after() {
        let writer = writer();
        let held = hold(&writer);
        let (early, committed) = writer
            .submit_early(|conn: &Connection| conn.execute("INSERT INTO t (v) VALUES (7)", []))
            .unwrap();
        // Same batch, after it: the commit waits for this one.
        let slow = writer
            .submit(|_: &Connection| {
                std::thread::sleep(Duration::from_millis(300));
                Ok(())
            })
            .unwrap();
        held.blocking_recv().unwrap().unwrap();
        assert_eq!(early.blocking_recv().unwrap(), Ok(1));
        let mut committed = committed;
        assert!(
            matches!(committed.try_recv(), Err(oneshot::error::TryRecvError::Empty)),
            "answered early, while its batch is still open"
        );
        slow.blocking_recv().unwrap().unwrap();
        assert_eq!(committed.blocking_recv().unwrap(), Ok(()));
        assert_eq!(count(&writer).blocking_recv().unwrap(), Ok(1));
    }

    #[test]
    fn an_early_answer_a_rerun_contradicts_is_not_durable() {
        let writer = writer();
        let runs = Arc::new(AtomicUsize::new(0));
        let held = hold(&writer);
        // Answers how many times it ran: a rerun answers differently.
        let counted = Arc::clone(&runs);
        let (differs, differs_committed) = writer
            .submit_early(move |conn: &Connection| {
                conn.execute("INSERT INTO t (v) VALUES (1)", [])?;
                Ok(counted.fetch_add(1, Ordering::SeqCst))
            })
            .unwrap();
        let (same, same_committed) = writer
            .submit_early(|conn: &Connection| conn.execute("INSERT INTO t (v) VALUES (2)", []))
            .unwrap();
        let failing = writer
            .submit_unguarded(|conn: &Connection| conn.execute("INSERT INTO missing (v) VALUES (1)", []))
            .unwrap();
        held.blocking_recv().unwrap().unwrap();
        assert_eq!(differs.blocking_recv().unwrap(), Ok(0));
        assert_eq!(same.blocking_recv().unwrap(), Ok(1));
        assert!(failing.blocking_recv().unwrap().is_err());
        let lost = differs_committed.blocking_recv().unwrap().unwrap_err();
        assert!(lost.contains("answered differently"), "{lost}");
        assert_eq!(same_committed.blocking_recv().unwrap(), Ok(()));
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn an_early_job_that_fails_answers_its_error_on_both_receivers() {
        let writer = writer();
        let (early, committed) = writer
            .submit_early(|conn: &Connection| conn.execute("INSERT INTO missing (v) VALUES (1)", []))
            .unwrap();
        let e = early.blocking_recv().unwrap().unwrap_err();
        assert!(e.contains("no such table"), "{e}");
        assert_eq!(committed.blocking_recv().unwrap(), Err(e));
    }
}
