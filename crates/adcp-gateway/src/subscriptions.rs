//! `subscriptions` (`--subscriptions FILE`): the buyer's subscriber registrations, so the
//! gateway answers sellers' activation challenges itself and holds each
//! notification to the registration of the URL it arrived at.
//!
//! The file is a JSON array; each entry has exactly these members:
//! `url`, `seller_agent_url`, `subscriber_id`, `account_id` or
//! `"scope": "agent"`, `delivery_auth` (`{"mode": "rfc9421"}`, or a legacy
//! `Bearer` / `HMAC-SHA256` mode with its `credential_fingerprint`),
//! `event_types`, `active`, and for the legacy modes `credential_file`: the
//! file holding the credential (one trailing newline removed), whose
//! SHA-256 must equal the fingerprint — checked at start-up. Deliveries to
//! a legacy registration's URL are verified with that credential, and
//! only there.

use crate::error::{EntryProblem, RegistrationsError};
use adcp_verify::legacy::{BearerToken, HmacSecrets, WebhookAuthMode};
use adcp_webhook::payload::credential_fingerprint;
use adcp_webhook::{DeliveryAuthMode, Registration, StaticSubscriptions, SubscriptionScope};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One entry of the file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    url: String,
    seller_agent_url: String,
    subscriber_id: String,
    account_id: Option<String>,
    scope: Option<String>,
    delivery_auth: Auth,
    event_types: Vec<String>,
    active: bool,
    credential_file: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Auth {
    mode: String,
    credential_fingerprint: Option<String>,
}

/// The buyer's subscriber registrations
/// ([`GatewayOptions::subscriptions`](crate::GatewayOptions::subscriptions)),
/// and the legacy ones' verification mode by canonical URL: from a file
/// ([`Registrations::load`]), or RFC 9421 registrations only from
/// [`StaticSubscriptions`] (`Registrations::from`).
#[derive(Clone)]
pub struct Registrations {
    /// Every registration.
    pub(crate) subscriptions: StaticSubscriptions,
    /// For each legacy registration: its canonical URL, the verification
    /// mode built from its credential, and the seller it binds to.
    pub(crate) legacy: Vec<(String, WebhookAuthMode, String)>,
}

impl From<StaticSubscriptions> for Registrations {
    /// RFC 9421 registrations: no legacy credentials.
    fn from(subscriptions: StaticSubscriptions) -> Self {
        Self {
            subscriptions,
            legacy: Vec::new(),
        }
    }
}

impl std::fmt::Debug for Registrations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registrations")
            .field("subscriptions", &self.subscriptions)
            .field(
                "legacy",
                &self
                    .legacy
                    .iter()
                    .map(|(url, mode, _)| (url, mode.scheme()))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Registrations {
    /// Reads and checks the registrations file at `path` (relative
    /// `credential_file`s are relative to it).
    ///
    /// # Errors
    ///
    /// [`RegistrationsError`]: the file cannot be read or parsed, or an
    /// entry (named by its index and URL) cannot be used.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, RegistrationsError> {
        load(path.as_ref())
    }
}

