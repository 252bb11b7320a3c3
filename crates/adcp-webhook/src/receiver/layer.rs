//! The tower middleware around a [`Receiver`].

use super::{Decision, Receiver};
use bytes::Bytes;
use http::{Request, Response};
use http_body::Body as HttpBody;
use http_body_util::Full;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_service::Service;
use tracing::Instrument;

/// A tower [`Layer`] that verifies every request and applies each event
/// once; the inner service (the handler) sees only verified, claimed
/// events, with a [`Webhook`](super::Webhook) in the request extensions
/// and the raw body bytes as its body (`Full<Bytes>`).
///
/// The inner service's `2xx` records completion before the answer goes
/// out (a failed completion turns it into `503`); any other answer, or an
/// error, releases the claim so the sender's retry is processed again.
///
/// ```
/// use adcp_store::{IdempotencyConfig, MemoryIdempotencyStore};
/// use adcp_verify::StaticKeyResolver;
/// use adcp_verify::MemoryReplayStore;
/// use adcp_webhook::{Receiver, ReceiverLayer, Webhook};
/// use axum::{routing::post, Router};
/// use std::sync::Arc;
///
/// async fn on_webhook(webhook: Webhook) -> &'static str {
///     println!("{} from {}", webhook.idempotency_key(), webhook.sender());
///     "ok"
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let receiver = Receiver::builder(
///     Arc::new(StaticKeyResolver::new()),
///     Arc::new(MemoryReplayStore::webhook()),
///     Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::default())?),
/// )
/// .build()?;
/// let app: Router = Router::new().route("/webhooks/adcp", post(on_webhook).layer(ReceiverLayer::new(receiver)));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ReceiverLayer {
    receiver: Receiver,
}

impl ReceiverLayer {
    /// A layer around `receiver`.
    #[must_use]
    pub fn new(receiver: Receiver) -> Self {
        Self { receiver }
    }
}

impl<S> Layer<S> for ReceiverLayer {
    type Service = ReceiverService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ReceiverService {
            receiver: self.receiver.clone(),
            inner,
        }
    }
}

/// The service [`ReceiverLayer`] produces.
#[derive(Debug, Clone)]
pub struct ReceiverService<S> {
    receiver: Receiver,
    inner: S,
}

impl<S> ReceiverService<S> {
    /// The receiver (for its metrics).
    #[must_use]
    pub fn receiver(&self) -> &Receiver {
        &self.receiver
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for ReceiverService<S>
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
        // The inner service is driven through a clone made ready in `call`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let receiver = self.receiver.clone();
        let inner = self.inner.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let delivery = match receiver.decide_streaming(&parts, body).await {
                Decision::Reply(reply) => return Ok(reply.into_response()),
                Decision::Deliver(delivery) => delivery,
            };
            let mut request = Request::from_parts(parts, Full::new(delivery.webhook().raw().clone()));
            request.extensions_mut().insert(delivery.webhook().clone());
            let mut inner = inner;
            let result = async {
                std::future::poll_fn(|cx| inner.poll_ready(cx)).await?;
                inner.call(request).await
            }
            .instrument(delivery.span().clone())
            .await;
            match result {
                Ok(response) if response.status().is_success() => match receiver.complete(&delivery).await {
                    Ok(()) => Ok(response),
                    Err(reply) => Ok(reply.into_response()),
                },
                Ok(response) => {
                    receiver.release(&delivery).await;
                    Ok(response)
                }
                Err(e) => {
                    receiver.release(&delivery).await;
                    Err(e)
                }
            }
        })
    }
}
