//! [`Channels`]: registering, updating, pausing, resuming, activating and
//! closing channels, each one transaction of the outbox's store with what
//! it does to the channel's events.

use super::rebuild::rebuild;
use super::registration::{ChannelKind, ChannelRegistration};
use super::state::ChannelState;
use crate::error::OutboxError;
use crate::event::NewEvent;
use crate::outbox::Outbox;
use crate::store::{ChannelRow, ChannelWrite};
use adcp_sign::WebhookEvent;
use serde_json::Value;

/// The most never-attempted events one update rebuilds per pass (an update
/// loops until none is left).
const REBUILD_BATCH: usize = 256;

/// Where a channel stands.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelView {
    /// Its id.
    pub id: String,
    /// Its kind.
    pub kind: ChannelKind,
    /// Its state.
    pub state: ChannelState,
    /// Whether an activation challenge succeeded for exactly its current
    /// registration.
    pub proven: bool,
    /// The registration (credentials included: the application's own).
    pub registration: Value,
    /// Events rebuilt for the new registration by the call that returned
    /// this view.
    pub rebuilt: u64,
}

/// The channels of a seller: a buy's `push_notification_config` and
/// `reporting_webhook`, account and agent subscribers.
///
/// - **Updates** ([`put`](Self::put) again) apply to the next fire: events
///   not yet attempted are rebuilt for the new registration (its `token`,
///   URL and authentication, a new `idempotency_key`, the same
///   `notification_id`); events already attempted finish where they
///   started, since their bytes are bound to their key.
/// - **Pausing** (`active: false`, or [`pause`](Self::pause)) withdraws the
///   channel's pending events and refuses new ones (`channel_paused`):
///   nothing is kept for later.
/// - **Resuming** checks the URL again, and an account or agent subscriber
///   needs a fresh activation unless one succeeded for exactly its
///   current registration.
/// - **Account and agent subscribers** take events only once
///   [`record_activation`](Self::record_activation) saw the activation
///   challenge succeed for exactly that registration; a changed
///   registration needs a fresh one (`channel_not_activated` until then).
/// - **Closing** makes held (coalescing) events due now, then refuses
///   every later event (`channel_closed`).
///
/// A channel id nobody registered is the application's own label: the
/// outbox does not check it.
#[derive(Debug, Clone)]
pub struct Channels {
    outbox: Outbox,
}

impl Channels {
    /// The channels kept in `outbox`'s store.
    #[must_use]
    pub fn new(outbox: Outbox) -> Self {
        Self { outbox }
    }

    fn now(&self) -> i64 {
        self.outbox.config().clock.now_ms()
    }

    /// Registers `channel`, or updates it. A new channel is `active`, or
    /// `paused` when the registration says `active: false`, or
    /// `pending_activation` for an account or agent subscriber.
    ///
    /// # Errors
    ///
    /// `channel_closed` for a closed channel; `invalid_destination`; the
    /// store's errors.
    pub async fn put(&self, channel: ChannelRegistration) -> Result<ChannelView, OutboxError> {
        let fingerprint = channel.fingerprint().to_vec();
        loop {
            let current = self.outbox.store().channel(channel.id()).await?;
            let (proven, version, create) = match &current {
                Some(row) => {
                    if row.state == ChannelState::Closed.as_str() {
                        return Err(closed(channel.id()));
                    }
                    (row.proven.clone(), row.version, false)
                }
                None => (None, 0, true),
            };
            let state = if channel.paused() {
                ChannelState::Paused
            } else if channel.kind().needs_activation() && proven.as_deref() != Some(&fingerprint[..]) {
                ChannelState::PendingActivation
            } else {
                ChannelState::Active
            };
            let changed = current
                .as_ref()
                .is_none_or(|row| self.decode(row).map(|r| r != channel.registration).unwrap_or(true));
            let replace = if state == ChannelState::Active && changed && !create {
                self.rebuilds(&channel).await?
            } else {
                Vec::new()
            };
            let write = ChannelWrite {
                row: ChannelRow {
                    id: channel.id().to_owned(),
                    kind: channel.kind().as_str().to_owned(),
                    registration: self.seal(channel.id(), &channel.registration)?,
                    fingerprint: fingerprint.clone(),
                    proven,
                    state: state.as_str().to_owned(),
                    version,
                },
                create,
                withdraw: (state != ChannelState::Active).then(|| format!("channel {}", state.as_str())),
                flush_held: false,
                replace,
                now_ms: self.now(),
            };
            let more = !write.replace.is_empty() && write.replace.len() >= REBUILD_BATCH;
            if let Some(rebuilt) = self.outbox.store().write_channel(write).await? {
                if more {
                    // More to rebuild: the next pass finds the rest.
                    continue;
                }
                let mut view = self.require(channel.id()).await?;
                view.rebuilt = rebuilt;
                return Ok(view);
            }
        }
    }

