//! The scheduler: finds the streams that are due, asks the application's
//! [`DeliverySource`], and moves each stream and enqueues its report in
//! one transaction of the outbox's store.

use super::aggregate::{self, Member};
use super::error::ReportingError;
use super::period::Period;
use super::plan::{self, BuyEnd, Next, StreamState};
use super::registration::ReportingRegistration;
use super::report::{channel_of, event_of};
use super::source::{Closing, DeliverySource, PeriodDelivery};
use crate::outbox::Outbox;
use crate::store::{StreamRow, StreamUpdate};
use adcp_sign::RandomSource as _;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// Settings of a [`ReportingScheduler`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportingConfig {
    /// How long after a "not ready", an "open" closing, a source error or
    /// an earlier report still on its way the stream is looked at again
    /// (default 5 minutes).
    pub recheck: Duration,
    /// Streams handled per store query (default 64).
    pub batch: usize,
    /// The longest [`run`](ReportingScheduler::run) sleeps without looking
    /// (default 30 s): another process's registrations are found within it.
    pub max_sleep: Duration,
    /// Aggregate buys whose reports share a URL, `token`, authentication,
    /// frequency, timezone and delay into one stream: one report per
    /// period with every covered buy's rows, one `sequence_number` (the
    /// spec's SHOULD; default off). See [`register`](ReportingScheduler::register).
    pub aggregate: bool,
}

impl Default for ReportingConfig {
    fn default() -> Self {
        Self {
            recheck: Duration::from_secs(300),
            batch: 64,
            max_sleep: Duration::from_secs(30),
            aggregate: false,
        }
    }
}

/// Where one stream stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamStatus {
    /// The buy.
    pub media_buy_id: String,
    /// The stream's `operation_id`.
    pub operation_id: String,
    /// The last `sequence_number` sent (0: none yet).
    pub sequence: u64,
    /// The start of the next period awaiting its `scheduled` report (Unix
    /// ms).
    pub next_period_start_ms: i64,
    /// When the stream is next looked at (`None`: it waits for the buy to
    /// end, or it is closed).
    pub next_check_ms: Option<i64>,
    /// How and when the buy ended.
    pub ended: Option<(BuyEnd, i64)>,
    /// The `final` report went out.
    pub closed: bool,
}

/// The reporting schedule of a seller's media buys, on the outbox: every
/// period of a buy's `reporting_webhook` gets exactly one `scheduled`
/// report (a `delayed` one first when its data is late), with a
/// `sequence_number` from 1 and the `next_expected_at` of the next fire,
/// and one `final` report after the buy ended, its data closed and every
/// earlier report delivered or given up. Any number of schedulers (threads,
/// processes) may share a store: each report is enqueued in the same
/// transaction that moves its stream, fenced by the stream's version, so
/// none is sent twice and none skipped across restarts.
#[derive(Clone)]
pub struct ReportingScheduler {
    outbox: Outbox,
    source: Arc<dyn DeliverySource>,
    config: ReportingConfig,
    wake: Arc<Notify>,
}

impl std::fmt::Debug for ReportingScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportingScheduler")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The most reports one stream sends in one pass (a stream far behind
/// catches up over several passes, others get their turn between).
const MAX_STEPS: usize = 64;

/// The first byte of a registration stored in clear (JSON); a sealed one
/// starts with the keyring's magic.
const PLAIN: u8 = b'{';

impl ReportingScheduler {
    /// A scheduler enqueueing into `outbox`, asking `source` for the
    /// numbers.
    #[must_use]
    pub fn new(outbox: Outbox, source: Arc<dyn DeliverySource>, config: ReportingConfig) -> Self {
        Self {
            outbox,
            source,
            config,
            wake: Arc::new(Notify::new()),
        }
    }

    fn now(&self) -> i64 {
        self.outbox.config().clock.now_ms()
    }

    fn recheck_ms(&self) -> i64 {
        i64::try_from(self.config.recheck.as_millis()).unwrap_or(i64::MAX)
    }

