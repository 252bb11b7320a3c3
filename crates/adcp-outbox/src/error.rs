//! Everything the outbox can refuse or fail at, one enum with stable codes.

/// An outbox operation failed. [`code`](Self::code) is stable (APIs and
/// logs use it); the message is for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutboxError {
    /// The key is already bound (in this signing scope) to another JCS
    /// payload: the spec binds a key to its canonical payload for the
    /// whole retry horizon, and a receiver would answer `409`.
    #[error("idempotency_key {key:?} is already bound to another payload in signing scope {scope:?}")]
    KeyConflict {
        /// The signing scope.
        scope: String,
        /// The key.
        key: String,
    },
    /// The key is already used, with the same payload, for another
    /// destination: one event fanned out to several subscribers needs one
    /// key per destination (the receivers deduplicate on it).
    #[error("idempotency_key {key:?} is already used for another destination; fan-out needs one key per destination")]
    KeyUsedForOtherDestination {
        /// The key.
        key: String,
    },
    /// The event is invalid before anything is stored (bad body, bad
    /// destination, a coalescing window the type does not allow, …).
    #[error("{message}")]
    Invalid {
        /// A stable code: `invalid_payload`, `invalid_destination`,
        /// `coalescing_window_too_long`, `invalid_member`.
        code: &'static str,
        /// What is wrong.
        message: String,
    },
    /// No event has this id.
    #[error("no event {0}")]
    NotFound(String),
    /// The event cannot be redriven (not terminal, or past its horizon).
    #[error("event cannot be redriven: {0}")]
    NotRedrivable(String),
    /// The configuration is refused (a lease not longer than the attempt
    /// timeout plus the margin, a bad table prefix, …).
    #[error("configuration refused: {0}")]
    Config(String),
    /// The store could not answer (unreachable, full, I/O error). Nothing
    /// was enqueued or changed; retry later. Maps to `503`.
    #[error("outbox store unavailable: {0}")]
    Unavailable(String),
    /// The store holds a schema this build does not know (newer version),
    /// or data it cannot read.
    #[error("outbox store schema: {0}")]
    Schema(String),
    /// Encryption at rest failed (unknown key id, tampered row).
    #[error("outbox encryption: {0}")]
    Crypto(String),
    /// The event's channel does not take events now: paused (nothing is
    /// kept for later), waiting for its activation challenge, or closed.
    #[error("channel {channel:?} is {state}: nothing is enqueued to it")]
    ChannelNotActive {
        /// The channel.
        channel: String,
        /// Its state: `paused`, `pending_activation` or `closed`.
        state: crate::channels::ChannelState,
    },
    /// No channel has this id.
    #[error("no channel {0:?}")]
    UnknownChannel(String),
}

impl OutboxError {
    /// The stable code.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::KeyConflict { .. } => "idempotency_key_conflict",
            Self::KeyUsedForOtherDestination { .. } => "idempotency_key_other_destination",
            Self::Invalid { code, .. } => code,
            Self::NotFound(_) => "not_found",
            Self::NotRedrivable(_) => "not_redrivable",
            Self::Config(_) => "invalid_configuration",
            Self::Unavailable(_) => "store_unavailable",
            Self::Schema(_) => "store_schema",
            Self::Crypto(_) => "encryption_error",
            Self::ChannelNotActive { state, .. } => match state {
                crate::channels::ChannelState::Paused => "channel_paused",
                crate::channels::ChannelState::Closed => "channel_closed",
                _ => "channel_not_activated",
            },
            Self::UnknownChannel(_) => "unknown_channel",
        }
    }

    /// Whether retrying later may succeed (the store was unavailable).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }

    pub(crate) fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::Invalid {
            code,
            message: message.into(),
        }
    }
}
