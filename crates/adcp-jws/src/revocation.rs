//! Checklist step 14: governance revocation lists.

use std::collections::HashMap;

use adcp_jwks::{
    Fetcher, RevocationList, GRACE_INTERVALS, MAX_REVOCATION_LIST_BYTES, POLL_CEILING_SECS, POLL_FLOOR_SECS,
};
use adcp_sigbase::jwk::Jwk;
use serde_json::Value;
use tokio::sync::Mutex;
use url::Url;

use crate::error::{ErrorCode, GovError};

/// A governance revocation list as last refreshed: `revoked_jtis`,
/// `revoked_kids`, and when it goes stale.
///
/// Stale means not refreshed by `next_update + 4 × interval`, the
/// interval being `next_update − fetched_at` clamped to `[1 min, 30 min]`
/// (the spec's recommended grace). A stale list blocks execution-phase
/// tokens (`governance_revocation_stale`); intent tokens are still checked
/// against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GovernanceRevocations {
    list: RevocationList,
    fetched_at: i64,
}

impl GovernanceRevocations {
    /// A list refreshed at `fetched_at` (Unix seconds).
    #[must_use]
    pub const fn new(list: RevocationList, fetched_at: i64) -> Self {
        Self { list, fetched_at }
    }

    /// Parses a list document: a JWS (flattened or general JSON
    /// serialization, `typ` `adcp-gov-revocation+jws`) verified with a key
    /// of `jwks` (`{"keys": [...]}`), or — only if `allow_unsigned` — the
    /// bare payload object.
    ///
    /// # Errors
    ///
    /// The document error (malformed, no verifying signature, unsigned
    /// when not allowed).
    pub fn parse(bytes: &[u8], jwks: Option<&Value>, allow_unsigned: bool, fetched_at: i64) -> Result<Self, String> {
        let keys: Vec<Jwk> = jwks
            .and_then(|j| j.get("keys"))
            .and_then(Value::as_array)
            .map(|ks| ks.iter().filter_map(|k| Jwk::from_json_value(k).ok()).collect())
            .unwrap_or_default();
        let list =
            RevocationList::parse_signed(bytes, |kid| keys.iter().find(|k| k.kid() == Some(kid)), allow_unsigned)
                .map_err(|e| e.to_string())?;
        Ok(Self::new(list, fetched_at))
    }

    /// The list.
    #[must_use]
    pub const fn list(&self) -> &RevocationList {
        &self.list
    }

    /// The polling interval the list declares, clamped to `[1 min, 30 min]`.
    #[must_use]
    pub fn interval(&self) -> i64 {
        self.list
            .next_update
            .saturating_sub(self.fetched_at)
            .clamp(POLL_FLOOR_SECS, POLL_CEILING_SECS)
    }

    /// Whether a refresh is due at `now`.
    #[must_use]
    pub fn is_due(&self, now: i64) -> bool {
        now >= self.fetched_at.saturating_add(self.interval())
    }

    /// Whether the list is past its grace at `now`.
    #[must_use]
    pub fn is_stale(&self, now: i64) -> bool {
        now > self
            .list
            .next_update
            .saturating_add(GRACE_INTERVALS.saturating_mul(self.interval()))
    }

    /// Step 14 against this list.
    pub(crate) fn check(&self, jti: &str, kid: &str) -> Result<(), GovError> {
        if self.list.revoked_jtis.contains(jti) {
            return Err(GovError::new(ErrorCode::TokenRevoked, 14, "jti is in revoked_jtis"));
        }
        if self.list.revoked_kids.contains(kid) {
            return Err(GovError::new(ErrorCode::TokenRevoked, 14, "kid is in revoked_kids"));
        }
        Ok(())
    }
}

/// The path of an issuer's list, at the origin of `iss`.
pub const REVOCATION_PATH: &str = "/.well-known/governance-revocations.json";

/// Per issuer origin: the last good list, and the time of the last failed
/// refresh (backoff).
pub(crate) type PollState = (Option<GovernanceRevocations>, Option<i64>);

/// Where the verifier gets revocation lists from.
pub(crate) enum RevocationSource {
    /// None configured: intent tokens pass step 14 on `jti`/`kid` alone,
    /// execution tokens are refused as stale (fail closed).
    None,
    /// One fixed list (a file): it governs the issuers whose origin is
    /// its `issuer` (every issuer when it names none).
    Static(GovernanceRevocations),
    /// Fetched (signed) from `url`, or from the issuer's origin at
    /// [`REVOCATION_PATH`] when `url` is `None`; polled per `next_update`.
    Fetched {
        url: Option<Url>,
        fetcher: Fetcher,
        state: Mutex<HashMap<String, PollState>>,
    },
}

impl std::fmt::Debug for RevocationSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("RevocationSource::None"),
            Self::Static(_) => f.write_str("RevocationSource::Static"),
            Self::Fetched { url, .. } => write!(f, "RevocationSource::Fetched({url:?})"),
        }
    }
}

/// The origin of an `https` URL (`scheme://host[:port]`), canonical.
pub(crate) fn origin_of(url: &str) -> Option<String> {
    adcp_canon::canonicalize(url).ok().map(|u| u.origin().to_owned())
}

impl RevocationSource {
    /// The list in force for issuer `iss` at `now` (refreshing it when
    /// due), or `None` when no list is available.
    pub(crate) async fn current(&self, iss: &str, jwks: &Value, now: i64) -> Option<GovernanceRevocations> {
        match self {
            Self::None => None,
            Self::Static(list) => {
                // "issuer MUST match the iss origin of tokens this list
                // governs": another issuer's list is no list for this one.
                let governs = list.list.issuer.is_none()
                    || origin_of(iss).is_some_and(|origin| list.list.check_issuer(&origin).is_ok());
                governs.then(|| list.clone())
            }
            Self::Fetched { url, fetcher, state } => {
                let origin = origin_of(iss)?;
                let mut state = state.lock().await;
                let entry = state.entry(origin.clone()).or_insert((None, None));
                let due = entry.0.as_ref().is_none_or(|l| l.is_due(now));
                let backing_off = entry.1.is_some_and(|t| now.saturating_sub(t) < POLL_FLOOR_SECS);
                if due && !backing_off {
                    let target = match url {
                        Some(u) => Some(u.clone()),
                        None => Url::parse(&origin).ok().and_then(|o| o.join(REVOCATION_PATH).ok()),
                    };
                    let fetched = match target {
                        Some(t) => fetcher
                            .get(&t, MAX_REVOCATION_LIST_BYTES)
                            .await
                            .map_err(|e| e.to_string()),
                        None => Err("no revocation list URL".to_owned()),
                    }
                    .and_then(|bytes| GovernanceRevocations::parse(&bytes, Some(jwks), false, now))
                    .and_then(|l| {
                        l.list.check_issuer(&origin).map_err(|e| e.to_string())?;
                        Ok(l)
                    });
                    match fetched {
                        Ok(list) => *entry = (Some(list), None),
                        Err(e) => {
                            tracing::warn!(error = %e, issuer = %origin, "governance revocation list refresh failed");
                            entry.1 = Some(now);
                        }
                    }
                }
                entry.0.clone()
            }
        }
    }
}