    async fn rebuilds(
        &self,
        channel: &ChannelRegistration,
    ) -> Result<Vec<(crate::EventId, crate::Insert)>, OutboxError> {
        let pending = self.outbox.store().unattempted(channel.id(), REBUILD_BATCH).await?;
        pending
            .iter()
            .map(|old| Ok((old.id.clone(), rebuild(&self.outbox, channel, old)?)))
            .collect()
    }

    /// The channel `id`.
    ///
    /// # Errors
    ///
    /// The store's errors; a stored registration this build cannot read.
    pub async fn get(&self, id: &str) -> Result<Option<ChannelView>, OutboxError> {
        match self.outbox.store().channel(id).await? {
            Some(row) => Ok(Some(self.view(&row)?)),
            None => Ok(None),
        }
    }

    async fn row(&self, id: &str) -> Result<ChannelRow, OutboxError> {
        self.outbox
            .store()
            .channel(id)
            .await?
            .ok_or_else(|| OutboxError::UnknownChannel(id.to_owned()))
    }

    async fn require(&self, id: &str) -> Result<ChannelView, OutboxError> {
        self.get(id)
            .await?
            .ok_or_else(|| OutboxError::UnknownChannel(id.to_owned()))
    }

    /// Pauses the channel: its pending events are withdrawn, new ones
    /// refused.
    ///
    /// # Errors
    ///
    /// `unknown_channel`, `channel_closed`; the store's errors.
    pub async fn pause(&self, id: &str) -> Result<ChannelView, OutboxError> {
        self.transition(id, |_, _| Ok(ChannelState::Paused), false).await
    }

    /// Resumes a paused channel: its URL is checked again; an account or
    /// agent subscriber is `pending_activation` unless an activation
    /// succeeded for exactly its registration.
    ///
    /// # Errors
    ///
    /// `invalid_destination` (the URL no longer passes), as
    /// [`pause`](Self::pause).
    pub async fn resume(&self, id: &str) -> Result<ChannelView, OutboxError> {
        self.transition(
            id,
            |row, reg| {
                reg.destination()?.to_destination()?;
                let kind = ChannelKind::parse(&row.kind).unwrap_or(ChannelKind::Account);
                Ok(
                    if kind.needs_activation() && row.proven.as_deref() != Some(&row.fingerprint[..]) {
                        ChannelState::PendingActivation
                    } else {
                        ChannelState::Active
                    },
                )
            },
            false,
        )
        .await
    }

    /// Closes the channel: held events become due now, later ones are
    /// refused for good.
    ///
    /// # Errors
    ///
    /// `unknown_channel`; the store's errors. Closing a closed channel
    /// changes nothing.
    pub async fn close(&self, id: &str) -> Result<ChannelView, OutboxError> {
        self.transition(id, |_, _| Ok(ChannelState::Closed), true).await
    }

    /// Records the outcome of the activation challenge sent for the
    /// registration whose [`fingerprint`](ChannelRegistration::fingerprint)
    /// is `fingerprint`: when it succeeded and the channel's registration
    /// is still that one, the channel becomes active (unless paused).
    ///
    /// # Errors
    ///
    /// As [`pause`](Self::pause).
    pub async fn record_activation(
        &self,
        id: &str,
        fingerprint: [u8; 32],
        report: &adcp_webhook::ActivationReport,
    ) -> Result<ChannelView, OutboxError> {
        let activated = report.outcome.is_activated();
        loop {
            let row = self.row(id).await?;
            if row.state == ChannelState::Closed.as_str() {
                return Err(closed(id));
            }
            if !activated || row.fingerprint != fingerprint {
                // A failed challenge, or one for a registration since
                // replaced: nothing to record.
                return self.view(&row);
            }
            let mut next = row.clone();
            next.proven = Some(fingerprint.to_vec());
            if row.state == ChannelState::PendingActivation.as_str() {
                next.state = ChannelState::Active.as_str().to_owned();
            }
            let write = ChannelWrite {
                row: next,
                create: false,
                withdraw: None,
                flush_held: false,
                replace: Vec::new(),
                now_ms: self.now(),
            };
            if self.outbox.store().write_channel(write).await?.is_some() {
                return self.require(id).await;
            }
        }
    }

