//! Publisher `adagents.json`: the `authorized_agents[].signing_keys[]` pin
//! and the two fetches with their redirect rules.
//!
//! - The **initial** fetch of `https://{publisher}/.well-known/adagents.json`
//!   follows redirects only within the registrable domain (eTLD+1, vendored
//!   PSL with its PRIVATE section, [`crate::psl`]) of the **originally
//!   requested** host, HTTPS-preserving, at most [`MAX_WELL_KNOWN_HOPS`]
//!   hops, every hop re-validated by the SSRF guard before it is dialed.
//! - The **`authoritative_location`** dereference (second hop) follows no
//!   redirect at all.
//!
//! A `signing_keys[]` pin on the entry for an agent is authoritative for
//! that agent's **sell-side webhook** signatures: turn it into a
//! [`PublisherPin`] and give it to
//! [`HttpsKeyResolverBuilder::publisher_pin`](crate::HttpsKeyResolverBuilder::publisher_pin).
//! Each `signing_keys[]` entry is read as a public JWK with a `kid` (the
//! spec page defining its schema is not in this snapshot; a JWK is what
//! the "pinned set" of `keyid`s and their key material requires).
//!
//! Buyers never derive a webhook *signer's identity* from adagents.json:
//! identity still comes from the operator brand.json `agents[]` match; the
//! pin only narrows which keys that agent may use.

use crate::documents::{AgentLookupError, DocumentError, MAX_ENTRIES};
use crate::fetch::{FetchError, Fetched, Fetcher};
use crate::identity::PublisherPin;
use crate::psl;
use crate::ssrf::{SsrfError, SsrfPolicy};
use crate::trace::DiscoveryTrace;
use adcp_strict_json::Limits;
use serde_json::Value;
use std::fmt;
use url::Url;

/// Body cap of a `/.well-known/adagents.json` (pointer or document): the
/// spec's recommended 5 MB.
pub const MAX_ADAGENTS_BYTES: usize = 5 * 1024 * 1024;
/// Body cap of the dereferenced authoritative file (managed networks fan
/// out across a publisher network): the spec's recommended 20 MB.
pub const MAX_AUTHORITATIVE_ADAGENTS_BYTES: usize = 20 * 1024 * 1024;
/// Redirect hops the initial well-known fetch may follow.
pub const MAX_WELL_KNOWN_HOPS: usize = 3;
/// At most this many `signing_keys[]` per agent.
pub const MAX_SIGNING_KEYS: usize = 64;

/// One `authorized_agents[]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizedAgent {
    /// `url`, as published (matched byte-for-byte).
    pub url: String,
    /// `signing_keys[]`, as published (public JWK objects).
    pub signing_keys: Vec<Value>,
}

impl AuthorizedAgent {
    /// The pin, when `signing_keys[]` is present and non-empty.
    ///
    /// # Errors
    ///
    /// [`DocumentError`] when the keys do not form a JWKS ([`parse_jwks`]
    /// rules). Two keys sharing a `kid` do not fail the pin: that `kid` is
    /// unusable in it (refused at step 8), the other pinned kids are not.
    ///
    /// [`parse_jwks`]: crate::documents::parse_jwks
    pub fn pin(&self, source: &str) -> Result<Option<PublisherPin>, DocumentError> {
        if self.signing_keys.is_empty() {
            return Ok(None);
        }
        PublisherPin::from_keys(&self.signing_keys, source).map(Some)
    }
}

/// A parsed adagents.json.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdagentsJson {
    /// A pointer file: the authoritative document is at this URL.
    AuthoritativeLocation(String),
    /// A document with `authorized_agents[]`.
    Document(Vec<AuthorizedAgent>),
}