fn load(path: &Path) -> Result<Registrations, RegistrationsError> {
    let text = std::fs::read_to_string(path).map_err(|source| RegistrationsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let entries: Vec<Entry> = serde_json::from_str(&text).map_err(|source| RegistrationsError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut subscriptions = StaticSubscriptions::new();
    let mut legacy = Vec::new();
    for (index, entry) in entries.into_iter().enumerate() {
        let at = |problem: EntryProblem| RegistrationsError::Entry {
            path: path.to_path_buf(),
            index,
            url: entry.url.clone(),
            problem,
        };
        let scope = match (&entry.account_id, entry.scope.as_deref()) {
            (Some(account), None) => SubscriptionScope::Account(account.clone()),
            (None, Some("agent")) => SubscriptionScope::Agent,
            _ => return Err(at(EntryProblem::Scope)),
        };
        let fingerprint = entry.delivery_auth.credential_fingerprint.as_deref();
        let delivery_auth = DeliveryAuthMode::from_wire(&entry.delivery_auth.mode, fingerprint)
            .ok_or_else(|| at(EntryProblem::DeliveryAuth))?;
        let mode = match (&delivery_auth, &entry.credential_file) {
            (DeliveryAuthMode::Rfc9421, None) => None,
            (DeliveryAuthMode::Rfc9421, Some(_)) => return Err(at(EntryProblem::CredentialFileNotLegacy)),
            (legacy_mode, Some(file)) => {
                let file = if file.is_relative() {
                    base.join(file)
                } else {
                    file.clone()
                };
                let credential = read_credential(&file).map_err(&at)?;
                let digest = credential_fingerprint(&credential);
                if Some(digest.as_str()) != legacy_mode.credential_fingerprint() {
                    return Err(at(EntryProblem::FingerprintMismatch));
                }
                Some(match legacy_mode {
                    DeliveryAuthMode::Bearer { .. } => WebhookAuthMode::Bearer {
                        token: BearerToken::new(&credential).map_err(|e| at(EntryProblem::Credential(e)))?,
                    },
                    _ => WebhookAuthMode::HmacSha256 {
                        secrets: HmacSecrets::new(&credential).map_err(|e| at(EntryProblem::Credential(e)))?,
                    },
                })
            }
            (_, None) => return Err(at(EntryProblem::CredentialFileMissing)),
        };
        let registration = Registration {
            url: entry.url.clone(),
            seller_agent_url: entry.seller_agent_url.clone(),
            subscriber_id: entry.subscriber_id,
            scope,
            delivery_auth,
            event_types: entry.event_types.into_iter().collect::<BTreeSet<_>>(),
            active: entry.active,
        };
        subscriptions = subscriptions
            .with(registration)
            .map_err(|e| at(EntryProblem::Registration(e)))?;
        if let Some(mode) = mode {
            let canonical = adcp_canon::canonicalize(&entry.url)
                .map_err(|e| at(EntryProblem::Url(e)))?
                .into_string();
            legacy.push((canonical, mode, entry.seller_agent_url.clone()));
        }
    }
    Ok(Registrations { subscriptions, legacy })
}

/// The file's content with one trailing newline (`\n` or `\r\n`) removed,
/// as the gateway's other secret files.
fn read_credential(path: &Path) -> Result<String, EntryProblem> {
    let bytes = std::fs::read(path).map_err(|source| EntryProblem::CredentialRead {
        path: path.to_path_buf(),
        source,
    })?;
    let text = String::from_utf8(crate::config::trim_newline(bytes)).map_err(|_| EntryProblem::CredentialNotUtf8 {
        path: path.to_path_buf(),
    })?;
    if text.is_empty() {
        return Err(EntryProblem::CredentialEmpty {
            path: path.to_path_buf(),
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    /// Writes `entries` (and an HMAC secret file) to a fresh directory and
    /// loads them.
    fn load_json(entries: &serde_json::Value) -> Result<Registrations, RegistrationsError> {
        let dir = std::env::temp_dir().join(format!(
            "adcp-gateway-subscriptions-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("secret"), "0123456789abcdef0123456789abcdef-secret\r\n").unwrap();
        let path = dir.join("subscriptions.json");
        std::fs::write(&path, entries.to_string()).unwrap();
        let loaded = load(&path);
        std::fs::remove_dir_all(&dir).unwrap();
        loaded
    }

    fn entry() -> serde_json::Value {
        serde_json::json!({"url": "https://buyer.example/hooks", "seller_agent_url": "https://seller.example/mcp",
            "subscriber_id": "desk-1", "account_id": "acct_1", "delivery_auth": {"mode": "rfc9421"},
            "event_types": ["creative.status_changed"], "active": true})
    }

    fn fingerprint() -> String {
        credential_fingerprint("0123456789abcdef0123456789abcdef-secret")
    }

    #[test]
    fn registrations_load_and_legacy_credentials_match_their_fingerprint() {
        let mut legacy = entry();
        legacy["url"] = serde_json::json!("https://buyer.example/legacy");
        legacy["delivery_auth"] = serde_json::json!({"mode": "HMAC-SHA256", "credential_fingerprint": fingerprint()});
        legacy["credential_file"] = serde_json::json!("secret");
        let loaded = load_json(&serde_json::json!([entry(), legacy])).unwrap();
        assert_eq!(loaded.subscriptions.len(), 2);
        assert_eq!(loaded.legacy.len(), 1);
        assert_eq!(loaded.legacy[0].0, "https://buyer.example/legacy");
        assert_eq!(loaded.legacy[0].2, "https://seller.example/mcp");
    }

    #[test]
    fn every_misconfiguration_is_refused_at_start_up() {
        type Edit = fn(&mut serde_json::Value);
        let edits: [(&str, Edit); 7] = [
            ("unknown member", |e| e["extra"] = serde_json::json!(1)),
            ("account and scope", |e| e["scope"] = serde_json::json!("agent")),
            ("neither account nor scope", |e| {
                e.as_object_mut().unwrap().remove("account_id");
            }),
            ("legacy without credential_file", |e| {
                e["delivery_auth"] = serde_json::json!({"mode": "Bearer", "credential_fingerprint": "a".repeat(64)});
            }),
            ("fingerprint mismatch", |e| {
                e["delivery_auth"] =
                    serde_json::json!({"mode": "HMAC-SHA256", "credential_fingerprint": "a".repeat(64)});
                e["credential_file"] = serde_json::json!("secret");
            }),
            ("credential_file with rfc9421", |e| {
                e["credential_file"] = serde_json::json!("secret")
            }),
            ("bad url", |e| e["url"] = serde_json::json!("not a url")),
        ];
        for (what, edit) in edits {
            let mut e = entry();
            edit(&mut e);
            assert!(load_json(&serde_json::json!([e])).is_err(), "{what}");
        }
        // The same URL twice.
        assert!(load_json(&serde_json::json!([entry(), entry()])).is_err());
    }
}
