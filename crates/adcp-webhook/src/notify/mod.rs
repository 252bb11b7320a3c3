//! The sending side of every AdCP 3.2 notification kind: typed builders
//! that produce a complete body, the mirror of the receiving model in
//! [`crate::payload`].
//!
//! Each builder starts from what the buyer registered ([`Registered`]:
//! the echoed members of its registration) and the `fired_at` instant, takes the kind's members through typed setters and
//! [`build`](AccountStatusChangedBuilder::build)s a [`Notification`]: the
//! body with its `idempotency_key`, ready for
//! [`Notification::into_event`] (a [`WebhookEvent`] for
//! [`WebhookSender`](crate::WebhookSender) or an outbox).
//!
//! What every builder does the same way:
//!
//! - **`notification_id`** follows the kind's rule in
//!   `enums/notification-type.json`: it *equals* a member where the rule
//!   says so (`impairment.impairment_id`, `change_id`, `event.event_id`),
//!   and a setter that tries another value is refused; where the rule
//!   says "stable per (…)" the builder derives it from exactly those
//!   members (a SHA-256 of them, so a re-emission of the same logical
//!   event gets the same id), unless the caller sets one; it is absent on
//!   delivery reports and on the kinds whose schemas have none (list
//!   changes, artifact batches, revocations). `reporting.status_changed`
//!   has no member that tells two occurrences of the same health
//!   transition apart, so its id must be given.
//! - **`fired_at`** (`timestamp` on task envelopes and artifact batches)
//!   is a value the caller fixes once when the event is generated and
//!   passes to the builder's constructor. No builder reads the clock: an
//!   event rebuilt for a retry or after a restart carries the same
//!   instant, so its bytes do not change.
//! - **`subscriber_id`, `token`, `operation_id`** are copied from the
//!   registration ([`Registered`]) exactly as registered (never trimmed
//!   or normalized). Account-, agent- and caller-anchored notifications
//!   carry `subscriber_id` (required there); their schemas have no
//!   `token` or `operation_id` member, so those are not echoed on them.
//!   Task envelopes (delivery reports, impairments) echo `operation_id`
//!   (required), `token` and `subscriber_id` when registered.
//!   `product.*` wholesale events echo the registered
//!   `product_payload_view`.
//! - **`idempotency_key`**: the one given with
//!   [`idempotency_key`](AccountStatusChangedBuilder::idempotency_key)
//!   (an outbox row rebuilt after a restart), else a fresh UUID v4 from
//!   the operating system's CSPRNG ([`build`](AccountStatusChangedBuilder::build))
//!   or from a [`RandomSource`] ([`build_with`](AccountStatusChangedBuilder::build_with)),
//!   as [`McpWebhook`](crate::McpWebhook) and [`WebhookEvent::new`] do.
//! - **Required members**: a body that lacks one is refused with
//!   [`BuildError::Missing`] naming it by its path in the body
//!   (`creative_id`, `transition.from`, `result.impairment.impairment_id`).
//!   A member with a fixed shape that the builder can check locally
//!   (`fired_at` as an RFC 3339 date-time, the `notification_id` and
//!   `subscriber_id` patterns) is refused
//!   with [`BuildError::Invalid`]. Enumerations and the rest of each
//!   schema are the caller's: the builder does not carry the schemas.
//!
//! | Family | Builders |
//! |---|---|
//! | account | [`AccountStatusChangedBuilder`], [`AccountChangeRecordedBuilder`] |
//! | agent | [`CapabilitiesChangedBuilder`], [`PrincipalChangedBuilder`] |
//! | creative | [`CreativeStatusChangedBuilder`], [`CreativeAssignmentChangedBuilder`], [`CreativePurgedBuilder`] |
//! | indicators | [`IndicatorsChangedBuilder`] |
//! | impairment | [`ImpairmentBuilder`] (task envelope on `push_notification_config`) |
//! | wholesale | [`WholesaleFeedBuilder`] (`product.*`, `signal.*`, `wholesale_feed.bulk_change`) |
//! | reporting | [`ReportingDeliveryReadyBuilder`], [`ReportingStatusChangedBuilder`], [`ReportingLedgerChangedBuilder`] |
//! | lists | [`ListChangedBuilder`] (`property_list_changed`, `collection_list_changed`) |
//! | artifacts | [`ArtifactBatchBuilder`] |
//! | revocations | [`RightsRevocationBuilder`] |
//! | delivery reports | [`DeliveryReportBuilder`] (task envelope on `reporting_webhook`) |
//!
//! ```
//! use adcp_webhook::notify::{AccountStatusChangedBuilder, BuildError, Registered};
//! use adcp_webhook::payload::{AcceptKinds, Channel, PayloadKind, WebhookPayload};
//! use serde_json::json;
//!
//! // The buyer's notification_configs[] entry, as registered.
//! let registration = Registered::from_value(&json!({
//!     "subscriber_id": "ops-bus",
//!     "url": "https://buyer.example/hooks/accounts",
//!     "event_types": ["account.status_changed"]
//! }));
//! // fired_at is fixed once, when the event is generated.
//! let builder = AccountStatusChangedBuilder::new(&registration, "2026-04-18T12:00:00Z")
//!     .account_id("acc_1")
//!     .previous_status("pending_approval")
//!     .status("active")
//!     .observed_at("2026-04-18T11:59:30Z");
//!
//! // A required member is missing: refused, with its name.
//! let err = builder.clone().build().unwrap_err();
//! assert_eq!(err, BuildError::Missing { member: "reason_code" });
//!
//! let notification = builder.reason_code("approved").build()?;
//! let event = notification.into_event()?; // for the sender or the outbox
//! let body: serde_json::Value = serde_json::from_slice(event.body().as_bytes())?;
//! assert_eq!(body["subscriber_id"], "ops-bus");
//!
//! // The receiving side reads it back as its kind.
//! let payload = WebhookPayload::classify(&body, Some(Channel::AccountNotifications), AcceptKinds::All)?;
//! assert_eq!(payload.kind(), PayloadKind::AccountStatusChanged);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod account;
mod agent;
mod artifacts;
mod creative;
mod delivery;
mod impairment;
mod indicators;
mod lists;
mod reporting;
mod revocations;
mod wholesale;

