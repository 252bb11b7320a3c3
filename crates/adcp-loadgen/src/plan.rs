//! What to send: fresh events, seller retries of earlier events (same
//! `idempotency_key` and body, a fresh signature), and tampered bodies,
//! each signed for the URL it is sent to.

use crate::Error;
use adcp_sign::{HttpSigner, SoftwareSigner, WebhookEvent};
use adcp_webhook::{McpWebhook, TaskStatus};
use bytes::Bytes;
use http_body_util::Full;
use serde::Serialize;
use std::collections::VecDeque;
use std::time::Instant;

/// How many recent events retries are drawn from.
const RECENT: usize = 4096;

/// The kind of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The first delivery of a new event.
    Unique,
    /// A seller's retry of an event already sent: same key and body, fresh
    /// signature, preferably to another URL.
    Duplicate,
    /// A new event whose body had one byte changed after signing.
    Tampered,
}

impl Kind {
    /// `unique`, `duplicate`, `tampered`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unique => "unique",
            Self::Duplicate => "duplicate",
            Self::Tampered => "tampered",
        }
    }

    /// Every kind, in report order.
    pub const ALL: [Self; 3] = [Self::Unique, Self::Duplicate, Self::Tampered];

    /// Position in [`Kind::ALL`].
    #[must_use]
    pub const fn index(self) -> usize {
        match self {
            Self::Unique => 0,
            Self::Duplicate => 1,
            Self::Tampered => 2,
        }
    }
}

/// One request, signed and ready to send.
#[derive(Debug)]
pub struct Job {
    /// What it is.
    pub kind: Kind,
    /// The event's number in this run (retries share their original's).
    pub event: u64,
    /// Index of the URL it goes to.
    pub target: usize,
    /// The request (origin-form target, `Host`, signature headers, body).
    pub request: http::Request<Full<Bytes>>,
    /// When it should be sent, for a paced run.
    pub scheduled: Option<Instant>,
}

/// The mix of requests.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanConfig {
    /// The URLs requests are signed for and sent to.
    pub urls: Vec<String>,
    /// Approximate body size.
    pub body_bytes: usize,
    /// Fraction of requests that re-deliver an earlier event.
    pub duplicates: f64,
    /// Fraction of requests with a body changed after signing.
    pub tampered: f64,
    /// Seed of the mix (not of keys or nonces, which come from the OS).
    pub seed: u64,
    /// A retry re-delivers an event sent at least this many requests
    /// earlier, so that retries are spread over the run rather than
    /// bunched behind their originals (the runner holds each retry until
    /// its original was answered).
    pub duplicate_lag: usize,
    /// What is signed: webhooks (the default) or AdCP requests.
    pub profile: SignProfile,
}

/// What the load generator signs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SignProfile {
    /// Webhooks (`create_media_buy` completions) under the webhook
    /// profile, for a gateway in webhook mode.
    #[default]
    Webhook,
    /// MCP `tools/call` `create_media_buy` requests under the 3.2
    /// request-signing profile, for a gateway in request mode. The
    /// event's `idempotency_key` is in the arguments and, for the sink's
    /// accounting only, in an unsigned `X-Adcp-Idempotency-Key` header,
    /// which the gateway passes through.
    Request,
}

/// SplitMix64: a small, seedable generator for the request mix.
#[derive(Debug, Clone)]
struct Mix(u64);

