//! The README tour's names, as a downstream crate writes them: every type
//! it mentions resolves at its crate's root (one path each). A rename or a
//! module made private without a root re-export fails to compile here.

#![allow(unused_imports)]

use adcp_gateway::{Gateway, GatewayConfig, GatewayError, VERIFIED_AGENT};
use adcp_jwks::HttpsKeyResolver;
use adcp_jws::{issue_for_payload, Commitment, GovernanceVerifier, Phase, VerificationRequest};
use adcp_outbox::{
    enqueue_sqlite, Dispatcher, DispatcherConfig, NewEvent, Outbox, OutboxConfig, OutboxDestination, SqliteOutbox,
    DEFAULT_TABLE_PREFIX,
};
use adcp_request::{
    request_signing_capability, CallResponse, Counterparty, FallbackCredential, RequestVerifier, RequestVerifierLayer,
    SigningClient, SigningDecision, VerifiedAgent,
};
use adcp_sigbase::Message;
use adcp_sign::{BoxSigner, HttpSigner, Signer, SoftwareSigner, WebhookEvent};
use adcp_store::{open, ClaimOutcome, Fingerprint, IdempotencyStore, SenderKey, StoreOptions, StoreUrl};
use adcp_store::{MemoryStore, SqliteStore};
use adcp_strict_json::jcs;
use adcp_verify::{Profile, StaticKeyResolver, SystemClock, Verifier};
use adcp_webhook::{
    Activation, DeliveryAuthMode, DeliveryOutcome, Destination, McpWebhook, Receiver, ReceiverLayer, Registration,
    StaticSubscriptions, SubscriptionScope, TaskStatus, Webhook, WebhookSender,
};

#[test]
fn the_tour_names_resolve_at_the_crate_roots() {
    // The paths above are the test; one value shows they are the real items.
    assert_eq!(TaskStatus::Completed.as_str(), "completed");
    assert_eq!(VERIFIED_AGENT, "x-adcp-verified-agent");
    let fingerprint = jcs::fingerprint(&serde_json::json!({"a": 1}));
    assert!(Fingerprint::new(&fingerprint).is_ok());
}