pub use account::{AccountChangeRecordedBuilder, AccountStatusChangedBuilder};
pub use agent::{CapabilitiesChangedBuilder, PrincipalChangedBuilder};
pub use artifacts::ArtifactBatchBuilder;
pub use creative::{CreativeAssignmentChangedBuilder, CreativePurgedBuilder, CreativeStatusChangedBuilder};
pub use delivery::{DeliveryReportBuilder, ReportType};
pub use impairment::ImpairmentBuilder;
pub use indicators::IndicatorsChangedBuilder;
pub use lists::{ListChangedBuilder, ListKind};
pub use reporting::{ReportingDeliveryReadyBuilder, ReportingLedgerChangedBuilder, ReportingStatusChangedBuilder};
pub use revocations::RightsRevocationBuilder;
pub use wholesale::{WholesaleEventType, WholesaleFeedBuilder};

use crate::payload::PayloadKind;
use adcp_sign::{IdempotencyKey, RandomSource, SignError, WebhookEvent};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The members of a buyer's registration that a notification echoes:
/// a `notification_configs[]` entry, a `push_notification_config`, a
/// `reporting_webhook`. Values are kept exactly as registered. (Not the
/// receiver's [`crate::Registration`], which is a buyer's record of a
/// subscription.)
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Registered {
    subscriber_id: Option<String>,
    token: Option<String>,
    operation_id: Option<String>,
    product_payload_view: Option<String>,
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registered")
            .field("subscriber_id", &self.subscriber_id)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("operation_id", &self.operation_id)
            .field("product_payload_view", &self.product_payload_view)
            .finish()
    }
}

impl Registered {
    /// A registration with none of the echoed members.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads `subscriber_id`, `token`, `operation_id` and
    /// `product_payload_view` from a registration object; members that are absent or not strings are
    /// left unset. Never panics.
    #[must_use]
    pub fn from_value(registration: &Value) -> Self {
        let text = |name: &str| registration.get(name).and_then(Value::as_str).map(str::to_owned);
        Self {
            subscriber_id: text("subscriber_id"),
            token: text("token"),
            operation_id: text("operation_id"),
            product_payload_view: text("product_payload_view"),
        }
    }

