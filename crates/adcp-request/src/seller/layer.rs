//! The tower middleware around a [`RequestVerifier`].

use super::verifier::RequestVerifier;
use bytes::Bytes;
use http::{Request, Response};
use http_body::Body as HttpBody;
use http_body_util::Full;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_service::Service;

/// A tower [`Layer`] that verifies every request before the handler runs.
///
/// Refused requests are answered here ([`Reply`](crate::Reply)): `401`
/// with exactly one `WWW-Authenticate: Signature error="<code>"`, `400`
/// for `request_body_malformed`, `413` over the body limit, `503` with
/// `Retry-After` for a key-discovery or replay-store outage, and a plain
/// `401` (no signature challenge) in shadow mode without any credential.
/// Accepted requests reach the inner service with the raw body bytes as
/// their body (`Full<Bytes>`) and a [`RequestAuth`](crate::RequestAuth) in
/// the extensions, replacing anything there before.
///
/// ```
/// use adcp_request::{RequestAuth, RequestVerifier, RequestVerifierLayer};
/// use adcp_verify::request_policy::VerifierCapability;
/// use adcp_verify::{DigestCoverage, MemoryReplayStore, StaticKeyResolver};
/// use axum::{routing::post, Router};
/// use std::sync::Arc;
///
/// async fn mcp(auth: RequestAuth, body: bytes::Bytes) -> String {
///     format!("{:?} {:?}", auth.source(), auth.signer().map(|s| &s.agent_url))
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let capability = VerifierCapability::builder(DigestCoverage::Required)
///     .required_for(["create_media_buy"])
///     .build()?;
/// let verifier = RequestVerifier::builder(
///     Arc::new(StaticKeyResolver::new()),
///     Arc::new(MemoryReplayStore::request()),
///     capability,
/// )
/// .build()?;
/// let app: Router = Router::new().route("/mcp", post(mcp)).layer(RequestVerifierLayer::new(verifier));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RequestVerifierLayer {
    verifier: RequestVerifier,
}

impl RequestVerifierLayer {
    /// A layer around `verifier`.
    #[must_use]
    pub fn new(verifier: RequestVerifier) -> Self {
        Self { verifier }
    }

    /// The verifier.
    #[must_use]
    pub fn verifier(&self) -> &RequestVerifier {
        &self.verifier
    }
}

impl<S> Layer<S> for RequestVerifierLayer {
    type Service = RequestVerifierService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestVerifierService {
            verifier: self.verifier.clone(),
            inner,
        }
    }
}

/// The service [`RequestVerifierLayer`] produces.
#[derive(Debug, Clone)]
pub struct RequestVerifierService<S> {
    verifier: RequestVerifier,
    inner: S,
}

impl<S> RequestVerifierService<S> {
    /// The verifier.
    #[must_use]
    pub fn verifier(&self) -> &RequestVerifier {
        &self.verifier
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for RequestVerifierService<S>
where
    S: Service<Request<Full<Bytes>>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: HttpBody<Data = Bytes> + Send + 'static,
    ReqBody::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    ResBody: From<Bytes> + Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The inner service is driven through a clone made ready in `call`,
        // only for requests that pass.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let verifier = self.verifier.clone();
        let mut inner = self.inner.clone();
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let (body, auth) = match verifier.verify_streaming(&parts, body).await {
                Ok(accepted) => accepted,
                Err(reply) => return Ok(reply.into_response()),
            };
            parts.extensions.insert(auth);
            let request = Request::from_parts(parts, Full::new(body));
            std::future::poll_fn(|cx| inner.poll_ready(cx)).await?;
            inner.call(request).await
        })
    }
}
