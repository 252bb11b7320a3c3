//! The verifying floor: the least a webhook receiver must do per request,
//! with the gateway's own routines and nothing else, as the baseline the
//! gateway's throughput is judged against.
//!
//! Per `POST`, [`router`] does exactly the mandatory cryptographic work of
//! the webhook checklist and then what `bare --forward` does:
//!
//! 1. reads the body (at most [`adcp_webhook::DEFAULT_MAX_BODY_BYTES`]) and
//!    builds the [`Message`] as the gateway's receiver does (scheme `http`,
//!    authority from `Host`, every header line, the raw body);
//! 2. parses `Signature-Input` and `Signature`
//!    ([`SignatureInput::from_message`], [`Signatures::from_message`]),
//!    takes the `sig1` member and decodes its signature under the webhook
//!    profile's encoding, and parses `Content-Digest`
//!    ([`ContentDigest::parse`]);
//! 3. looks the `keyid` up in the key set it was started with (a hash
//!    lookup: the gateway's cached resolution costs about as much);
//! 4. canonicalizes the received target URI, derives `@authority`
//!    ([`adcp_canon::canonicalize_received`],
//!    [`adcp_canon::derive_authority`]) and builds the signature base
//!    ([`signature_base`]);
//! 5. verifies the signature once ([`VerifyingKey::verify`], the routine
//!    the gateway's verifier calls: Ed25519 for the load generator's keys);
//! 6. checks the body's SHA-256 against `Content-Digest`
//!    ([`ContentDigest::verify`]), which the signature must cover;
//! 7. posts the body upstream with the forwarding baseline's client
//!    ([`Forward`]) and answers `200` (`502` when the upstream does not
//!    answer `2xx`).
//!
//! What fails steps 2–6 is refused with `401` and the gateway's
//! `WWW-Authenticate: Signature error="webhook_…"` code, so the floor
//! cannot pass as verifying while accepting anything. What the gateway
//! does beyond this is left out on purpose: no replay store, no idempotency
//! store, no key discovery, no window, tag, purpose or revocation checks,
//! no strict JSON check or classification. The gateway's ratio to this
//! floor is therefore the cost of everything but the unavoidable
//! cryptography and HTTP.

use crate::bare::Forward;
use crate::Error;
use adcp_sigbase::crypto::{Algorithm, VerifyingKey};
use adcp_sigbase::digest::{ContentDigest, DigestPolicy};
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput, Signatures};
use adcp_verify::{CodePrefix, ErrorCode, Profile, ResolvedKey, Step, VerifyError, LABEL};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::collections::HashMap;
use std::sync::Arc;

/// The seller keys the floor verifies against, by `kid`.
#[derive(Debug, Clone)]
pub struct FloorKeys {
    keys: HashMap<String, (VerifyingKey, Algorithm)>,
}

impl FloorKeys {
    /// The usable keys of a JWKS document (`{"keys": [...]}`), parsed as
    /// the gateway parses `--jwks` ([`ResolvedKey::from_jwks_json`]).
    ///
    /// # Errors
    ///
    /// The document holds no usable key.
    pub fn from_jwks(jwks: &serde_json::Value) -> Result<Self, Error> {
        let keys: HashMap<_, _> = ResolvedKey::from_jwks_json(jwks, "floor")
            .into_iter()
            .filter_map(|key| {
                let (verifying, algorithm) = key.key().ok()?;
                Some((key.kid().to_owned(), (verifying.clone(), algorithm)))
            })
            .collect();
        if keys.is_empty() {
            return Err(Error::new("the JWKS holds no usable verification key"));
        }
        Ok(Self { keys })
    }

