//! Which signing profile a caller is canonicalizing for.

/// The AdCP signing surface whose error taxonomy a rejection is reported in.
///
/// Canonicalization itself is identical for both profiles; only the error code
/// differs (`webhook_target_uri_malformed` vs `request_target_uri_malformed`).
/// Non-signing callers (registries, `adagents.json` lookups) pick whichever
/// they like, or map [`crate::CanonError`] to their own code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// The webhook profile, tag `adcp/webhook-signing/v1`.
    Webhook,
    /// The request profile, tag `adcp/request-signing/v1`.
    Request,
}

impl Profile {
    /// The spec error code for a malformed `@target-uri` or `@authority`.
    pub const fn target_uri_malformed_code(self) -> &'static str {
        match self {
            Profile::Webhook => "webhook_target_uri_malformed",
            Profile::Request => "request_target_uri_malformed",
        }
    }

    /// The profile's name as used on the command line (`webhook` / `request`).
    pub const fn name(self) -> &'static str {
        match self {
            Profile::Webhook => "webhook",
            Profile::Request => "request",
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = UnknownProfile;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "webhook" => Ok(Profile::Webhook),
            "request" => Ok(Profile::Request),
            _ => Err(UnknownProfile),
        }
    }
}

/// Returned when parsing a [`Profile`] name other than `webhook` or `request`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownProfile;

impl std::fmt::Display for UnknownProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unknown profile (expected `webhook` or `request`)")
    }
}

impl std::error::Error for UnknownProfile {}
