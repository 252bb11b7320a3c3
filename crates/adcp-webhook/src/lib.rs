//! Signed AdCP webhooks, end to end: the seller's [`WebhookSender`] and the
//! buyer's [`Receiver`] (a tower layer, an axum extractor, and a
//! framework-agnostic core) that applies each event exactly once.
//!
//! Everything a user names is at the crate root, with one path each. Two
//! namespaces: [`payload`] (a typed model of every 3.2 webhook payload kind
//! and the classifier, by registration channel, else by shape, the
//! receiver uses) and [`notify`] (its sending side: a typed builder per
//! notification kind, producing the body a seller enqueues). The payload fingerprint bound to each key is RFC 8785
//! JCS, `adcp_strict_json::jcs`. The MCP envelope ([`McpWebhook`]: `operation_id` and
//! `context` echoed, `idempotency_key` fixed once per event) and MCP / A2A
//! detection ([`detect_format`], [`extract`]) are root items too.
//!
//! # Receiving
//!
//! The buyer side: verify each webhook, then apply it exactly once.
//!
//! [`Receiver`] is the framework-agnostic core; [`ReceiverLayer`] wraps it
//! as a tower middleware and [`Webhook`] is what the handler receives
//! (an axum extractor with the `axum` feature). Every request goes through
//! the same steps, in this order, each short-circuiting:
//!
//! | # | Check | Answer on failure |
//! |---|---|---|
//! | 1 | body size ≤ limit (1 MiB default): `Content-Length` before reading, then while reading — nothing is hashed first | `413` |
//! | 2 | `Content-Type` is `application/json` | `415` |
//! | 3 | raw bytes captured (no JSON parsing before verification) | `400` if unreadable |
//! | 4 | mode from the registration: RFC 9421, or the configured HMAC / Bearer credential; another scheme's headers → `webhook_mode_mismatch` | `401` |
//! | 5 | the verifier checklist (steps 1–14), under the same body limit | `401` + `WWW-Authenticate: Signature error="<code>"`; `503` for store / JWKS outages; `400` for `webhook_body_malformed` |
//! | 6 | with [`Subscriptions`]: the registration of the URL it arrived at | registrations unreadable → `503` |
//! | 7 | classification ([`payload`]): the registration's channel, else [`ReceiverConfig::channel`], else the shape | `400` with the payload code (`missing_envelope_fields`, `unknown_payload_kind`, …) |
//! | 8 | an activation challenge is answered here, never delivered | `200` `{"challenge": value}`; a binding wrong → `403` `challenge_refused`; schema → `400` `challenge_malformed` |
//! | 9 | a notification to a registered URL matches its registration (seller, account, subscriber, event type, active) | `403` `subscription_mismatch` |
//! | 10 | notification identity: a known `notification_id` under a new key is a re-emission | terminal task result → `200`, not delivered; others delivered, marked |
//! | 11 | claim `(verified sender, idempotency_key)` with the JCS payload fingerprint | duplicate → `200` (handler not called); same key + other payload → `409`; in progress elsewhere → `503`; sender over cap → `429`; store outage → `503` |
//! | 12 | the handler, with the verified sender, raw bytes, parsed and typed payload | its answer |
//! | 13 | handler `2xx` → completion (and the notification record) recorded, then its answer; completion failed → `503`; handler failure → claim released so a retry can succeed | |
//!
//! Every non-`2xx` answer has the body `{"error": "<code>", "message":
//! "<fixed text>"}` ([`error_body`]): the code is the outcome label or the
//! verifier's code, the message a constant per code that never carries the
//! failure's details (those go to the [`RECEIVER_TRACING_TARGET`] logs).
//!
//! Every `503` the receiver answers is retryable and carries `Retry-After`:
//! the seconds left on the other receiver's claim for an event in progress
//! (1–60), [`UNAVAILABLE_RETRY_AFTER_SECS`] for an outage (replay or
//! idempotency store, JWKS / key discovery, a completion not recorded).
//! A `401` never does: verification failures are terminal for the
//! delivery, and answer exactly the spec's challenge.
//!
//! # Sending
//!
//! The seller side: [`WebhookSender`] delivers one [`WebhookEvent`](adcp_sign::WebhookEvent) to one
//! [`Destination`], retrying until it is acknowledged, refused for good,
//! or out of time. Underneath, [`AttemptClient`] makes one signed attempt
//! at a time with the signer it is given; a durable outbox drives it from
//! its own queue, and both judge answers with the same function,
//! [`classify_answer`].
//!
//! Per delivery:
//!
//! 1. The destination URL is checked against the SSRF rules
//!    ([`DestinationPolicy`], over `adcp_jwks::DestinationPolicy`) before the
//!    first attempt. Names are resolved once per connection by the jwks
//!    pinning resolver, every address is range-checked, and only checked
//!    addresses reach the TCP connect (the spec's pinned connect, option
//!    (a)). No proxies, no redirects.
//! 2. Each attempt signs the **same body bytes** afresh: a new nonce and
//!    `created`/`expires` under RFC 9421, a new timestamp under legacy
//!    HMAC. The idempotency key never changes (it is inside the body). One
//!    deadline covers signing and sending.
//! 3. The answer decides, by the spec's rules ([`AttemptVerdict`],
//!    [`DeliveryOutcome`]): `2xx` → delivered. `401` with
//!    `WWW-Authenticate: Signature error="webhook_…"` → terminal, reported
//!    with its code. `409` → terminal (the receiver bound the key to
//!    another payload; "a sender MUST stop retrying that key"). Everything
//!    else is retried after exponential backoff with full jitter, at least
//!    `Retry-After`, within the horizon ([`RetryPolicy`]): delivery is
//!    at-least-once, so `3xx` (never followed), a plain `401` (a receiver
//!    configuration error the spec calls transient), every other `4xx`,
//!    `5xx`, network errors and timeouts all get another attempt.
//! 4. Every attempt produces an [`AttemptRecord`] (status in the spec's
//!    `webhook_activity` vocabulary, [`AttemptStatus`]), handed to the
//!    [`DeliveryObserver`] as it happens and returned in the
//!    [`DeliveryReport`].
//!
//! Before a `notification_configs[]` subscriber is treated as active, the
//! same sender runs the endpoint ownership proof:
//! [`WebhookSender::activate`] with an [`Activation`] (same SSRF rules,
//! pinned client and signing key).
//!
//! A round trip, in process (no network):
//!
//! ```
//! use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
//! use adcp_store::{IdempotencyConfig, MemoryIdempotencyStore};
//! use adcp_verify::StaticKeyResolver;
//! use adcp_verify::MemoryReplayStore;
//! use adcp_webhook::{McpWebhook, TaskStatus};
//! use adcp_webhook::Receiver;
//! use std::sync::Arc;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! // Seller: a key, its public JWKS, one event, one signed attempt.
//! let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-01")?;
//! let jwks = key.jwks()?.to_public_json();
//! let signer = HttpSigner::webhook(key)?;
//! let event = McpWebhook::new("task_1", "create_media_buy", TaskStatus::Completed, "2026-04-18T12:00:00Z")
//!     .operation_id("op_1")
//!     .result(serde_json::json!({"media_buy_id": "mb_1"}))
//!     .into_event()?;
//! let signed = signer.sign_webhook("https://buyer.example/hooks/op_1", &event).await?;
//!
//! // Buyer: the seller's keys, a replay cache and an idempotency store.
//! let receiver = Receiver::builder(
//!     Arc::new(StaticKeyResolver::new().with_jwks(&jwks, "https://seller.example/mcp")),
//!     Arc::new(MemoryReplayStore::webhook()),
//!     Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::default())?),
//! )
//! .build()?;
//! let request = signed.to_http()?.map(bytes::Bytes::from);
//! let mut applied = 0;
//! let response = receiver
//!     .handle(request.clone(), |webhook| {
//!         assert_eq!(webhook.sender(), "https://seller.example/mcp");
//!         applied += 1;
//!         async { Ok::<(), std::convert::Infallible>(()) }
//!     })
//!     .await;
//! assert_eq!(response.status(), 200);
//! assert_eq!(applied, 1);
//!
//! // The same event again, freshly signed (a retry): 200, not applied twice.
//! let retry = signer.sign_webhook("https://buyer.example/hooks/op_1", &event).await?;
//! let response = receiver
//!     .handle(retry.to_http()?.map(bytes::Bytes::from), |_| async { Ok::<(), std::convert::Infallible>(()) })
//!     .await;
//! assert_eq!(response.status(), 200);
//! assert_eq!(receiver.metrics().get("duplicate"), 1);
//!
//! // The captured first request replayed as is: its nonce is burned.
//! let response = receiver.handle(request, |_| async { Ok::<(), std::convert::Infallible>(()) }).await;
//! assert_eq!(response.status(), 401);
//! assert_eq!(response.headers()["www-authenticate"], "Signature error=\"webhook_signature_replayed\"");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod envelope;
mod extract;
pub mod notify;
pub mod payload;
mod receiver;
mod sender;