    /// Registers `registration`'s stream, or, for a buy already
    /// registered, replaces its registration: a new `url`, `token` or
    /// authentication applies from the next report on (reports already
    /// enqueued keep theirs: their bytes are bound to their key), a new
    /// flight end extends or shortens the periods still to come.
    ///
    /// The stream's `operation_id` is the registration's when it has one,
    /// else minted once (`rpt_` and 26 random characters) and kept.
    ///
    /// With [`ReportingConfig::aggregate`], a new buy joins the open
    /// aggregated stream of its key (URL, `token`, authentication,
    /// frequency, timezone, delay, principal, signing scope) whose next
    /// period starts no later than the buy's first, or starts one; an
    /// aggregated buy's registration may change only in what the key does
    /// not cover (its flight).
    ///
    /// # Errors
    ///
    /// `stream_closed` once the `final` report went out; the store's
    /// errors.
    pub async fn register(&self, registration: ReportingRegistration) -> Result<StreamStatus, ReportingError> {
        if let Some(group) = self.pointer(&registration.media_buy_id).await? {
            return self.update_member(&group, registration).await;
        }
        if self.config.aggregate && self.outbox.store().stream(&registration.media_buy_id).await?.is_none() {
            return self.register_aggregated(registration).await;
        }
        let id = registration.media_buy_id.clone();
        let state = StreamState::start(&registration, self.operation_id_for(&registration)?)?;
        let next_check_at = plan::next(&registration, &state)?.due_ms();
        let stored_registration = self.seal(&id, &registration)?;
        let row = StreamRow {
            id: id.clone(),
            registration: stored_registration.clone(),
            state: encode(&state),
            version: 0,
            next_check_at,
        };
        let mut current = self.outbox.store().create_stream(row).await?;
        loop {
            let (stored, state) = self.decode(&current)?;
            if state.final_sent {
                return Err(ReportingError::StreamClosed(id));
            }
            if stored == registration {
                break;
            }
            let update = StreamUpdate {
                id: id.clone(),
                expected_version: current.version,
                registration: Some(stored_registration.clone()),
                state: current.state.clone(),
                next_check_at: plan::next(&registration, &state)?.due_ms(),
                now_ms: self.now(),
            };
            if self.outbox.store().advance_stream(update, None).await? {
                break;
            }
            current = self.load(&id).await?;
        }
        self.wake.notify_one();
        self.status(&id).await?.ok_or(ReportingError::UnknownStream(id))
    }

    /// Records that the buy reached `end` at `at_ms`: periods after that
    /// instant are not reported, and the `final` report follows once the
    /// source says the data is closed. A second call changes nothing.
    ///
    /// # Errors
    ///
    /// `unknown_stream`; the store's errors.
    pub async fn end(&self, media_buy_id: &str, end: BuyEnd, at_ms: i64) -> Result<StreamStatus, ReportingError> {
        if let Some(group) = self.pointer(media_buy_id).await? {
            return self.end_member(&group, media_buy_id, end, at_ms).await;
        }
        loop {
            let row = self.load(media_buy_id).await?;
            let (reg, mut state) = self.decode(&row)?;
            if state.ended.is_some() {
                break;
            }
            state.ended = Some((end, at_ms));
            let update = StreamUpdate {
                id: row.id.clone(),
                expected_version: row.version,
                registration: None,
                state: encode(&state),
                next_check_at: plan::next(&reg, &state)?.due_ms(),
                now_ms: self.now(),
            };
            if self.outbox.store().advance_stream(update, None).await? {
                break;
            }
        }
        self.wake.notify_one();
        self.status(media_buy_id)
            .await?
            .ok_or_else(|| ReportingError::UnknownStream(media_buy_id.to_owned()))
    }

    /// Where the stream of `media_buy_id` stands.
    ///
    /// # Errors
    ///
    /// The store's errors; a stored stream this build cannot read.
    pub async fn status(&self, media_buy_id: &str) -> Result<Option<StreamStatus>, ReportingError> {
        let Some(mut row) = self.outbox.store().stream(media_buy_id).await? else {
            return Ok(None);
        };
        if let Some(group) = aggregate::pointer_of(&row.state) {
            row = self.load(&group).await?;
        }
        let (reg, state) = self.decode(&row)?;
        let next_period_start_ms = match plan::next(&reg, &state)? {
            Next::Period { period, .. } => period.start_ms,
            _ => state.cursor_ms,
        };
        Ok(Some(StreamStatus {
            media_buy_id: media_buy_id.to_owned(),
            operation_id: state.operation_id.clone(),
            sequence: state.sequence,
            next_period_start_ms,
            next_check_ms: row.next_check_at,
            ended: state.ended,
            closed: state.final_sent,
        }))
    }

