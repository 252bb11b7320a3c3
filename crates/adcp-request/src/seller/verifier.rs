//! The framework-agnostic core: one request in, an authentication or a
//! reply out.

use super::auth::RequestAuth;
use super::authenticator::Hook;
use super::builder::RequestVerifierBuilder;
use super::reply::Reply;
use super::SELLER_TRACING_TARGET;
use adcp_sigbase::{Clock, Message};
use adcp_verify::request_policy::{
    decide_resolved, resolve_with_limit, Binding, Decision, Rejection, Verdict, VerifierCapability,
};
use adcp_verify::{CodePrefix, ErrorCode, KeyResolver, Profile, ReplayStore, Step, Verifier, VerifyError};
use bytes::Bytes;
use http::request::Parts;
use http_body::Body as HttpBody;
use http_body_util::BodyExt;
use std::fmt;
use std::sync::Arc;

type DynVerifier = Verifier<Arc<dyn KeyResolver>, Arc<dyn ReplayStore>, Arc<dyn Clock>>;

/// Where the absolute `@target-uri` comes from.
#[derive(Debug)]
pub(crate) enum Target {
    /// `scheme://<authority as received><path and query>`.
    Scheme(&'static str),
    /// `<configured base><path and query>`.
    Base(String),
}

pub(crate) struct Inner {
    pub(crate) verifier: DynVerifier,
    pub(crate) capability: VerifierCapability,
    pub(crate) binding: Option<Binding>,
    pub(crate) target: Target,
    pub(crate) max_body_bytes: usize,
    pub(crate) authenticator: Hook,
    pub(crate) clock: Arc<dyn Clock>,
}

/// The seller's request verifier, without any web framework: the body
/// limit, the operation resolution, the application's fallback
/// authenticator, the `request_signing` gate and the RFC 9421 checklist, in
/// that order, for one request at a time.
///
/// Cheap to clone (one `Arc`); one per endpoint configuration. The replay
/// store is shared by every clone and, with an `adcp-store` backend
/// (SQLite, Redis, PostgreSQL), by every instance of a fleet.
///
/// Per request:
///
/// 1. the body is read up to the limit (`413` beyond it, from
///    `Content-Length` before reading and while reading);
/// 2. the verifier's view is built: the method, the absolute target URI
///    (configured scheme or base URL + the authority as received + the
///    path and query), every header line, `:authority` for HTTP/2, the raw
///    body;
/// 3. the operation is resolved under the configured binding
///    ([`resolve_with_limit`]); an unresolvable body is
///    `request_body_malformed`;
/// 4. the [`Authenticator`](crate::Authenticator) reports a fallback
///    credential;
/// 5. the gate decides ([`decide_resolved`]); a signed request runs the
///    checklist ([`Verifier::verify`]) and the plan concludes
///    ([`VerifyPlan::conclude`](adcp_verify::request_policy::VerifyPlan::conclude)).
///
/// ```
/// use adcp_request::RequestVerifier;
/// use adcp_verify::request_policy::VerifierCapability;
/// use adcp_verify::{MemoryReplayStore, StaticKeyResolver};
/// use bytes::Bytes;
/// use serde_json::json;
/// use std::sync::Arc;
///
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let capability = VerifierCapability::from_json(&json!({
///     "supported": true,
///     "covers_content_digest": "required",
///     "required_for": ["create_media_buy"]
/// }))?;
/// let verifier = RequestVerifier::builder(
///     Arc::new(StaticKeyResolver::new()),
///     Arc::new(MemoryReplayStore::request()),
///     capability,
/// )
/// .build()?;
///
/// let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_media_buy","arguments":{}}}"#);
/// let (parts, ()) = http::Request::post("/mcp").header("Host", "seller.example.com").body(())?.into_parts();
/// let reply = verifier.verify(&parts, &body).await.unwrap_err();
/// assert_eq!(reply.status(), 401);
/// assert_eq!(reply.www_authenticate(), Some(r#"Signature error="request_signature_required""#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RequestVerifier {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for RequestVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestVerifier")
            .field("profile", &self.inner.verifier.profile().name())
            .field("capability", &self.inner.capability)
            .field("binding", &self.inner.binding)
            .field("target", &self.inner.target)
            .field("max_body_bytes", &self.inner.max_body_bytes)
            .field("authenticator", &self.inner.authenticator)
            .finish_non_exhaustive()
    }
}

impl RequestVerifier {
    /// A builder with the signers' keys (`adcp_jwks::HttpsKeyResolver` for
    /// brand.json discovery, [`StaticKeyResolver`](adcp_verify::StaticKeyResolver)
    /// for a configured JWKS), the replay store (request limits,
    /// [`ReplayLimits::request`](adcp_verify::ReplayLimits::request); shared
    /// across a fleet) and the seller's own advertised `request_signing`
    /// capability ([`VerifierCapability::from_json`], or
    /// [`request_signing_capability`](crate::request_signing_capability) on
    /// the whole `get_adcp_capabilities` response).
    pub fn builder(
        keys: Arc<dyn KeyResolver>,
        replay: Arc<dyn ReplayStore>,
        capability: VerifierCapability,
    ) -> RequestVerifierBuilder {
        RequestVerifierBuilder::new(keys, replay, capability)
    }

    /// The advertised capability the gate applies.
    #[must_use]
    pub fn capability(&self) -> &VerifierCapability {
        &self.inner.capability
    }

    /// The verification profile.
    #[must_use]
    pub fn profile(&self) -> &Profile {
        self.inner.verifier.profile()
    }

    /// The body limit in bytes.
    #[must_use]
    pub fn max_body_bytes(&self) -> usize {
        self.inner.max_body_bytes
    }

    /// Reads `body` under the limit, then [`Self::verify`]s. Returns the
    /// raw body bytes with the authentication.
    ///
    /// # Errors
    ///
    /// The [`Reply`] to answer with.
    pub async fn verify_streaming<B>(&self, parts: &Parts, body: B) -> Result<(Bytes, RequestAuth), Reply>
    where
        B: HttpBody<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let limit = self.inner.max_body_bytes;
        let declared = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|len| len > limit as u64) {
            return Err(refused(Reply::too_large()));
        }
        let body = match http_body_util::Limited::new(body, limit).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(refused(Reply::too_large())),
            Err(e) => {
                tracing::info!(target: SELLER_TRACING_TARGET, error = %e, "request body unreadable");
                return Err(refused(Reply::unreadable()));
            }
        };
        let auth = self.verify(parts, &body).await?;
        Ok((body, auth))
    }

    /// Judges a request whose body is in memory.
    ///
    /// # Errors
    ///
    /// The [`Reply`] to answer with.
    pub async fn verify(&self, parts: &Parts, body: &Bytes) -> Result<RequestAuth, Reply> {
        let inner = &*self.inner;
        if body.len() > inner.max_body_bytes {
            return Err(refused(Reply::too_large()));
        }
        let Some(target) = self.target_uri(parts) else {
            return Err(reject(&VerifyError::new(
                ErrorCode::TargetUriMalformed,
                CodePrefix::Request,
                Step::new(0),
                "no usable authority (request-target authority or Host) to rebuild the target URI",
            )));
        };
        let binding = inner.binding.unwrap_or_else(|| Binding::infer(&target));
        let mut msg = Message::request(parts.method.as_str(), target);
        if parts.version == http::Version::HTTP_2 {
            if let Some(authority) = parts.uri.authority() {
                msg.push_header(":authority", authority.as_str());
            }
        }
        for (name, value) in &parts.headers {
            msg.push_header(name.as_str(), value);
        }
        let msg = msg.with_body(&body[..]);

        let request = resolve_with_limit(binding, &msg, inner.max_body_bytes).map_err(|e| reject(&e))?;
        let fallback = inner.authenticator.run(parts, &request).await;
        let verdict = match decide_resolved(&inner.capability, request, &msg, fallback) {
            Decision::Verify(plan) => {
                let result = inner.verifier.verify(&msg).await;
                plan.conclude(result)
            }
            Decision::Accept { request, acceptance } => Verdict::Accepted { request, acceptance },
            Decision::Reject(rejection) => Verdict::Rejected(rejection),
        };
        match verdict {
            Verdict::Verified { request, signer } => {
                tracing::debug!(
                    target: SELLER_TRACING_TARGET,
                    keyid = signer.keyid.as_str(),
                    agent = signer.agent_url.as_str(),
                    operation = request.operation(),
                    "signed request verified"
                );
                Ok(RequestAuth {
                    source: adcp_verify::request_policy::AuthSource::Signature,
                    signer: Some(signer),
                    verified_at: Some(inner.clock.now()),
                    operation: request.operation().map(str::to_owned),
                    protocol_method: request.protocol_method().map(str::to_owned),
                    warning: None,
                })
            }
            Verdict::Accepted { request, acceptance } => {
                if let Some(w) = &acceptance.warning {
                    tracing::warn!(
                        target: SELLER_TRACING_TARGET,
                        code = w.code_str(),
                        step = %w.step(),
                        detail = w.detail(),
                        operation = request.operation(),
                        "shadow mode: accepted on the fallback credential, no signer identity"
                    );
                }
                Ok(RequestAuth {
                    source: acceptance.source,
                    signer: None,
                    verified_at: None,
                    operation: request.operation().map(str::to_owned),
                    protocol_method: request.protocol_method().map(str::to_owned),
                    warning: acceptance.warning,
                })
            }
            Verdict::Rejected(Rejection::Error(e)) => Err(reject(&e)),
            Verdict::Rejected(Rejection::Unauthenticated { warning }) => {
                tracing::info!(
                    target: SELLER_TRACING_TARGET,
                    code = warning.code_str(),
                    step = %warning.step(),
                    detail = warning.detail(),
                    "shadow mode: no valid signature and no independent credential; plain 401"
                );
                Err(refused(Reply::unauthenticated()))
            }
        }
    }

    /// The absolute target URI; `None` without a usable authority.
    fn target_uri(&self, parts: &Parts) -> Option<String> {
        let path = parts.uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
        let path = if path.is_empty() { "/" } else { path };
        match &self.inner.target {
            Target::Base(base) => Some(format!("{base}{path}")),
            Target::Scheme(scheme) => {
                let authority = match parts.uri.authority() {
                    Some(a) => a.as_str(),
                    // Raw bytes as received (a U-label host is left for the
                    // checklist to reject as a malformed target).
                    None => std::str::from_utf8(parts.headers.get(http::header::HOST)?.as_bytes()).ok()?,
                };
                if authority.is_empty() {
                    return None;
                }
                Some(format!("{scheme}://{authority}{path}"))
            }
        }
    }
}

fn reject(error: &VerifyError) -> Reply {
    // Surfaced to operators, never to the caller: the code is the interface.
    tracing::info!(
        target: SELLER_TRACING_TARGET,
        code = error.code_str(),
        step = %error.step(),
        detail = error.detail(),
        "signed-request gate rejected the request"
    );
    Reply::from_error(error)
}

fn refused(reply: Reply) -> Reply {
    tracing::info!(target: SELLER_TRACING_TARGET, code = reply.code(), status = reply.status().as_u16(), "request refused");
    reply
}