pub use envelope::{check_mcp_envelope, EnvelopeError, EnvelopeInfo, McpWebhook, TaskStatus};
pub use extract::{a2a_state, detect_format, extract, ExtractError, PayloadFormat};
pub use receiver::{
    error_body, outcome, outcome_message, Decision, Delivery, DeliveryAuthMode, Metrics, Receiver, ReceiverBuilder,
    ReceiverConfig, ReceiverError, ReceiverLayer, ReceiverService, Registration, RegistrationError, Reply,
    StaticSubscriptions, SubscriptionScope, Subscriptions, SubscriptionsError, Webhook, DEFAULT_MAX_BODY_BYTES,
    RECEIVER_TRACING_TARGET, UNAVAILABLE_RETRY_AFTER_SECS,
};
pub use sender::{
    classify_answer, parse_retry_after, signature_error_code, Activation, ActivationError, ActivationOutcome,
    ActivationReport, AttemptClient, AttemptClientBuilder, AttemptRecord, AttemptResult, AttemptStatus, AttemptVerdict,
    ChallengeScope, DeliveryObserver, DeliveryOutcome, DeliveryReport, Destination, DestinationAuth, DestinationError,
    DestinationPolicy, EchoError, EchoMember, RetryPolicy, RetryPolicyError, SenderError, WebhookSender,
    WebhookSenderBuilder, ACCOUNT_EVENT_TYPES, AGENT_EVENT_TYPES, DEFAULT_ACTIVATION_TIMEOUT,
    MAX_ACTIVATION_RESPONSE_BYTES, MAX_ACTIVATION_TIMEOUT, SENDER_TRACING_TARGET,
};

// The builders' parameter types, so that a user of this crate can name
// everything `Receiver::builder`, `WebhookSender::builder` and
// `AttemptClient::builder` take.
#[doc(no_inline)]
pub use adcp_jwks::{DnsResolver, TrustRoots};
#[doc(no_inline)]
pub use adcp_sign::{HttpSigner, RandomSource, Signer};
#[doc(no_inline)]
pub use adcp_store::{IdempotencyStore, Store};
#[doc(no_inline)]
pub use adcp_verify::admission::AdmissionMonitor;
#[doc(no_inline)]
pub use adcp_verify::legacy::WebhookAuthMode;
#[doc(no_inline)]
pub use adcp_verify::{Clock, KeyResolver, ReplayStore};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