    /// Runs the activation challenge of an account or agent subscriber with
    /// `sender` (a [`WebhookSender`](adcp_webhook::WebhookSender), as
    /// `seller_agent_url`) and records its outcome.
    ///
    /// # Errors
    ///
    /// `invalid_registration` for a channel that is not a subscriber or a
    /// registration the challenge refuses; as
    /// [`record_activation`](Self::record_activation).
    pub async fn activate(
        &self,
        id: &str,
        sender: &dyn Activator,
        seller_agent_url: &str,
    ) -> Result<(ChannelView, adcp_webhook::ActivationReport), OutboxError> {
        let view = self.require(id).await?;
        let registration = match view.kind {
            ChannelKind::Account | ChannelKind::Agent => stored_registration(&view)?,
            _ => {
                return Err(OutboxError::invalid(
                    "invalid_registration",
                    format!("channel {id} is not a subscriber: it needs no activation"),
                ))
            }
        };
        let activation = activation_for(&registration, seller_agent_url)?;
        let report = sender.activate(&activation).await;
        let view = self.record_activation(id, registration.fingerprint(), &report).await?;
        Ok((view, report))
    }

    /// An event of `body` for the channel `id`: its destination, the
    /// registration's `token` on a task envelope, and the channel, so the
    /// enqueue checks the channel's state.
    ///
    /// # Errors
    ///
    /// `unknown_channel`; `invalid_payload` (not an object, an
    /// `idempotency_key` inside); `invalid_destination`.
    pub async fn event(&self, id: &str, body: &Value) -> Result<NewEvent, OutboxError> {
        let view = self.require(id).await?;
        let registration = stored_registration(&view)?;
        let mut body = body
            .as_object()
            .cloned()
            .ok_or_else(|| OutboxError::invalid("invalid_payload", "the payload must be a JSON object"))?;
        if let (Some(token), true) = (
            registration.registration().get("token").and_then(Value::as_str),
            body.contains_key("task_id"),
        ) {
            body.insert("token".to_owned(), Value::String(token.to_owned()));
        }
        let event = WebhookEvent::new_with(&body, self.outbox.config().random.as_ref())
            .map_err(|e| OutboxError::invalid("invalid_payload", e.to_string()))?;
        Ok(NewEvent::new(event, registration.destination()?).channel(id.to_owned()))
    }

    async fn transition(
        &self,
        id: &str,
        to: impl Fn(&ChannelRow, &ChannelRegistration) -> Result<ChannelState, OutboxError>,
        flush: bool,
    ) -> Result<ChannelView, OutboxError> {
        loop {
            let row = self.row(id).await?;
            let reg = stored_registration(&self.view(&row)?)?;
            if row.state == ChannelState::Closed.as_str() {
                return if flush { self.view(&row) } else { Err(closed(id)) };
            }
            let state = to(&row, &reg)?;
            let mut next = row.clone();
            next.state = state.as_str().to_owned();
            let write = ChannelWrite {
                row: next,
                create: false,
                withdraw: matches!(state, ChannelState::Paused | ChannelState::PendingActivation)
                    .then(|| format!("channel {}", state.as_str())),
                flush_held: flush,
                replace: Vec::new(),
                now_ms: self.now(),
            };
            if self.outbox.store().write_channel(write).await?.is_some() {
                return self.require(id).await;
            }
        }
    }

    fn view(&self, row: &ChannelRow) -> Result<ChannelView, OutboxError> {
        let kind = ChannelKind::parse(&row.kind)
            .ok_or_else(|| OutboxError::Schema(format!("channel {}: unknown kind {:?}", row.id, row.kind)))?;
        let state = ChannelState::parse(&row.state)
            .ok_or_else(|| OutboxError::Schema(format!("channel {}: unknown state {:?}", row.id, row.state)))?;
        Ok(ChannelView {
            id: row.id.clone(),
            kind,
            state,
            proven: row.proven.as_deref() == Some(&row.fingerprint[..]),
            registration: self.decode(row)?,
            rebuilt: 0,
        })
    }

    fn seal(&self, id: &str, registration: &Value) -> Result<Vec<u8>, OutboxError> {
        let plain = registration.to_string().into_bytes();
        match &self.outbox.config().encryption {
            Some(ring) => ring.seal(id, "registration", &plain),
            None => Ok(plain),
        }
    }