    /// One pass over the streams due now: the number of reports enqueued.
    /// A stream whose source fails, or whose report the outbox refuses, is
    /// logged and looked at again after the recheck interval; the others
    /// go on.
    ///
    /// # Errors
    ///
    /// The store is unavailable (nothing of the failing step changed).
    pub async fn tick(&self) -> Result<usize, ReportingError> {
        let mut fired = 0;
        loop {
            let now = self.now();
            let due = self.outbox.store().due_streams(now, self.config.batch.max(1)).await?;
            let full = due.len() >= self.config.batch.max(1);
            let mut progressed = false;
            for row in due {
                let (n, moved) = self.advance(row, now).await?;
                fired += n;
                progressed |= moved;
            }
            if !full || !progressed {
                return Ok(fired);
            }
        }
    }

    /// Runs [`tick`](Self::tick) until `shutdown` completes: after each
    /// pass it sleeps until the next stream is due (at most
    /// [`ReportingConfig::max_sleep`]), or until a registration or an end
    /// in this process wakes it.
    pub async fn run(&self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            if let Err(e) = self.tick().await {
                tracing::warn!(target: crate::DISPATCH_TRACING_TARGET, code = e.code(), error = %e, "reporting pass failed");
            }
            let now = self.now();
            let next = self
                .outbox
                .store()
                .due_streams(i64::MAX, 1)
                .await
                .ok()
                .and_then(|r| r.first().and_then(|r| r.next_check_at));
            let sleep = next.map_or(self.config.max_sleep, |at| {
                Duration::from_millis(u64::try_from(at.saturating_sub(now)).unwrap_or(0)).min(self.config.max_sleep)
            });
            tokio::select! {
                () = &mut shutdown => return,
                () = tokio::time::sleep(sleep) => {}
                () = self.wake.notified() => {}
            }
        }
    }

    /// Moves one stream as far as it is due at `now`: the reports
    /// enqueued, and whether anything changed.
    async fn advance(&self, mut row: StreamRow, now: i64) -> Result<(usize, bool), ReportingError> {
        let mut fired = 0;
        let mut moved = false;
        for _ in 0..MAX_STEPS {
            let (reg, state) = match self.decode(&row) {
                Ok(decoded) => decoded,
                Err(e) => {
                    tracing::error!(target: crate::DISPATCH_TRACING_TARGET, stream = %row.id, code = e.code(), error = %e,
                        "reporting stream unreadable; it is left as it is");
                    return Ok((fired, moved));
                }
            };
            let members = self.members(&row)?;
            let step = match self.step(&reg, &state, members.as_deref(), now).await {
                Ok(step) => step,
                Err(ReportingError::Outbox(e)) if e.is_retryable() => return Err(e.into()),
                Err(e) => {
                    tracing::error!(target: crate::DISPATCH_TRACING_TARGET, stream = %row.id, code = e.code(), error = %e,
                        "reporting step failed; looked at again after the recheck interval");
                    Some((plan::wait_for_earlier(&state, now, self.recheck_ms()), None))
                }
            };
            let Some((after, event)) = step else {
                // Not due: make sure the stored due time says so.
                let due = plan::next(&reg, &state)?.due_ms();
                if row.next_check_at != due {
                    let update = self.update(&row, &state, due, now);
                    moved |= self.outbox.store().advance_stream(update, None).await?;
                }
                return Ok((fired, moved));
            };
            let due = plan::next(&reg, &after)?.due_ms();
            let mut enqueues = event.is_some();
            let mut update = self.update(&row, &after, due, now);
            let applied = match self.outbox.store().advance_stream(update.clone(), event).await {
                Err(crate::OutboxError::ChannelNotActive { state, .. }) => {
                    // A paused (or closed) channel suppresses the fire:
                    // nothing is kept for later, and the sequence goes on
                    // from the last report sent.
                    tracing::info!(target: crate::DISPATCH_TRACING_TARGET, stream = %row.id, channel_state = %state,
                        "report suppressed: its channel does not take events");
                    let mut suppressed = after.clone();
                    suppressed.sequence = state_sequence(&row)?;
                    update = self.update(&row, &suppressed, due, now);
                    enqueues = false;
                    self.outbox.store().advance_stream(update.clone(), None).await?
                }
                other => other?,
            };
            if applied {
                moved = true;
                fired += usize::from(enqueues);
                row.version += 1;
                row.state = update.state;
                row.next_check_at = due;
            } else {
                // Another scheduler moved it first: read what it did.
                row = self.load(&row.id).await?;
            }
            if row.next_check_at.is_none_or(|at| at > now) {
                return Ok((fired, moved));
            }
        }
        Ok((fired, moved))
    }

    /// The state after the step due at `now` and the report it enqueues;
    /// `None` when nothing is due.
    async fn step(
        &self,
        reg: &ReportingRegistration,
        state: &StreamState,
        members: Option<&[Member]>,
        now: i64,
    ) -> Result<Option<(StreamState, Option<crate::store::Insert>)>, ReportingError> {
        let recheck = self.recheck_ms();
        let (after, report) = match plan::next(reg, state)? {
            Next::Period { period, due_ms } if due_ms <= now => {
                let answer = match members {
                    Some(members) => self.group_period(members, period).await?,
                    None => self.source.period(reg, period).await.map_err(ReportingError::Source)?,
                };
                plan::on_period(reg, state, period, answer, now, recheck)?
            }
            Next::Final { flight, due_ms } if due_ms <= now => {
                if self.outbox.store().channel_busy(&channel_of(&reg.media_buy_id)).await? {
                    (plan::wait_for_earlier(state, now, recheck), None)
                } else {
                    let answer = match members {
                        Some(members) => self.group_closing(members, flight).await?,
                        None => self.source.closing(reg, flight).await.map_err(ReportingError::Source)?,
                    };
                    plan::on_closing(state, flight, answer, now, recheck)
                }
            }
            _ => return Ok(None),
        };
        let event = match report {
            Some(report) => {
                let mut event = event_of(reg, &after, &report)?;
                for m in members.unwrap_or_default() {
                    event = event.resource(format!("media_buy:{}", m.reg.media_buy_id));
                }
                Some(self.outbox.prepare(event)?)
            }
            None => None,
        };
        Ok(Some((after, event)))
    }

    fn update(&self, row: &StreamRow, state: &StreamState, due: Option<i64>, now: i64) -> StreamUpdate {
        StreamUpdate {
            id: row.id.clone(),
            expected_version: row.version,
            registration: None,
            state: encode(state),
            next_check_at: due,
            now_ms: now,
        }
    }

    async fn load(&self, id: &str) -> Result<StreamRow, ReportingError> {
        self.outbox
            .store()
            .stream(id)
            .await?
            .ok_or_else(|| ReportingError::UnknownStream(id.to_owned()))
    }

    /// The registration's `operation_id`, else a fresh one.
    fn operation_id_for(&self, reg: &ReportingRegistration) -> Result<String, ReportingError> {
        match reg.reporting_webhook.get("operation_id").and_then(Value::as_str) {
            Some(op) => Ok(op.to_owned()),
            None => self.mint_operation_id(),
        }
    }

    /// The group a buy's row points at, if it is aggregated.
    async fn pointer(&self, media_buy_id: &str) -> Result<Option<String>, ReportingError> {
        Ok(self
            .outbox
            .store()
            .stream(media_buy_id)
            .await?
            .and_then(|row| aggregate::pointer_of(&row.state)))
    }

    /// Joins `reg`'s buy to an open group of its key, or starts one; then
    /// writes the buy's pointer.
    async fn register_aggregated(&self, reg: ReportingRegistration) -> Result<StreamStatus, ReportingError> {
        let buy = reg.media_buy_id.clone();
        let key = aggregate::key(&reg);
        let first_start = reg.calendar.period_containing(reg.flight_start_ms)?.start_ms;
        let mut generation = 0_u32;
        let group = loop {
            if generation > 4096 {
                return Err(ReportingError::InvalidRegistration(
                    "no aggregated stream generation left for this key".to_owned(),
                ));
            }
            let id = aggregate::group_id(&key, generation);
            let Some(row) = self.outbox.store().stream(&id).await? else {
                let members = vec![Member {
                    reg: reg.clone(),
                    ended: None,
                }];
                let group = aggregate::group_registration(&id, &members)?;
                let state = StreamState::start(&group, self.operation_id_for(&reg)?)?;
                let row = StreamRow {
                    id: id.clone(),
                    registration: self.seal_value(&id, &aggregate::to_stored(&group, &members))?,
                    state: encode(&state),
                    version: 0,
                    next_check_at: plan::next(&group, &state)?.due_ms(),
                };
                // Another scheduler may have started it first: then the
                // next pass looks at theirs.
                let stored = self.outbox.store().create_stream(row).await?;
                if self.is_member(&stored, &buy)? {
                    break id;
                }
                continue;
            };
            let (_, state) = self.decode(&row)?;
            let mut members = self.members(&row)?.unwrap_or_default();
            if members.iter().any(|m| m.reg.media_buy_id == buy) {
                break id;
            }
            // A closed or ending group, or one already past the buy's
            // first period, takes no new buy: each of its periods must be
            // reported.
            if state.final_sent || state.ended.is_some() || state.cursor_ms > first_start {
                generation += 1;
                continue;
            }
            members.push(Member {
                reg: reg.clone(),
                ended: None,
            });
            let group = aggregate::group_registration(&id, &members)?;
            let update = StreamUpdate {
                id: id.clone(),
                expected_version: row.version,
                registration: Some(self.seal_value(&id, &aggregate::to_stored(&group, &members))?),
                state: row.state.clone(),
                next_check_at: plan::next(&group, &state)?.due_ms(),
                now_ms: self.now(),
            };
            if self.outbox.store().advance_stream(update, None).await? {
                break id;
            }
        };
        let pointer = StreamRow {
            id: buy.clone(),
            registration: self.seal(&buy, &reg)?,
            state: aggregate::pointer(&group),
            version: 0,
            next_check_at: None,
        };
        self.outbox.store().create_stream(pointer).await?;
        self.wake.notify_one();
        self.status(&buy).await?.ok_or(ReportingError::UnknownStream(buy))
    }

    fn is_member(&self, row: &StreamRow, buy: &str) -> Result<bool, ReportingError> {
        Ok(self
            .members(row)?
            .is_some_and(|members| members.iter().any(|m| m.reg.media_buy_id == buy)))
    }

    /// Applies a new registration of an aggregated buy (its flight).
    async fn update_member(&self, group: &str, reg: ReportingRegistration) -> Result<StreamStatus, ReportingError> {
        let buy = reg.media_buy_id.clone();
        self.change_member(group, &buy, |member| {
            if aggregate::key(&member.reg) != aggregate::key(&reg) {
                return Err(ReportingError::InvalidRegistration(format!(
                    "media buy {buy} reports in an aggregated stream: its URL, token, authentication, frequency, \
                     timezone and delay stay those of the stream (only its flight may change)"
                )));
            }
            let changed = member.reg != reg;
            member.reg = reg.clone();
            Ok(changed)
        })
        .await?;
        self.wake.notify_one();
        self.status(&buy).await?.ok_or(ReportingError::UnknownStream(buy))
    }

    /// Records an aggregated buy's end; the group ends with its last buy.
    async fn end_member(
        &self,
        group: &str,
        media_buy_id: &str,
        end: BuyEnd,
        at_ms: i64,
    ) -> Result<StreamStatus, ReportingError> {
        self.change_member(group, media_buy_id, |member| {
            if member.ended.is_some() {
                return Ok(false);
            }
            member.ended = Some((end, at_ms));
            Ok(true)
        })
        .await?;
        self.wake.notify_one();
        self.status(media_buy_id)
            .await?
            .ok_or_else(|| ReportingError::UnknownStream(media_buy_id.to_owned()))
    }

    /// Changes one member of `group` with `change` (which says whether it
    /// changed anything), recomputing the group's flight and end, by
    /// compare-and-set.
    async fn change_member(
        &self,
        group: &str,
        buy: &str,
        change: impl Fn(&mut Member) -> Result<bool, ReportingError>,
    ) -> Result<(), ReportingError> {
        loop {
            let row = self.load(group).await?;
            let (_, mut state) = self.decode(&row)?;
            if state.final_sent {
                return Err(ReportingError::StreamClosed(buy.to_owned()));
            }
            let mut members = self.members(&row)?.unwrap_or_default();
            let member = members
                .iter_mut()
                .find(|m| m.reg.media_buy_id == buy)
                .ok_or_else(|| ReportingError::UnknownStream(buy.to_owned()))?;
            if !change(member)? {
                return Ok(());
            }
            let registration = aggregate::group_registration(group, &members)?;
            state.ended = aggregate::group_end(&members);
            let update = StreamUpdate {
                id: group.to_owned(),
                expected_version: row.version,
                registration: Some(self.seal_value(group, &aggregate::to_stored(&registration, &members))?),
                state: encode(&state),
                next_check_at: plan::next(&registration, &state)?.due_ms(),
                now_ms: self.now(),
            };
            if self.outbox.store().advance_stream(update, None).await? {
                return Ok(());
            }
        }
    }

    /// A group's period: the rows of every member the period covers, or
    /// "not ready" while one of them is not (expected when the last of
    /// them expects its data).
    async fn group_period(&self, members: &[Member], period: Period) -> Result<PeriodDelivery, ReportingError> {
        let mut rows = Vec::new();
        let mut waiting: Option<Option<i64>> = None;
        for member in members.iter().filter(|m| m.covers(period)) {
            match self
                .source
                .period(&member.reg, period)
                .await
                .map_err(ReportingError::Source)?
            {
                PeriodDelivery::Ready(Value::Array(r)) => rows.extend(r),
                PeriodDelivery::Ready(row) => rows.push(row),
                PeriodDelivery::NotReady { expected_at_ms } => {
                    waiting = Some(match waiting {
                        None => expected_at_ms,
                        Some(Some(before)) => expected_at_ms.map(|at| at.max(before)),
                        Some(None) => None,
                    });
                }
            }
        }
        Ok(match waiting {
            Some(expected_at_ms) => PeriodDelivery::NotReady { expected_at_ms },
            None => PeriodDelivery::Ready(Value::Array(rows)),
        })
    }

    /// A group's closing: closed when every member's data is.
    async fn group_closing(&self, members: &[Member], flight: Period) -> Result<Closing, ReportingError> {
        let mut rows = Vec::new();
        for member in members {
            match self
                .source
                .closing(&member.reg, flight)
                .await
                .map_err(ReportingError::Source)?
            {
                Closing::Closed(Value::Array(r)) => rows.extend(r),
                Closing::Closed(row) => rows.push(row),
                Closing::Open => return Ok(Closing::Open),
            }
        }
        Ok(Closing::Closed(Value::Array(rows)))
    }

    fn mint_operation_id(&self) -> Result<String, ReportingError> {
        const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
        let mut bytes = [0_u8; 26];
        self.outbox
            .config()
            .random
            .fill(&mut bytes)
            .map_err(|_| crate::OutboxError::Unavailable("randomness unavailable".to_owned()))?;
        let tail: String = bytes
            .iter()
            .map(|b| char::from(ALPHABET[usize::from(b % 32)]))
            .collect();
        Ok(format!("rpt_{tail}"))
    }

    fn seal(&self, id: &str, reg: &ReportingRegistration) -> Result<Vec<u8>, ReportingError> {
        self.seal_value(id, &reg.to_stored())
    }

    fn seal_value(&self, id: &str, stored: &Value) -> Result<Vec<u8>, ReportingError> {
        let plain = stored.to_string().into_bytes();
        Ok(match &self.outbox.config().encryption {
            Some(ring) => ring.seal(id, "registration", &plain)?,
            None => plain,
        })
    }

    fn decode(&self, row: &StreamRow) -> Result<(ReportingRegistration, StreamState), ReportingError> {
        let reg = self.stored_registration(row)?;
        let state: StreamState = serde_json::from_slice(&row.state)
            .map_err(|_| crate::OutboxError::Schema(format!("stream {}: unreadable state", row.id)))?;
        Ok((ReportingRegistration::from_stored(&reg)?, state))
    }

    /// A group's members; `None` for a single buy's stream.
    fn members(&self, row: &StreamRow) -> Result<Option<Vec<Member>>, ReportingError> {
        aggregate::members_of(&self.stored_registration(row)?)
    }

    fn stored_registration(&self, row: &StreamRow) -> Result<Value, ReportingError> {
        let plain = match (row.registration.first(), &self.outbox.config().encryption) {
            (Some(&PLAIN), _) => row.registration.clone(),
            (_, Some(ring)) => ring.open(&row.id, "registration", &row.registration)?,
            (_, None) => {
                return Err(crate::OutboxError::Crypto(format!(
                    "the registration of stream {} is sealed and no keyring is configured",
                    row.id
                ))
                .into())
            }
        };
        serde_json::from_slice(&plain)
            .map_err(|_| crate::OutboxError::Schema(format!("stream {}: unreadable registration", row.id)).into())
    }
}

/// The last sequence number a stored stream sent.
fn state_sequence(row: &StreamRow) -> Result<u64, ReportingError> {
    serde_json::from_slice::<StreamState>(&row.state)
        .map(|s| s.sequence)
        .map_err(|_| crate::OutboxError::Schema(format!("stream {}: unreadable state", row.id)).into())
}

fn encode(state: &StreamState) -> Vec<u8> {
    // A struct of plain fields always serializes.
    serde_json::to_vec(state).unwrap_or_default()
}