impl AdagentsJson {
    /// Parses strictly (duplicate member names rejected) under `cap`.
    ///
    /// # Errors
    ///
    /// [`DocumentError`].
    pub fn parse(bytes: &[u8], cap: usize) -> Result<Self, DocumentError> {
        if bytes.len() > cap {
            return Err(DocumentError::TooLarge { limit: cap });
        }
        let value = adcp_strict_json::parse_value(bytes, &Limits::default().with_max_len(cap))
            .map_err(|e| DocumentError::StrictJson(e.to_string()))?;
        let obj = value
            .as_object()
            .ok_or(DocumentError::Shape("adagents.json is not an object"))?;
        if !obj.contains_key("authorized_agents") {
            if let Some(v) = obj.get("authoritative_location") {
                let loc = v
                    .as_str()
                    .ok_or(DocumentError::Shape("authoritative_location is not a string"))?;
                return Ok(AdagentsJson::AuthoritativeLocation(loc.to_owned()));
            }
        }
        let agents = match obj.get("authorized_agents") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(a)) if a.len() <= MAX_ENTRIES => a.as_slice(),
            Some(_) => return Err(DocumentError::Shape("authorized_agents is not an array")),
        };
        let mut out = Vec::with_capacity(agents.len());
        for entry in agents {
            let entry = entry
                .as_object()
                .ok_or(DocumentError::Shape("authorized_agents[] entry is not an object"))?;
            let url = entry
                .get("url")
                .and_then(Value::as_str)
                .ok_or(DocumentError::Shape("authorized_agents[] entry without a string url"))?;
            let signing_keys = match entry.get("signing_keys") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(keys)) if keys.len() <= MAX_SIGNING_KEYS => {
                    if !keys.iter().all(|k| k.get("kid").is_some_and(Value::is_string)) {
                        return Err(DocumentError::Shape("signing_keys[] entry is not a JWK with a kid"));
                    }
                    keys.clone()
                }
                Some(_) => return Err(DocumentError::Shape("signing_keys is not an array")),
            };
            out.push(AuthorizedAgent {
                url: url.to_owned(),
                signing_keys,
            });
        }
        Ok(AdagentsJson::Document(out))
    }
}

/// The single `authorized_agents[]` entry whose `url` byte-equals `agent_url`.
///
/// # Errors
///
/// [`AgentLookupError`].
pub fn authorized_agent<'a>(
    agents: &'a [AuthorizedAgent],
    agent_url: &str,
) -> Result<&'a AuthorizedAgent, AgentLookupError> {
    let mut it = agents.iter().filter(|a| a.url == agent_url);
    let first = it.next().ok_or(AgentLookupError::NotFound)?;
    if it.next().is_some() {
        return Err(AgentLookupError::Ambiguous);
    }
    Ok(first)
}

/// Which adagents.json fetch is being made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdagentsTarget {
    /// The initial `/.well-known/adagents.json` fetch (same-registrable-
    /// domain redirects, ≤ 3 hops).
    WellKnown,
    /// The `authoritative_location` dereference (no redirects).
    AuthoritativeLocation,
}

/// Why a redirect was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedirectRefusal {
    /// The hop leaves the originally requested registrable domain.
    CrossRegistrableDomain,
    /// The hop is not HTTPS.
    SchemeDowngrade,
    /// More than [`MAX_WELL_KNOWN_HOPS`] hops.
    TooManyRedirects,
    /// Any redirect on the `authoritative_location` fetch.
    RedirectOnAuthoritativeLocation,
    /// The hop fails the SSRF guard.
    Untrusted(SsrfError),
}

impl RedirectRefusal {
    /// The reason string of the conformance vectors.
    pub fn reason(&self) -> &'static str {
        match self {
            RedirectRefusal::CrossRegistrableDomain => "cross_registrable_domain",
            RedirectRefusal::SchemeDowngrade => "scheme_downgrade",
            RedirectRefusal::TooManyRedirects => "too_many_redirects",
            RedirectRefusal::RedirectOnAuthoritativeLocation => "redirect_on_authoritative_location",
            RedirectRefusal::Untrusted(_) => "ssrf_refused",
        }
    }
}