    /// The registered `subscriber_id`.
    #[must_use]
    pub fn with_subscriber_id(mut self, subscriber_id: impl Into<String>) -> Self {
        self.subscriber_id = Some(subscriber_id.into());
        self
    }

    /// The registered `token` (echoed on task envelopes).
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The registered `operation_id` (echoed on task envelopes).
    #[must_use]
    pub fn with_operation_id(mut self, operation_id: impl Into<String>) -> Self {
        self.operation_id = Some(operation_id.into());
        self
    }

    /// The registered `product_payload_view` (`canonical` or `legacy`:
    /// echoed on `product.*` wholesale events).
    #[must_use]
    pub fn with_product_payload_view(mut self, view: impl Into<String>) -> Self {
        self.product_payload_view = Some(view.into());
        self
    }

    /// The registered `subscriber_id`.
    #[must_use]
    pub fn subscriber_id(&self) -> Option<&str> {
        self.subscriber_id.as_deref()
    }

    /// The registered `token`.
    #[must_use]
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The registered `operation_id`.
    #[must_use]
    pub fn operation_id(&self) -> Option<&str> {
        self.operation_id.as_deref()
    }

    /// The registered `product_payload_view`.
    #[must_use]
    pub fn product_payload_view(&self) -> Option<&str> {
        self.product_payload_view.as_deref()
    }
}

/// Why a builder refused to build a body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A member the kind's schema requires is missing (its path in the
    /// body, for example `result.impairment.impairment_id`).
    #[error("required member {member} is missing")]
    Missing {
        /// The member's path in the body, dot-separated.
        member: &'static str,
    },
    /// A member has a value the kind's rules refuse.
    #[error("member {member} is invalid: {reason}")]
    Invalid {
        /// The member's path in the body, dot-separated.
        member: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// No idempotency key could be generated, or the body could not be
    /// serialized into an event: the [`SignError`] code
    /// (`randomness_unavailable`, `payload_too_large`, …).
    #[error("webhook event: {code}")]
    Event {
        /// The [`SignError::code`].
        code: &'static str,
    },
}

impl From<SignError> for BuildError {
    fn from(e: SignError) -> Self {
        Self::Event { code: e.code() }
    }
}

/// How a kind's `notification_id` is set.
#[derive(Debug, Clone, Copy)]
pub(crate) enum IdRule {
    /// Absent (no member of that name in the body).
    Absent,
    /// Equals the string at this path.
    Equals(&'static str),
    /// Derived from the values at these paths, unless set.
    Derived(&'static str, &'static [&'static str]),
    /// Given by the caller.
    Given,
}

/// The body under construction, shared by every builder.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    kind: PayloadKind,
    notification_type: String,
    body: Map<String, Value>,
    required: &'static [&'static str],
    id_rule: IdRule,
    notification_id: Option<String>,
    key: Option<IdempotencyKey>,
    invalid: Option<BuildError>,
    conditional: Option<fn(&Draft) -> &'static [&'static str]>,
    check: Option<Check>,
    non_empty: &'static [&'static str],
}

/// A check across members of a draft.
type Check = fn(&Draft) -> Result<(), BuildError>;

