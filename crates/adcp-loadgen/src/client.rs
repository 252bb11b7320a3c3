//! A minimal HTTP/1.1 client: one keep-alive connection per worker and
//! target, so `connections` workers hold exactly that many connections to
//! each target.

use crate::Error;
use adcp_webhook::signature_error_code;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// An `http://` target: where to connect, what to put in `Host` and the
/// request line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as given.
    pub url: String,
    /// The resolved address connected to.
    pub addr: SocketAddr,
}

impl Target {
    /// Resolves `url` (`http://host[:port]/path`).
    ///
    /// # Errors
    ///
    /// Not an `http` URL, or its host does not resolve.
    pub async fn resolve(url: &str) -> Result<Self, Error> {
        let uri: http::Uri = url.parse()?;
        if uri.scheme_str() != Some("http") {
            return Err(Error::new(format!("{url}: only http:// targets are supported")));
        }
        let host = uri.host().ok_or_else(|| Error::new(format!("{url}: no host")))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(80);
        let addr = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| Error::new(format!("{url}: {e}")))?
            .next()
            .ok_or_else(|| Error::new(format!("{url}: no address")))?;
        Ok(Self {
            url: url.to_owned(),
            addr,
        })
    }
}

/// A connection idle this long is replaced before its next request:
/// servers close idle keep-alive connections (the gateway after its
/// header timeout, 10 s by default), and a request written into a
/// connection the server is closing fails although nothing is wrong.
pub const MAX_IDLE: Duration = Duration::from_secs(4);

/// One keep-alive connection, opened on first use, again after an error,
/// and again after [`MAX_IDLE`] without a request.
#[derive(Debug)]
pub struct Connection {
    addr: SocketAddr,
    sender: Option<SendRequest<Full<Bytes>>>,
    last_used: Instant,
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The `error="…"` parameter of `WWW-Authenticate`, if any.
    pub error_code: Option<String>,
}

impl Connection {
    /// A connection to `addr`, not yet open.
    #[must_use]
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            sender: None,
            last_used: Instant::now(),
        }
    }

    async fn open(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, Error> {
        let idle = self.last_used.elapsed() > MAX_IDLE;
        self.last_used = Instant::now();
        if idle || self.sender.as_ref().is_none_or(SendRequest::is_closed) {
            let stream = tokio::net::TcpStream::connect(self.addr)
                .await
                .map_err(|e| Error::new(format!("connect {}: {e}", self.addr)))?;
            stream.set_nodelay(true)?;
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            self.sender = Some(sender);
        }
        self.sender.as_mut().ok_or_else(|| Error::new("connection not open"))
    }

    /// Sends `request`, reads the whole answer. On an error the connection
    /// is dropped (the next call opens a new one).
    ///
    /// # Errors
    ///
    /// Connecting, sending or reading failed.
    pub async fn send(&mut self, request: http::Request<Full<Bytes>>) -> Result<Answer, Error> {
        let result = self.try_send(request).await;
        if result.is_err() {
            self.sender = None;
        }
        result
    }

    async fn try_send(&mut self, request: http::Request<Full<Bytes>>) -> Result<Answer, Error> {
        let sender = self.open().await?;
        sender.ready().await?;
        let response = sender.send_request(request).await?;
        let status = response.status().as_u16();
        let error_code = response
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(signature_error_code);
        // Drain the body so the connection can be reused.
        response.into_body().collect().await?;
        self.last_used = Instant::now();
        Ok(Answer { status, error_code })
    }
}

/// `GET url` on a fresh connection: the status and the body.
///
/// # Errors
///
/// The URL is not `http://`, or the request failed.
pub async fn get(url: &str) -> Result<(u16, Bytes), Error> {
    let target = Target::resolve(url).await?;
    let uri: http::Uri = url.parse()?;
    let mut conn = Connection::new(target.addr);
    let sender = conn.open().await?;
    let path = uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
    let request = http::Request::get(path)
        .header(
            http::header::HOST,
            uri.authority().map_or("", http::uri::Authority::as_str),
        )
        .body(Full::new(Bytes::new()))?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use adcp_webhook::signature_error_code as error_param;

    #[test]
    fn parses_error_param() {
        assert_eq!(
            error_param(r#"Signature error="webhook_signature_digest_mismatch""#).as_deref(),
            Some("webhook_signature_digest_mismatch")
        );
        assert_eq!(error_param("Signature"), None);
    }
}