impl fmt::Display for RedirectRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedirectRefusal::Untrusted(e) => write!(f, "redirect refused: {e}"),
            other => write!(f, "redirect refused: {}", other.reason()),
        }
    }
}

/// Decides whether the fetch of `target` started at `origin` may follow a
/// redirect to `next`, having already followed `hops_followed` hops. Pure:
/// no I/O. The same-domain rule is anchored on `origin`, never on the
/// previous hop.
///
/// # Errors
///
/// The [`RedirectRefusal`].
pub fn check_redirect(
    target: AdagentsTarget,
    origin: &Url,
    hops_followed: usize,
    next: &Url,
    policy: &SsrfPolicy,
) -> Result<(), RedirectRefusal> {
    if target == AdagentsTarget::AuthoritativeLocation {
        return Err(RedirectRefusal::RedirectOnAuthoritativeLocation);
    }
    if hops_followed >= MAX_WELL_KNOWN_HOPS {
        return Err(RedirectRefusal::TooManyRedirects);
    }
    if next.scheme() != "https" {
        return Err(RedirectRefusal::SchemeDowngrade);
    }
    let same = match (origin.host_str(), next.host_str()) {
        (Some(a), Some(b)) => psl::same_registrable_domain(a, b),
        _ => false,
    };
    if !same {
        return Err(RedirectRefusal::CrossRegistrableDomain);
    }
    policy.check_parsed_url(next).map_err(RedirectRefusal::Untrusted)
}

/// An adagents.json fetch failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdagentsError {
    /// A redirect was refused (the hop was not dialed).
    Redirect(RedirectRefusal),
    /// The fetch failed (SSRF refusal, status, size, timeout, transport).
    Fetch(FetchError),
    /// The document is malformed.
    Document(DocumentError),
    /// A pointer file pointed at another pointer.
    PointerChain,
}

impl fmt::Display for AdagentsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdagentsError::Redirect(r) => r.fmt(f),
            AdagentsError::Fetch(e) => write!(f, "adagents.json fetch failed: {e}"),
            AdagentsError::Document(e) => write!(f, "adagents.json malformed: {e}"),
            AdagentsError::PointerChain => f.write_str("authoritative_location points at another pointer"),
        }
    }
}

impl std::error::Error for AdagentsError {}

/// The body finally fetched and where it came from.
#[derive(Debug, Clone)]
pub struct AdagentsFetch {
    /// The URL that answered `200` (after any followed redirects).
    pub final_url: Url,
    /// The body.
    pub body: Vec<u8>,
}

/// Fetches `url` as `target`, following only the redirects
/// [`check_redirect`] allows, each hop recorded in `trace`.
///
/// # Errors
///
/// [`AdagentsError::Redirect`] (the refused hop is never dialed) or
/// [`AdagentsError::Fetch`].
pub async fn fetch_adagents(
    fetcher: &Fetcher,
    url: &Url,
    target: AdagentsTarget,
    trace: &mut DiscoveryTrace,
    now: i64,
) -> Result<AdagentsFetch, AdagentsError> {
    let cap = match target {
        AdagentsTarget::WellKnown => MAX_ADAGENTS_BYTES,
        AdagentsTarget::AuthoritativeLocation => MAX_AUTHORITATIVE_ADAGENTS_BYTES,
    };
    let name = match target {
        AdagentsTarget::WellKnown => "adagents.json",
        AdagentsTarget::AuthoritativeLocation => "authoritative",
    };
    let mut current = url.clone();
    let mut hops = 0usize;
    loop {
        let step = u8::try_from(trace.steps.len() + 1).unwrap_or(u8::MAX);
        let result = fetcher.get_or_redirect(&current, cap).await;
        match result {
            Ok(Fetched::Body(body)) => {
                trace
                    .ok(step, name, format!("{} bytes", body.len()))
                    .fetched(&current, now, &Ok::<(), FetchError>(()));
                return Ok(AdagentsFetch {
                    final_url: current,
                    body,
                });
            }
            Ok(Fetched::Redirect { status, location }) => {
                // One step per answer: a followed redirect is `ok`, a
                // refused one `failed` (and its target is never dialed).
                let verdict = check_redirect(target, url, hops, &location, fetcher.policy());
                let s = match &verdict {
                    Ok(()) => trace.ok(step, name, format!("redirect to {location}")),
                    Err(refusal) => trace.failed(step, name, refusal.reason(), format!("{refusal}: {location}")),
                };
                s.url = Some(current.to_string());
                s.http_status = Some(status);
                s.fetched_at = Some(now);
                if let Err(refusal) = verdict {
                    return Err(AdagentsError::Redirect(refusal));
                }
                hops += 1;
                current = location;
            }
            Err(e) => {
                trace.failed(step, name, "fetch_failed", e.to_string()).fetched(
                    &current,
                    now,
                    &Err::<(), _>(e.clone()),
                );
                return Err(AdagentsError::Fetch(e));
            }
        }
    }
}

