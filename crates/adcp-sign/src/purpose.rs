//! [`KeyPurpose`]: the `adcp_use` member of a published signing key.

/// The AdCP key purpose (`adcp_use`) published with a signing key.
///
/// New keys are [`KeyPurpose::RequestSigning`]: webhooks are signed with
/// the agent's request-signing key (domain separation is carried by the
/// `tag`, not the purpose). [`KeyPurpose::WebhookSigning`] is deprecated
/// (AdCP issue #5555); verifiers still accept it on the webhook path only,
/// and it is kept here so existing keys can be re-published unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KeyPurpose {
    /// `request-signing`: valid for requests and webhooks.
    #[default]
    RequestSigning,
    /// `webhook-signing`: deprecated; webhooks only.
    WebhookSigning,
}

impl KeyPurpose {
    /// The `adcp_use` value.
    ///
    /// ```
    /// assert_eq!(adcp_sign::KeyPurpose::default().as_str(), "request-signing");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RequestSigning => "request-signing",
            Self::WebhookSigning => "webhook-signing",
        }
    }

    /// The purpose named by an `adcp_use` value, if this crate signs for it
    /// (`governance-signing`, `response-signing` and the rest are other
    /// profiles' keys).
    #[must_use]
    pub fn from_adcp_use(value: &str) -> Option<Self> {
        match value {
            "request-signing" => Some(Self::RequestSigning),
            "webhook-signing" => Some(Self::WebhookSigning),
            _ => None,
        }
    }

    /// Whether the purpose is deprecated.
    #[must_use]
    pub const fn is_deprecated(self) -> bool {
        matches!(self, Self::WebhookSigning)
    }
}