impl Draft {
    /// A notification (`notification_type` at the top) for `registration`
    /// fired at `fired_at`.
    pub(crate) fn notification(
        kind: PayloadKind,
        notification_type: &str,
        registration: &Registered,
        fired_at: String,
        required: &'static [&'static str],
        id_rule: IdRule,
    ) -> Self {
        let mut draft = Self::plain(kind, required, id_rule);
        draft.notification_type = notification_type.to_owned();
        draft.set("notification_type", Value::String(notification_type.to_owned()));
        draft.set_time("fired_at", fired_at);
        if let Some(s) = &registration.subscriber_id {
            if !is_subscriber_id(s) {
                draft.refuse("subscriber_id", "does not match ^[A-Za-z0-9_.:-]{1,64}$");
            }
            draft.set("subscriber_id", Value::String(s.clone()));
        }
        draft
    }

    /// A task envelope whose `result` has `notification_type`, echoing the
    /// registration's `operation_id`, `token` and `subscriber_id`.
    pub(crate) fn envelope(
        notification_type: &str,
        registration: &Registered,
        task_type: &str,
        timestamp: String,
        required: &'static [&'static str],
        id_rule: IdRule,
    ) -> Self {
        let mut draft = Self::plain(PayloadKind::McpTask, required, id_rule);
        draft.notification_type = notification_type.to_owned();
        if let Some(op) = &registration.operation_id {
            draft.set("operation_id", Value::String(op.clone()));
        }
        draft.set("task_type", Value::String(task_type.to_owned()));
        draft.set("status", Value::String("completed".to_owned()));
        draft.set_time("timestamp", timestamp);
        if let Some(token) = &registration.token {
            draft.set("token", Value::String(token.clone()));
        }
        if let Some(s) = &registration.subscriber_id {
            draft.set("subscriber_id", Value::String(s.clone()));
        }
        draft.set("result.notification_type", Value::String(notification_type.to_owned()));
        draft
    }

    /// A body without a notification header.
    pub(crate) fn plain(kind: PayloadKind, required: &'static [&'static str], id_rule: IdRule) -> Self {
        Self {
            kind,
            notification_type: String::new(),
            body: Map::new(),
            required,
            id_rule,
            notification_id: None,
            key: None,
            invalid: None,
            conditional: None,
            check: None,
            non_empty: &[],
        }
    }

    /// A check across members (run at build, after the required members).
    pub(crate) fn with_check(mut self, f: Check) -> Self {
        self.check = Some(f);
        self
    }

    /// Refuses (at build) an empty array at any of `paths`: members the
    /// schema requires to hold at least one item.
    pub(crate) fn non_empty(self, paths: &'static [&'static str]) -> Self {
        let mut draft = self;
        draft.non_empty = paths;
        draft
    }

    /// The notification type a plain body reports (its `event`).
    pub(crate) fn with_type(mut self, notification_type: &str) -> Self {
        notification_type.clone_into(&mut self.notification_type);
        self
    }

    /// Members required only in some shapes of the body (an `if`/`then`
    /// of the schema), read from the draft at build.
    pub(crate) fn with_conditional(mut self, f: fn(&Draft) -> &'static [&'static str]) -> Self {
        self.conditional = Some(f);
        self
    }

    /// Sets the value at a dot-separated path, creating objects on the
    /// way (a non-object in the way is replaced).
    pub(crate) fn set(&mut self, path: &str, value: Value) {
        let mut parts = path.split('.').peekable();
        let mut obj = &mut self.body;
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                obj.insert(part.to_owned(), value);
                return;
            }
            let slot = obj.entry(part.to_owned()).or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            let Value::Object(next) = slot else { return };
            obj = next;
        }
    }

    /// Sets a date-time member, refusing (at build) one that is not RFC
    /// 3339.
    pub(crate) fn set_time(&mut self, path: &'static str, value: String) {
        if !is_date_time(&value) {
            self.refuse(path, "not an RFC 3339 date-time");
        }
        self.set(path, Value::String(value));
    }

    /// Sets a member the caller names ([`member`](AccountStatusChangedBuilder::member)),
    /// refusing one the builder owns (or an object holding one): the
    /// header, the key, the echoed registration and the discriminators.
    pub(crate) fn set_extra(&mut self, path: &str, value: Value) {
        const OWNED: [&str; 11] = [
            "idempotency_key",
            "notification_id",
            "notification_type",
            "fired_at",
            "timestamp",
            "subscriber_id",
            "token",
            "operation_id",
            "result.notification_type",
            "event.event_type",
            "event.entity_type",
        ];
        let owned = OWNED
            .iter()
            .find(|o| **o == path || o.strip_prefix(path).is_some_and(|rest| rest.starts_with('.')));
        match owned {
            Some(o) => self.refuse(o, "set by the builder from its rules; not through member()"),
            None => self.set(path, value),
        }
    }

    /// Records the first refused input; [`Draft::build`] returns it.
    pub(crate) fn refuse(&mut self, member: &'static str, reason: &'static str) {
        if self.invalid.is_none() {
            self.invalid = Some(BuildError::Invalid { member, reason });
        }
    }

    pub(crate) fn get(&self, path: &str) -> Option<&Value> {
        let mut parts = path.split('.');
        let mut value = self.body.get(parts.next()?)?;
        for part in parts {
            value = value.get(part)?;
        }
        (!value.is_null()).then_some(value)
    }

    pub(crate) fn set_notification_id(&mut self, id: String) {
        self.notification_id = Some(id);
    }

    pub(crate) fn set_key(&mut self, key: IdempotencyKey) {
        self.key = Some(key);
    }

    pub(crate) fn build_with<R: RandomSource + ?Sized>(mut self, random: &R) -> Result<Notification, BuildError> {
        if let Some(err) = self.invalid.take() {
            return Err(err);
        }
        let conditional = self.conditional.map_or(&[][..], |f| f(&self));
        if let Some(member) = self.required.iter().chain(conditional).find(|m| self.get(m).is_none()) {
            return Err(BuildError::Missing { member });
        }
        let empty = |p: &&&'static str| self.get(p).and_then(Value::as_array).is_some_and(Vec::is_empty);
        if let Some(member) = self.non_empty.iter().find(empty) {
            return Err(BuildError::Invalid {
                member,
                reason: "must hold at least one item",
            });
        }
        if let Some(check) = self.check {
            check(&self)?;
        }
        let id = self.resolve_id()?;
        if let Some(id) = &id {
            self.body
                .insert("notification_id".to_owned(), Value::String(id.clone()));
        }
        let key = match self.key {
            Some(key) => key,
            None => IdempotencyKey::generate_with(random)?,
        };
        Ok(Notification {
            kind: self.kind,
            notification_type: (!self.notification_type.is_empty()).then_some(self.notification_type),
            notification_id: id,
            key,
            body: self.body,
        })
    }

    fn resolve_id(&self) -> Result<Option<String>, BuildError> {
        let given = self.notification_id.clone();
        let id = match self.id_rule {
            IdRule::Absent => {
                if given.is_some() {
                    return Err(BuildError::Invalid {
                        member: "notification_id",
                        reason: "this kind carries no notification_id",
                    });
                }
                return Ok(None);
            }
            IdRule::Equals(path) => {
                let member = self.get(path).and_then(Value::as_str).unwrap_or_default().to_owned();
                if given.as_ref().is_some_and(|g| *g != member) {
                    return Err(BuildError::Invalid {
                        member: "notification_id",
                        reason: "must equal the member the kind's rule names",
                    });
                }
                member
            }
            IdRule::Derived(prefix, paths) => match given {
                Some(id) => id,
                None => derive_id(prefix, paths.iter().map(|p| self.get(p))),
            },
            IdRule::Given => given.ok_or(BuildError::Missing {
                member: "notification_id",
            })?,
        };
        if !crate::payload::is_valid_notification_id(&id) {
            return Err(BuildError::Invalid {
                member: "notification_id",
                reason: "does not match ^[A-Za-z0-9_.:-]{1,255}$",
            });
        }
        Ok(Some(id))
    }
}