    fn decode(&self, row: &ChannelRow) -> Result<Value, OutboxError> {
        let plain = match (row.registration.first(), &self.outbox.config().encryption) {
            (Some(b'{'), _) => row.registration.clone(),
            (_, Some(ring)) => ring.open(&row.id, "registration", &row.registration)?,
            (_, None) => {
                return Err(OutboxError::Crypto(format!(
                    "the registration of channel {} is sealed and no keyring is configured",
                    row.id
                )))
            }
        };
        serde_json::from_slice(&plain)
            .map_err(|_| OutboxError::Schema(format!("channel {}: unreadable registration", row.id)))
    }
}

fn closed(id: &str) -> OutboxError {
    OutboxError::ChannelNotActive {
        channel: id.to_owned(),
        state: ChannelState::Closed,
    }
}

/// The registration a view holds, as its kind reads it.
fn stored_registration(view: &ChannelView) -> Result<ChannelRegistration, OutboxError> {
    // The id is `{kind}:{anchor}` or `{kind}:{anchor}:{subscriber_id}`.
    let rest = view
        .id
        .strip_prefix(view.kind.as_str())
        .and_then(|r| r.strip_prefix(':'))
        .unwrap_or_default();
    // A subscriber id may itself hold `:`: the anchor is what precedes the
    // registration's own subscriber id.
    let subscriber = view
        .registration
        .get("subscriber_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let anchor = match view.kind {
        ChannelKind::Account | ChannelKind::Agent => rest
            .strip_suffix(subscriber)
            .and_then(|a| a.strip_suffix(':'))
            .unwrap_or(rest),
        _ => rest,
    };
    match view.kind {
        ChannelKind::PushNotificationConfig => {
            ChannelRegistration::push_notification_config(anchor, &view.registration)
        }
        ChannelKind::ReportingWebhook => ChannelRegistration::reporting_webhook(anchor, &view.registration),
        ChannelKind::Account => ChannelRegistration::account(anchor, &view.registration),
        ChannelKind::Agent => ChannelRegistration::agent(anchor, &view.registration),
    }
}

fn activation_for(reg: &ChannelRegistration, seller_agent_url: &str) -> Result<adcp_webhook::Activation, OutboxError> {
    let r = reg.registration();
    let text = |name: &str| r.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
    let types: Vec<String> = r
        .get("event_types")
        .and_then(Value::as_array)
        .map(|t| t.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let refused = |e: adcp_webhook::ActivationError| OutboxError::invalid("invalid_registration", e.to_string());
    let activation = match reg.kind() {
        ChannelKind::Account => {
            adcp_webhook::Activation::account(text("url"), &reg.anchor, text("subscriber_id"), seller_agent_url, types)
        }
        _ => adcp_webhook::Activation::agent(text("url"), text("subscriber_id"), seller_agent_url, types),
    }
    .map_err(refused)?;
    let auth = match r.get("authentication") {
        None | Some(Value::Null) => adcp_webhook::payload::DeliveryAuth::rfc9421(),
        Some(a) => {
            let scheme = a
                .get("schemes")
                .and_then(Value::as_array)
                .and_then(|s| s.first())
                .and_then(Value::as_str)
                .unwrap_or_default();
            let credential = a.get("credentials").and_then(Value::as_str).unwrap_or_default();
            if scheme == "Bearer" {
                adcp_webhook::payload::DeliveryAuth::bearer(credential)
            } else {
                adcp_webhook::payload::DeliveryAuth::hmac_sha256(credential)
            }
        }
    };
    activation.with_delivery_auth(auth).map_err(refused)
}

/// Runs an activation challenge: [`WebhookSender`](adcp_webhook::WebhookSender)
/// does, and the relay's API holds one as a trait object.
#[async_trait::async_trait]
pub trait Activator: Send + Sync + 'static {
    /// One challenge (see [`adcp_webhook::WebhookSender::activate`]).
    async fn activate(&self, activation: &adcp_webhook::Activation) -> adcp_webhook::ActivationReport;
}

#[async_trait::async_trait]
impl<S: adcp_sign::Signer + Send + Sync + 'static> Activator for adcp_webhook::WebhookSender<S> {
    async fn activate(&self, activation: &adcp_webhook::Activation) -> adcp_webhook::ActivationReport {
        adcp_webhook::WebhookSender::activate(self, activation).await
    }
}
