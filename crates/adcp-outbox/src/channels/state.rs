//! The states of a channel.

/// Whether a channel takes events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelState {
    /// Events are enqueued and delivered.
    Active,
    /// Waiting for the activation challenge of its current registration
    /// (account and agent subscribers): events are refused.
    PendingActivation,
    /// Paused (`active: false`): events are refused and nothing is kept
    /// for later.
    Paused,
    /// Terminated: events are refused for good.
    Closed,
}

impl ChannelState {
    /// `active`, `pending_activation`, `paused`, `closed`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::PendingActivation => "pending_activation",
            Self::Paused => "paused",
            Self::Closed => "closed",
        }
    }

    /// Reads [`as_str`](Self::as_str).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Active, Self::PendingActivation, Self::Paused, Self::Closed]
            .into_iter()
            .find(|st| st.as_str() == s)
    }
}

impl std::fmt::Display for ChannelState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