/// `prefix:` and 32 hex digits of a SHA-256 over the values (each
/// length-prefixed, absent ones as a distinct marker).
fn derive_id<'a>(prefix: &str, values: impl Iterator<Item = Option<&'a Value>>) -> String {
    let mut hash = Sha256::new();
    hash.update(prefix.as_bytes());
    for value in values {
        match value {
            None => hash.update([0_u8]),
            Some(v) => {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                hash.update([1_u8]);
                hash.update((text.len() as u64).to_be_bytes());
                hash.update(text.as_bytes());
            }
        }
    }
    let digest = hash.finalize();
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("{prefix}:{hex}")
}

/// Whether `s` fits `subscriber_id` (`^[A-Za-z0-9_.:-]{1,64}$`).
fn is_subscriber_id(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// Whether `s` is an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`).
pub(crate) fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |range: std::ops::Range<usize>| b.get(range).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let num = |range: std::ops::Range<usize>| -> u32 {
        b.get(range)
            .map_or(99, |d| d.iter().fold(0, |n, c| n * 10 + u32::from(c - b'0')))
    };
    if b.len() < 20
        || !(digits(0..4) && digits(5..7) && digits(8..10) && digits(11..13) && digits(14..16) && digits(17..19))
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return false;
    }
    let (month, day, hour, minute, second) = (num(5..7), num(8..10), num(11..13), num(14..16), num(17..19));
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i..) {
        Some([b'Z' | b'z']) => true,
        Some([b'+' | b'-', rest @ ..]) if rest.len() == 5 => {
            rest[2] == b':' && rest[..2].iter().chain(&rest[3..]).all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// A built body of one notification kind, with its `idempotency_key`.
///
/// The body is fixed: [`Notification::into_event`] serializes it once,
/// and every delivery attempt sends those bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    kind: PayloadKind,
    notification_type: Option<String>,
    notification_id: Option<String>,
    key: IdempotencyKey,
    body: Map<String, Value>,
}

impl Notification {
    /// The kind the receiving side classifies the body as
    /// ([`PayloadKind::McpTask`] for delivery reports and impairments).
    #[must_use]
    pub fn kind(&self) -> PayloadKind {
        self.kind
    }

    /// The notification type (`account.status_changed`, `scheduled`,
    /// `impairment`, `property_list_changed`, …); `None` for artifact
    /// batches and revocations, which have none.
    #[must_use]
    pub fn notification_type(&self) -> Option<&str> {
        self.notification_type.as_deref()
    }

    /// The `notification_id`, when the kind carries one.
    #[must_use]
    pub fn notification_id(&self) -> Option<&str> {
        self.notification_id.as_deref()
    }

    /// The `idempotency_key`.
    #[must_use]
    pub fn idempotency_key(&self) -> &IdempotencyKey {
        &self.key
    }

    /// The body as a JSON value, `idempotency_key` included.
    #[must_use]
    pub fn to_value(&self) -> Value {
        let mut body = Map::with_capacity(self.body.len() + 1);
        body.insert(
            "idempotency_key".to_owned(),
            Value::String(self.key.as_str().to_owned()),
        );
        body.extend(self.body.iter().map(|(k, v)| (k.clone(), v.clone())));
        Value::Object(body)
    }

    /// The body serialized once under its key, `idempotency_key` first:
    /// the event to hand to [`WebhookSender`](crate::WebhookSender) or to
    /// enqueue in an outbox.
    ///
    /// # Errors
    ///
    /// [`BuildError::Event`] (a body over the default 1 MiB limit).
    pub fn into_event(self) -> Result<WebhookEvent, BuildError> {
        WebhookEvent::with_idempotency_key(self.key, &self.body).map_err(BuildError::from)
    }
}

/// The methods every builder has: the key, an extra member, and build.
macro_rules! common_builder {
    ($ty:ident) => {
        impl $ty {
            /// Uses a key kept by the caller (an outbox row rebuilt after a
            /// restart) instead of generating one.
            #[must_use]
            pub fn idempotency_key(mut self, key: adcp_sign::IdempotencyKey) -> Self {
                self.draft.set_key(key);
                self
            }

            /// Another member at a dot-separated path (an `ext` object, a
            /// member a later schema revision adds). Required members are
            /// still checked at build. A member the builder sets by its
            /// rules (`idempotency_key`, `notification_id`,
            /// `notification_type`, `fired_at` / `timestamp`, the echoed
            /// `subscriber_id`, `token` and `operation_id`, the type
            /// discriminators), or an object holding one, is refused at
            /// build with [`BuildError::Invalid`](crate::notify::BuildError::Invalid).
            #[must_use]
            pub fn member(mut self, path: &str, value: serde_json::Value) -> Self {
                self.draft.set_extra(path, value);
                self
            }

            /// Builds the body with a fresh UUID v4 key from the operating
            /// system's CSPRNG (or the key given).
            ///
            /// # Errors
            ///
            /// [`BuildError::Missing`](crate::notify::BuildError::Missing) naming the first required member
            /// that is missing, [`BuildError::Invalid`](crate::notify::BuildError::Invalid), or
            /// [`BuildError::Event`](crate::notify::BuildError::Event) when no randomness is available.
            pub fn build(self) -> Result<$crate::notify::Notification, $crate::notify::BuildError> {
                self.draft.build_with(&adcp_sign::OsRandom)
            }

            /// As [`build`](Self::build), drawing the key from `random`.
            ///
            /// # Errors
            ///
            /// As [`build`](Self::build).
            pub fn build_with<R: adcp_sign::RandomSource + ?Sized>(
                self,
                random: &R,
            ) -> Result<$crate::notify::Notification, $crate::notify::BuildError> {
                self.draft.build_with(random)
            }
        }
    };
}

/// The `notification_id` setter of kinds whose id is derived or given.
macro_rules! notification_id_setter {
    ($ty:ident) => {
        impl $ty {
            /// Sets the `notification_id` instead of the one the kind's rule
            /// derives (keep it stable across re-emissions of the same
            /// logical event).
            #[must_use]
            pub fn notification_id(mut self, id: impl Into<String>) -> Self {
                self.draft.set_notification_id(id.into());
                self
            }
        }
    };
}

/// Typed setters, each writing one member at a path.
macro_rules! setters {
    ($ty:ident { $( $(#[$doc:meta])* $name:ident($path:literal): $conv:ident; )* }) => {
        impl $ty {
            $( $crate::notify::setter!($(#[$doc])* $name $path $conv); )*
        }
    };
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident $path:literal text) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, value: impl Into<String>) -> Self {
            self.draft.set($path, serde_json::Value::String(value.into()));
            self
        }
    };
    ($(#[$doc:meta])* $name:ident $path:literal time) => {
        $(#[$doc])*
        /// (An RFC 3339 date-time.)
        #[must_use]
        pub fn $name(mut self, value: impl Into<String>) -> Self {
            self.draft.set_time($path, value.into());
            self
        }
    };
    ($(#[$doc:meta])* $name:ident $path:literal json) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, value: serde_json::Value) -> Self {
            self.draft.set($path, value);
            self
        }
    };
    ($(#[$doc:meta])* $name:ident $path:literal int) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, value: i64) -> Self {
            self.draft.set($path, serde_json::Value::from(value));
            self
        }
    };
    ($(#[$doc:meta])* $name:ident $path:literal bool) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, value: bool) -> Self {
            self.draft.set($path, serde_json::Value::Bool(value));
            self
        }
    };
    ($(#[$doc:meta])* $name:ident $path:literal texts) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name<I, S>(mut self, values: I) -> Self
        where
            I: IntoIterator<Item = S>,
            S: Into<String>,
        {
            let values = values.into_iter().map(|v| serde_json::Value::String(v.into())).collect();
            self.draft.set($path, serde_json::Value::Array(values));
            self
        }
    };
}

pub(crate) use {common_builder, notification_id_setter, setter, setters};

#[cfg(test)]
mod tests {
    use super::*;
    use adcp_sign::OsRandom;

    #[test]
    fn date_times() {
        for ok in [
            "2026-04-18T12:00:00Z",
            "2026-04-18T12:00:00.123+02:00",
            "2026-04-18t12:00:00z",
        ] {
            assert!(is_date_time(ok), "{ok}");
        }
        for bad in [
            "",
            "2026-04-18",
            "2026-04-18T12:00:00",
            "2026-13-18T12:00:00Z",
            "2026-04-18T12:00:00.Z",
            "2026-04-18T12:00:00+0200",
            "2026-04-18T12:00:00Zx",
            "２０２６-04-18T12:00:00Z",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }

    #[test]
    fn derived_ids_depend_on_every_value() {
        let a = Value::String("a".into());
        let b = Value::String("b".into());
        let ab = derive_id("x", [Some(&a), Some(&b)].into_iter());
        assert_eq!(ab, derive_id("x", [Some(&a), Some(&b)].into_iter()));
        assert_ne!(ab, derive_id("x", [Some(&b), Some(&a)].into_iter()));
        assert_ne!(ab, derive_id("x", [Some(&a), None].into_iter()));
        assert!(crate::payload::is_valid_notification_id(&ab));
    }

    #[test]
    fn set_and_get_paths() {
        let mut d = Draft::plain(PayloadKind::Generic, &["a.b.c"], IdRule::Absent);
        d.set("a", Value::from(1));
        d.set("a.b.c", Value::from(2));
        assert_eq!(d.get("a.b.c"), Some(&Value::from(2)));
        d.set("a.b.c", Value::Null);
        assert_eq!(
            d.build_with(&OsRandom).unwrap_err(),
            BuildError::Missing { member: "a.b.c" }
        );
    }
}
