//! Signed AdCP webhooks, end to end: the seller's [`sender::WebhookSender`]
//! and the buyer's [`receiver`] (a tower layer, an axum extractor, and a
//! framework-agnostic core) that applies each event exactly once.
//!
//! - [`envelope`]: the MCP webhook envelope (`operation_id` and `context`
//!   echoed, `idempotency_key` fixed once per event), and the receiver's
//!   envelope check.
//! - [`sender`]: delivery with RFC 9421 signatures made fresh per attempt
//!   over the same bytes, exponential backoff with full jitter,
//!   `Retry-After`, a 24 h (≤ 7 days) horizon, terminal `webhook_*`
//!   rejections, SSRF-checked destinations with a pinned connect, and one
//!   [`sender::AttemptRecord`] per attempt.
//! - [`receiver`]: 413 → 415 → raw bytes → mode → verifier → claim →
//!   handler → completion; see the table in the module docs.
//! - [`extract`]: MCP vs A2A detection and data extraction.
//! - [`payload`]: a typed model of every 3.2 webhook payload kind and the
//!   classifier (by registration channel, else by shape) the receiver uses.
//!
//! A round trip, in process (no network):
//!
//! ```
//! use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
//! use adcp_store::idempotency::{IdempotencyConfig, MemoryIdempotencyStore};
//! use adcp_verify::keys::StaticKeyResolver;
//! use adcp_verify::replay::MemoryReplayStore;
//! use adcp_webhook::envelope::{McpWebhook, TaskStatus};
//! use adcp_webhook::receiver::Receiver;
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

pub mod envelope;
pub mod extract;
pub mod payload;
pub mod receiver;
pub mod sender;

pub use receiver::{Receiver, ReceiverLayer, Webhook};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
pub use sender::{Destination, WebhookSender};