impl Mix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[0, n)`, `n > 0`.
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Produces signed jobs, one at a time (on the producer thread).
pub struct Planner {
    config: PlanConfig,
    signers: Vec<HttpSigner<SoftwareSigner>>,
    signed: usize,
    runtime: tokio::runtime::Runtime,
    mix: Mix,
    recent: VecDeque<(u64, WebhookEvent, usize)>,
    next_event: u64,
    pad: usize,
}

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planner")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Planner {
    /// A planner signing under the webhook profile with `keys`, in turn.
    ///
    /// # Errors
    ///
    /// No URL or key, a fraction outside `[0, 1]`, or a key cannot sign.
    pub fn new(config: PlanConfig, keys: Vec<SoftwareSigner>) -> Result<Self, Error> {
        if keys.is_empty() {
            return Err(Error::new("no signing key"));
        }
        if config.urls.is_empty() {
            return Err(Error::new("at least one --url is needed"));
        }
        for (name, value) in [("--duplicates", config.duplicates), ("--tampered", config.tampered)] {
            if !(0.0..=1.0).contains(&value) {
                return Err(Error::new(format!("{name} must be in [0, 1], not {value}")));
            }
        }
        if config.duplicates + config.tampered > 1.0 {
            return Err(Error::new("--duplicates + --tampered must not exceed 1"));
        }
        let runtime = tokio::runtime::Builder::new_current_thread().build()?;
        let profile = config.profile;
        let mut planner = Self {
            mix: Mix(config.seed),
            config,
            signers: keys
                .into_iter()
                .map(|key| match profile {
                    SignProfile::Webhook => HttpSigner::webhook(key),
                    SignProfile::Request => HttpSigner::new(adcp_sign::SigningProfile::request_v3_2(), key),
                })
                .collect::<Result<Vec<_>, _>>()?,
            signed: 0,
            runtime,
            recent: VecDeque::with_capacity(RECENT + 1),
            next_event: 0,
            pad: 1,
        };
        // Size the padding so that bodies are about `body_bytes` long.
        let probe = planner.event(100_000)?;
        let bare = probe.body().as_bytes().len().saturating_sub(1);
        planner.pad = planner.config.body_bytes.saturating_sub(bare).max(1);
        Ok(planner)
    }

    /// The next request of the mix.
    ///
    /// # Errors
    ///
    /// Building or signing the event failed.
    pub fn next_job(&mut self) -> Result<Job, Error> {
        let draw = self.mix.unit();
        let lag = self.config.duplicate_lag;
        if draw < self.config.tampered {
            let event_no = self.take_event_no();
            let event = self.event(event_no)?;
            let target = self.unique_target(event_no);
            return self.sign(Kind::Tampered, event_no, target, &event);
        }
        if draw < self.config.tampered + self.config.duplicates && self.recent.len() > lag {
            let pick = self.mix.below(self.recent.len() - lag);
            let (event_no, event, original) = self.recent[pick].clone();
            let n = self.config.urls.len();
            let target = if n > 1 {
                (original + 1 + self.mix.below(n - 1)) % n
            } else {
                original
            };
            return self.sign(Kind::Duplicate, event_no, target, &event);
        }
        let event_no = self.take_event_no();
        let event = self.event(event_no)?;
        let target = self.unique_target(event_no);
        let job = self.sign(Kind::Unique, event_no, target, &event)?;
        self.recent.push_back((event_no, event, target));
        if self.recent.len() > RECENT + lag {
            self.recent.pop_front();
        }
        Ok(job)
    }

    fn take_event_no(&mut self) -> u64 {
        let n = self.next_event;
        self.next_event += 1;
        n
    }

    fn unique_target(&self, event_no: u64) -> usize {
        (event_no % self.config.urls.len() as u64) as usize
    }

    /// An MCP task-status envelope for event `n`, padded to the body size.
    fn event(&self, n: u64) -> Result<WebhookEvent, Error> {
        Ok(McpWebhook::new(
            format!("task_{n}"),
            "create_media_buy",
            TaskStatus::Completed,
            "2026-11-30T12:00:00Z",
        )
        .operation_id(format!("op_{n}"))
        .result(serde_json::json!({"media_buy_id": format!("mb_{n}"), "pad": "x".repeat(self.pad)}))
        .into_event()?)
    }

    fn sign(&mut self, kind: Kind, event_no: u64, target: usize, event: &WebhookEvent) -> Result<Job, Error> {
        let which = self.signed % self.signers.len();
        self.signed = self.signed.wrapping_add(1);
        let url = &self.config.urls[target];
        let signer = &self.signers[which];
        let (signed, body) = match self.config.profile {
            SignProfile::Webhook => (
                self.runtime.block_on(signer.sign_webhook(url, event))?,
                event.body().as_bytes().to_vec(),
            ),
            SignProfile::Request => {
                let payload: serde_json::Value = serde_json::from_str(event.body().as_str())?;
                let call = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": event_no,
                    "method": "tools/call",
                    "params": {
                        "name": "create_media_buy",
                        "arguments": {"idempotency_key": event.idempotency_key().as_str(), "payload": payload}
                    }
                });
                let body = adcp_sign::Body::json(&call)?;
                let signed = self
                    .runtime
                    .block_on(signer.sign(&adcp_sign::UnsignedRequest::post(url, &body)))?;
                (signed, body.as_bytes().to_vec())
            }
        };
        let uri: http::Uri = signed.url().parse()?;
        let path = uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
        let authority = uri
            .authority()
            .ok_or_else(|| Error::new(format!("{url}: no authority")))?;
        let mut builder = http::Request::post(path).header(http::header::HOST, authority.as_str());
        for (name, value) in signed.headers() {
            builder = builder.header(*name, value.as_str());
        }
        if self.config.profile == SignProfile::Request {
            builder = builder.header("x-adcp-idempotency-key", event.idempotency_key().as_str());
        }
        let mut body = body;
        if kind == Kind::Tampered {
            tamper(&mut body);
        }
        let body = Bytes::from(body);
        Ok(Job {
            kind,
            event: event_no,
            target,
            request: builder.body(Full::new(body))?,
            scheduled: None,
        })
    }
}

/// Changes one byte of the padding (`x` → `y`) after signing: the JSON
/// stays valid, the digest no longer matches.
fn tamper(body: &mut [u8]) {
    if let Some(pos) = body.iter().rposition(|&b| b == b'x') {
        body[pos] = b'y';
    } else if let Some(first) = body.first_mut() {
        *first ^= 0x20;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use adcp_sign::Algorithm;

    fn body(job: Job) -> Bytes {
        use http_body_util::BodyExt;
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(job.request.into_body().collect()).unwrap().to_bytes()
    }

    fn planner(duplicates: f64, tampered: f64, urls: usize) -> Planner {
        let key = vec![SoftwareSigner::generate(Algorithm::Ed25519, "t").unwrap()];
        Planner::new(
            PlanConfig {
                urls: (0..urls)
                    .map(|i| format!("http://127.0.0.1:{}/hook", 9000 + i))
                    .collect(),
                body_bytes: 300,
                duplicates,
                tampered,
                seed: 7,
                duplicate_lag: 8,
                profile: SignProfile::Webhook,
            },
            key,
        )
        .unwrap()
    }

    #[test]
    fn request_profile_signs_mcp_calls_with_the_request_tag() {
        let key = vec![SoftwareSigner::generate(Algorithm::Ed25519, "t").unwrap()];
        let mut planner = Planner::new(
            PlanConfig {
                urls: vec!["http://127.0.0.1:9000/mcp".into()],
                body_bytes: 300,
                duplicates: 0.0,
                tampered: 0.0,
                seed: 1,
                duplicate_lag: 8,
                profile: SignProfile::Request,
            },
            key,
        )
        .unwrap();
        let job = planner.next_job().unwrap();
        let headers = job.request.headers().clone();
        let input = headers["signature-input"].to_str().unwrap();
        assert!(input.contains("tag=\"adcp/request-signing/v1\""), "{input}");
        assert!(headers.contains_key("x-adcp-idempotency-key"));
        let call: serde_json::Value = serde_json::from_slice(&body(job)).unwrap();
        assert_eq!(call["method"], "tools/call");
        assert_eq!(call["params"]["name"], "create_media_buy");
    }

    #[test]
    fn bodies_are_about_the_size_asked() {
        let mut p = planner(0.0, 0.0, 1);
        let job = p.next_job().unwrap();
        let len = body(job).len();
        assert!((285..=315).contains(&len), "{len}");
    }

    #[test]
    fn mix_and_targets() {
        let mut p = planner(0.2, 0.1, 2);
        let mut counts = [0usize; 3];
        for _ in 0..2000 {
            let job = p.next_job().unwrap();
            counts[job.kind.index()] += 1;
            let host = job.request.headers()[http::header::HOST].to_str().unwrap().to_owned();
            assert_eq!(host, format!("127.0.0.1:{}", 9000 + job.target));
            if job.kind == Kind::Duplicate {
                // Another gateway than the original's (round-robin by event).
                assert_ne!(job.target as u64, job.event % 2);
            }
        }
        assert!((150..=250).contains(&counts[2]), "{counts:?}");
        assert!((300..=500).contains(&counts[1]), "{counts:?}");
    }

    #[test]
    fn tampering_changes_one_byte() {
        let mut p = planner(0.0, 1.0, 1);
        let job = p.next_job().unwrap();
        let body = body(job);
        assert!(body.ends_with(b"y\"}}"), "{:?}", String::from_utf8_lossy(&body));
    }
}
