//! The buyer's side of subscriber activation, and the registration checks
//! every notification to a registered URL goes through.
//!
//! A challenge is answered — `200`, `{"challenge": "<value>"}` — only when
//! it arrived RFC 9421-signed and every binding holds: the verified signer
//! is the registration's seller; the URL it arrived at (the canonical
//! `@target-uri` the signature covers) is registered; the account (or the
//! agent scope), the subscriber, the delivery auth and the event-type set
//! equal the registration's; and the value was never answered before
//! (single use, recorded in the replay store for the signature's window).
//! Any failure answers a JSON error without the value.

use super::subscriptions::{DeliveryAuthMode, Registration, SubscriptionScope};
use super::{outcome, Receiver, Reply};
use crate::payload::{Challenge, DeliveryAuth, WebhookPayload};
use adcp_verify::legacy::VerifiedWebhook;
use adcp_verify::{InsertOutcome, ReplayKey};
use http::StatusCode;
use std::collections::BTreeSet;

/// The replay-store namespace of answered challenge values: a `keyid` no
/// signature can carry (RFC 8941 strings are ASCII; this is not), so a
/// value can never collide with a real `(keyid, nonce)` entry. Not a
/// control character: every backend stores it as text.
const CHALLENGE_NAMESPACE: &str = "\u{27E8}adcp-webhook-challenge\u{27E9}";

/// How long an answered value is remembered when the signature's window is
/// unknown (it never is for an RFC 9421 challenge): the longest validity
/// the verifier accepts plus its skew.
const FALLBACK_MEMORY_SECS: i64 = 360;

impl Receiver {
    /// Answers an activation challenge (never delivered to the handler).
    pub(super) async fn answer_challenge(
        &self,
        challenge: &Challenge,
        verified: &VerifiedWebhook,
        registration: Option<&Registration>,
        now: i64,
    ) -> Reply {
        let refused = |why: &'static str| {
            tracing::warn!(target: super::RECEIVER_TRACING_TARGET, reason = why, "activation challenge refused");
            Reply::new(StatusCode::FORBIDDEN, outcome::CHALLENGE_REFUSED)
        };
        // Proof of control is an RFC 9421 signature, whatever the future
        // delivery mode.
        let VerifiedWebhook::Rfc9421(signer) = verified else {
            return refused("not RFC 9421-signed");
        };
        let Some(registration) = registration else {
            return refused("the URL is not a registered subscription");
        };
        // The schemas close both objects (`additionalProperties: false`).
        let closed = match challenge {
            Challenge::Account(c) => c.extra.is_empty(),
            Challenge::Agent(c) => c.extra.is_empty(),
        };
        let delivery_auth = delivery_auth(challenge_auth(challenge));
        let Some(delivery_auth) = delivery_auth.filter(|_| closed) else {
            return Reply::new(StatusCode::BAD_REQUEST, outcome::CHALLENGE_MALFORMED);
        };
        let scope_holds = match (&registration.scope, challenge) {
            (SubscriptionScope::Account(account), Challenge::Account(c)) => *account == c.account_id,
            (SubscriptionScope::Agent, Challenge::Agent(_)) => true,
            _ => false,
        };
        let event_types: BTreeSet<&str> = challenge_event_types(challenge).iter().map(String::as_str).collect();
        let registered: BTreeSet<&str> = registration.event_types.iter().map(String::as_str).collect();
        let binding = if signer.agent_url != registration.seller_agent_url {
            Some("signer is not the registration's seller")
        } else if challenge.seller_agent_url() != registration.seller_agent_url {
            Some("seller_agent_url differs from the registration")
        } else if signer.target_uri != registration.url {
            Some("signed target is not the registered URL")
        } else if !scope_holds {
            Some("account or scope differs from the registration")
        } else if challenge.subscriber_id() != registration.subscriber_id {
            Some("subscriber_id differs from the registration")
        } else if delivery_auth != registration.delivery_auth {
            Some("delivery_auth differs from the registration")
        } else if event_types != registered {
            Some("event_types differ from the registration")
        } else {
            None
        };
        if let Some(why) = binding {
            return refused(why);
        }
        // Single use, across every endpoint sharing the replay store.
        let key = ReplayKey {
            agent: Some(&signer.agent_url),
            keyid: CHALLENGE_NAMESPACE,
            nonce: challenge.value().as_bytes(),
            scope: None,
        };
        let remember_until = if signer.expires > 0 {
            signer.expires.saturating_add(adcp_verify::CLOCK_SKEW)
        } else {
            now.saturating_add(FALLBACK_MEMORY_SECS)
        };
        match self
            .inner
            .verifier
            .replay_store()
            .insert(key, remember_until, now)
            .await
        {
            Ok(InsertOutcome::Inserted) => {}
            Ok(InsertOutcome::Replayed) => return refused("challenge value already answered"),
            Ok(InsertOutcome::KeyidCapReached | InsertOutcome::AggregateCapReached) => {
                return refused("too many challenges")
            }
            Err(e) => {
                // The replay store's outage, with the checklist's code for it.
                let e = adcp_verify::VerifyError::new(
                    adcp_verify::ErrorCode::StoreUnavailable,
                    adcp_verify::CodePrefix::Webhook,
                    adcp_verify::Step::new(13),
                    e.to_string(),
                );
                return super::verify_reply(&e);
            }
        }
        tracing::info!(target: super::RECEIVER_TRACING_TARGET, subscriber_id = challenge.subscriber_id(), "activation challenge answered");
        Reply::challenge_answer(&challenge.response().to_value())
    }

    /// A notification to a registered URL must be for that registration:
    /// its `subscriber_id`, an event type it registered, and not paused.
    /// `None`: it may proceed.
    pub(super) fn check_registration(
        typed: &WebhookPayload,
        sender: &str,
        registration: &Registration,
    ) -> Option<&'static str> {
        if !registration.active {
            return Some("the registration is paused");
        }
        if sender != registration.seller_agent_url {
            return Some("the signer is not the registration's seller");
        }
        if let (SubscriptionScope::Account(account), Some(got)) = (&registration.scope, typed.account_id()) {
            if got != account {
                return Some("account_id differs from the registration of this URL");
            }
        }
        if typed.subscriber_id().is_some_and(|id| id != registration.subscriber_id) {
            return Some("subscriber_id differs from the registration of this URL");
        }
        if typed
            .notification_type()
            .is_some_and(|t| !registration.event_types.contains(t))
            && typed.subscriber_id().is_some()
        {
            return Some("notification type outside the registration's event_types");
        }
        None
    }
}

fn challenge_auth(challenge: &Challenge) -> &DeliveryAuth {
    match challenge {
        Challenge::Account(c) => &c.delivery_auth,
        Challenge::Agent(c) => &c.delivery_auth,
    }
}

fn challenge_event_types(challenge: &Challenge) -> &[String] {
    match challenge {
        Challenge::Account(c) => &c.event_types,
        Challenge::Agent(c) => &c.event_types,
    }
}

/// The challenge's `delivery_auth` as a mode, `None` when it violates the
/// schema (unknown mode, a fingerprint where none belongs or missing where
/// one must be, extra members).
fn delivery_auth(auth: &DeliveryAuth) -> Option<DeliveryAuthMode> {
    if !auth.extra.is_empty() {
        return None;
    }
    DeliveryAuthMode::from_wire(&auth.mode, auth.credential_fingerprint.as_deref())
}