/// The publisher's adagents.json for `publisher_host`: the well-known fetch
/// (same-domain redirects) and, for a pointer file, the
/// `authoritative_location` dereference (no redirects, 20 MB cap; a second
/// pointer is refused).
///
/// # Errors
///
/// [`AdagentsError`].
pub async fn discover_adagents(
    fetcher: &Fetcher,
    publisher_origin: &Url,
    trace: &mut DiscoveryTrace,
    now: i64,
) -> Result<(Url, Vec<AuthorizedAgent>), AdagentsError> {
    let url = publisher_origin
        .join("/.well-known/adagents.json")
        .map_err(|_| AdagentsError::Fetch(FetchError::Untrusted(SsrfError::InvalidUrl)))?;
    let first = fetch_adagents(fetcher, &url, AdagentsTarget::WellKnown, trace, now).await?;
    match AdagentsJson::parse(&first.body, MAX_ADAGENTS_BYTES).map_err(AdagentsError::Document)? {
        AdagentsJson::Document(agents) => Ok((first.final_url, agents)),
        AdagentsJson::AuthoritativeLocation(loc) => {
            let loc = fetcher
                .policy()
                .check_url(&loc)
                .map_err(|e| AdagentsError::Fetch(FetchError::Untrusted(e)))?;
            let second = fetch_adagents(fetcher, &loc, AdagentsTarget::AuthoritativeLocation, trace, now).await?;
            match AdagentsJson::parse(&second.body, MAX_AUTHORITATIVE_ADAGENTS_BYTES)
                .map_err(AdagentsError::Document)?
            {
                AdagentsJson::Document(agents) => Ok((second.final_url, agents)),
                AdagentsJson::AuthoritativeLocation(_) => Err(AdagentsError::PointerChain),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use proptest::prelude::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn redirect_rules() {
        let p = SsrfPolicy::new();
        let origin = u("https://pub.example/.well-known/adagents.json");
        let www = u("https://www.pub.example/.well-known/adagents.json");
        assert!(check_redirect(AdagentsTarget::WellKnown, &origin, 0, &www, &p).is_ok());
        assert_eq!(
            check_redirect(AdagentsTarget::WellKnown, &origin, 3, &www, &p),
            Err(RedirectRefusal::TooManyRedirects)
        );
        assert_eq!(
            check_redirect(AdagentsTarget::AuthoritativeLocation, &origin, 0, &www, &p),
            Err(RedirectRefusal::RedirectOnAuthoritativeLocation)
        );
        // Same registrable domain, but a reserved literal: still refused.
        let literal = u("https://127.0.0.1/.well-known/adagents.json");
        assert!(check_redirect(AdagentsTarget::WellKnown, &u("https://127.0.0.1/"), 0, &literal, &p).is_err());
    }

    #[test]
    fn parse_documents_and_pins() {
        let doc = br#"{"authorized_agents":[
            {"url":"https://seller.example/mcp","authorized_for":"all","signing_keys":[
                {"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"pin-1",
                 "alg":"EdDSA","use":"sig","key_ops":["verify"],"adcp_use":"request-signing"}]},
            {"url":"https://other.example/mcp"}]}"#;
        let AdagentsJson::Document(agents) = AdagentsJson::parse(doc, MAX_ADAGENTS_BYTES).unwrap() else {
            panic!()
        };
        let pin = authorized_agent(&agents, "https://seller.example/mcp")
            .unwrap()
            .pin("https://pub.example/.well-known/adagents.json")
            .unwrap()
            .unwrap();
        assert!(pin.jwks.key("pin-1").is_some());
        assert_eq!(pin.jwks_json["keys"][0]["adcp_use"], "request-signing");
        assert!(authorized_agent(&agents, "https://other.example/mcp")
            .unwrap()
            .pin("x")
            .unwrap()
            .is_none());
        assert_eq!(
            authorized_agent(&agents, "https://seller.example/mcp/"),
            Err(AgentLookupError::NotFound)
        );
        assert_eq!(
            AdagentsJson::parse(br#"{"authoritative_location":"https://n.example/a.json"}"#, 1024).unwrap(),
            AdagentsJson::AuthoritativeLocation("https://n.example/a.json".into())
        );
        for bad in [
            &br#"{"authorized_agents":[{"url":"a","url":"b"}]}"#[..],
            br#"{"authorized_agents":[{"url":"a","signing_keys":[{"kty":"OKP"}]}]}"#,
            br#"{"authorized_agents":{}}"#,
            br#"[]"#,
        ] {
            assert!(AdagentsJson::parse(bad, 1024).is_err());
        }
    }

    /// `signing_keys[]` sharing a `kid` (with different purposes) still
    /// make a pin; that kid is unusable in it, the other pinned kids not.
    #[test]
    fn pin_with_a_colliding_kid() {
        let key = |kid: &str, adcp_use: &str| {
            format!(
                r#"{{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"{kid}",
                "alg":"EdDSA","use":"sig","key_ops":["verify"],"adcp_use":"{adcp_use}"}}"#
            )
        };
        let (a, b, c) = (
            key("pin-1", "request-signing"),
            key("pin-1", "governance-signing"),
            key("pin-2", "request-signing"),
        );
        for keys in [[&a, &b, &c], [&b, &c, &a]] {
            let doc = format!(
                r#"{{"authorized_agents":[{{"url":"https://seller.example/mcp","signing_keys":[{},{},{}]}}]}}"#,
                keys[0], keys[1], keys[2]
            );
            let AdagentsJson::Document(agents) = AdagentsJson::parse(doc.as_bytes(), MAX_ADAGENTS_BYTES).unwrap()
            else {
                panic!()
            };
            let pin = authorized_agent(&agents, "https://seller.example/mcp")
                .unwrap()
                .pin("https://pub.example/.well-known/adagents.json")
                .unwrap()
                .unwrap();
            assert_eq!(
                pin.jwks.get("pin-1").and_then(|e| e.error()),
                Some(adcp_sigbase::jwk::JwkError::KidCollision)
            );
            assert!(pin.jwks.key("pin-2").is_some());
            let resolved = adcp_verify::ResolvedKey::from_jwks_json(&pin.jwks_json, "https://seller.example/mcp");
            let collides: Vec<(&str, bool)> = resolved.iter().map(|k| (k.kid(), k.kid_collides())).collect();
            assert_eq!(collides.len(), 2);
            assert!(collides.contains(&("pin-1", true)) && collides.contains(&("pin-2", false)));
        }
    }

    proptest! {
        #[test]
        fn parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = AdagentsJson::parse(&bytes, 4096);
        }
    }
}