    /// How many keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// No key at all (never true of a value [`Self::from_jwks`] built).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

struct Floor {
    keys: FloorKeys,
    forward: Forward,
}

/// Serves the floor on `listener` until the process stops.
///
/// # Errors
///
/// The server failed.
pub async fn serve(listener: tokio::net::TcpListener, keys: FloorKeys, forward: Forward) -> Result<(), Error> {
    axum::serve(crate::bare::nodelay(listener), router(keys, forward)).await?;
    Ok(())
}

/// The floor's router: every `POST` is verified as the module docs say,
/// then forwarded; other methods get `405`.
pub fn router(keys: FloorKeys, forward: Forward) -> Router {
    Router::new()
        .fallback(handle)
        .with_state(Arc::new(Floor { keys, forward }))
}

async fn handle(State(floor): State<Arc<Floor>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if parts.method != Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let Ok(body) = axum::body::to_bytes(body, adcp_webhook::DEFAULT_MAX_BODY_BYTES).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    if let Err(refusal) = verify(&floor.keys, &parts, &body) {
        return refusal_response(&refusal);
    }
    floor.forward.post(body).await.into_response()
}

fn refusal_response(refusal: &VerifyError) -> Response {
    let mut response = StatusCode::UNAUTHORIZED.into_response();
    if let Some(value) = refusal
        .www_authenticate()
        .and_then(|v| http::HeaderValue::from_str(&v).ok())
    {
        response.headers_mut().insert(http::header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The message as the gateway's receiver builds it.
fn message<'a>(parts: &'a http::request::Parts, body: &'a [u8]) -> Option<Message<'a>> {
    let authority = match parts.uri.authority() {
        Some(a) => a.as_str(),
        None => parts.headers.get(http::header::HOST)?.to_str().ok()?,
    };
    let path = parts.uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
    let mut msg = Message::request(parts.method.as_str(), format!("http://{authority}{path}"));
    for (name, value) in &parts.headers {
        msg.push_header(name.as_str(), value);
    }
    Some(msg.with_body(body))
}

/// Steps 1–6 of the module docs; the error names the gateway's code.
fn verify(keys: &FloorKeys, parts: &http::request::Parts, body: &[u8]) -> Result<(), VerifyError> {
    use ErrorCode as E;
    let profile = Profile::webhook_v1();
    let fail =
        |code: ErrorCode, step: u8, detail: &str| VerifyError::new(code, CodePrefix::Webhook, Step::new(step), detail);
    let msg = message(parts, body).ok_or_else(|| fail(E::TargetUriMalformed, 10, "no Host"))?;
    // The header pair and the digest field.
    let input = SignatureInput::from_message(&msg).map_err(|e| fail(E::HeaderMalformed, 1, &e.to_string()))?;
    let sigs = Signatures::from_message(&msg).map_err(|e| fail(E::HeaderMalformed, 1, &e.to_string()))?;
    let (Some(input), Some(sigs)) = (input, sigs) else {
        return Err(fail(E::HeaderMalformed, 1, "request is not signed"));
    };
    let params = input
        .into_signature(LABEL)
        .ok_or_else(|| fail(E::HeaderMalformed, 1, "no `sig1` in Signature-Input"))?;
    let signature = sigs
        .decode(LABEL, profile.signature_encoding())
        .map_err(|e| fail(E::HeaderMalformed, 1, &e.to_string()))?;
    let digest = msg
        .combined_field("content-digest")
        .map_err(|e| fail(E::HeaderMalformed, 1, &e.to_string()))?
        .ok_or_else(|| fail(E::ComponentsIncomplete, 6, "no Content-Digest"))?;
    let digest = ContentDigest::parse(&*digest, profile.digest_decoding())
        .map_err(|e| fail(E::HeaderMalformed, 1, &e.to_string()))?;
    if !params.covers("content-digest") {
        return Err(fail(E::ComponentsIncomplete, 6, "content-digest not covered"));
    }
    // The key.
    let keyid = params.keyid().ok_or_else(|| fail(E::ParamsIncomplete, 2, "no keyid"))?;
    let (key, algorithm) = keys
        .keys
        .get(keyid)
        .ok_or_else(|| fail(E::KeyUnknown, 7, "unknown keyid"))?;
    if params.alg().and_then(|a| a.parse::<Algorithm>().ok()) != Some(*algorithm) {
        return Err(fail(E::AlgNotAllowed, 4, "alg does not match the key"));
    }
    // The base and the signature.
    let target = adcp_canon::canonicalize_received(msg.target_uri())
        .map_err(|e| fail(E::TargetUriMalformed, 10, &e.to_string()))?;
    let authority = adcp_canon::derive_authority(
        &target,
        msg.field_lines(":authority").next(),
        msg.field_lines("host").next(),
    )
    .map_err(|e| fail(E::TargetUriMalformed, 10, &e.to_string()))?;
    let options = BaseOptions {
        target_uri: Some(target.as_str()),
        authority: Some(authority),
        ..BaseOptions::default()
    };
    let base = signature_base(&msg, &params, &options).map_err(|e| fail(E::SignatureInvalid, 10, &e.to_string()))?;
    key.verify(*algorithm, base.as_bytes(), &signature)
        .map_err(|_| fail(E::SignatureInvalid, 10, "signature does not verify"))?;
    // The body's digest.
    digest
        .verify(body, &DigestPolicy::default())
        .map_err(|e| fail(E::DigestMismatch, 11, &e.to_string()))?;
    Ok(())
}
