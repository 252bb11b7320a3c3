//! The demo's scenarios, what each should produce, and the report.

use super::seller::SellerReport;
use super::upstream::CountingUpstream;
use super::{DEMO_PATH, DEMO_PUBLIC_URL};
use adcp_gateway::GatewayHandle;
use adcp_sign::{Algorithm, Clock, FixedClock, HttpSigner, SignedRequest, SoftwareSigner, SystemClock, WebhookEvent};
use adcp_webhook::outcome;
use adcp_webhook::{McpWebhook, TaskStatus};
use indicatif::ProgressBar;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;

/// How many scenarios the demo runs.
pub const COUNT: usize = 12;
/// Events the upstream must apply: A, B, D, the notification and its
/// re-emission, each once.
pub const EXPECTED_APPLIED: usize = 5;

/// Outcome shown for an event the upstream applied.
pub const FORWARDED: &str = "forwarded";
/// Outcome shown for a `200` the upstream never saw.
pub const DUPLICATE: &str = "duplicate, not forwarded";
/// Outcome shown for a `503` after the upstream failed.
pub const RETRY_LATER: &str = "upstream failed, claim released";
/// Outcome shown for a challenge the gateway answered with its value.
pub(super) const CHALLENGE_ANSWERED: &str = "challenge answered, not forwarded";
/// Outcome shown for a re-emission the upstream received marked as one.
pub(super) const REEMISSION: &str = "forwarded, marked as a re-emission";
/// The account subscription the buyer registered in the demo.
pub(super) const DEMO_NOTIFICATIONS_PATH: &str = "/webhooks/notifications";

/// What a scenario should produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    /// HTTP status the sender gets.
    pub status: u16,
    /// [`FORWARDED`], [`DUPLICATE`], [`RETRY_LATER`] or the error code.
    pub outcome: &'static str,
}

/// What happened to one scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioResult {
    /// What was sent.
    pub name: &'static str,
    /// What should happen.
    pub expected: Expected,
    /// The status the gateway answered.
    pub status: u16,
    /// What was observed: forwarded, duplicate, or the error code.
    pub outcome: String,
}

impl ScenarioResult {
    /// Whether the observation is the expected one.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.status == self.expected.status && self.outcome == self.expected.outcome
    }
}

/// The whole run: every scenario and the final counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoReport {
    /// One entry per scenario, in order.
    pub scenarios: Vec<ScenarioResult>,
    /// Idempotency keys of the events the upstream applied, in order.
    pub applied: Vec<String>,
    /// The gateway's `accepted` count.
    pub accepted: u64,
    /// The gateway's `duplicate` count.
    pub duplicates: u64,
    /// Requests rejected with a `webhook_*` code.
    pub rejected: u64,
    /// Forwards that failed.
    pub upstream_failures: u64,
    /// Events forwarded and acknowledged.
    pub forwarded: u64,
    /// The seller's side: the outbox and its restart.
    pub seller: SellerReport,
}

impl DemoReport {
    pub(crate) fn new(
        scenarios: Vec<ScenarioResult>,
        applied: Vec<String>,
        outcomes: &BTreeMap<&'static str, u64>,
        (forwarded, upstream_failures): (u64, u64),
        seller: SellerReport,
    ) -> Self {
        let count = |label: &str| outcomes.get(label).copied().unwrap_or(0);
        Self {
            scenarios,
            applied,
            accepted: count(outcome::ACCEPTED),
            duplicates: count(outcome::DUPLICATE),
            rejected: outcomes
                .iter()
                .filter(|(label, _)| label.starts_with("webhook_"))
                .map(|(_, n)| n)
                .sum(),
            upstream_failures,
            forwarded,
            seller,
        }
    }

    /// Distinct idempotency keys the upstream applied.
    #[must_use]
    pub fn distinct_applied(&self) -> usize {
        self.applied.iter().collect::<BTreeSet<_>>().len()
    }

    /// Every scenario as expected, the upstream applied each event
    /// exactly once, and so did the seller's ([`SellerReport::passed`]).
    #[must_use]
    pub fn passed(&self) -> bool {
        self.scenarios.len() == COUNT
            && self.scenarios.iter().all(ScenarioResult::ok)
            && self.applied.len() == EXPECTED_APPLIED
            && self.distinct_applied() == EXPECTED_APPLIED
            && self.accepted == EXPECTED_APPLIED as u64
            && self.forwarded == EXPECTED_APPLIED as u64
            && self.seller.passed()
    }

    /// The human-readable table and totals.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        let width = self.scenarios.iter().map(|s| s.name.len()).max().unwrap_or(8).max(8);
        let _ = writeln!(out, " #  {:<width$}  status  outcome", "scenario");
        let _ = writeln!(out, "--  {:-<width$}  ------  {:-<40}", "", "");
        for (i, s) in self.scenarios.iter().enumerate() {
            let mark = if s.ok() {
                String::new()
            } else {
                format!("   UNEXPECTED (expected {} {})", s.expected.status, s.expected.outcome)
            };
            let _ = writeln!(
                out,
                "{:>2}  {:<width$}  {:>6}  {}{mark}",
                i + 1,
                s.name,
                s.status,
                s.outcome
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "upstream applied {} events ({} distinct idempotency keys; expected {EXPECTED_APPLIED}, each once)",
            self.applied.len(),
            self.distinct_applied()
        );
        let _ = writeln!(
            out,
            "gateway: {} accepted, {} duplicate, {} rejected, {} upstream failure(s), {} forwarded",
            self.accepted, self.duplicates, self.rejected, self.upstream_failures, self.forwarded
        );
        self.seller.render(&mut out);
        let ok = self.scenarios.iter().filter(|s| s.ok()).count();
        if self.passed() {
            let _ = writeln!(out, "all {ok} scenarios had the expected outcome");
        } else {
            let _ = writeln!(out, "FAILED: {ok} of {} scenarios as expected", self.scenarios.len());
        }
        out
    }

    /// The report as JSON.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "scenarios": self.scenarios.iter().map(|s| json!({
                "scenario": s.name,
                "status": s.status,
                "outcome": s.outcome,
                "expected_status": s.expected.status,
                "expected_outcome": s.expected.outcome,
                "ok": s.ok(),
            })).collect::<Vec<_>>(),
            "upstream_applied": self.applied.len(),
            "upstream_distinct": self.distinct_applied(),
            "accepted": self.accepted,
            "duplicates": self.duplicates,
            "rejected": self.rejected,
            "upstream_failures": self.upstream_failures,
            "forwarded": self.forwarded,
            "seller": self.seller.to_json(),
            "passed": self.passed(),
        })
    }
}

/// One demo run's senders and observers.
pub(crate) struct Run<'a> {
    client: reqwest::Client,
    /// The gateway's loopback address; requests go to the path they were
    /// signed for.
    base_url: String,
    upstream: &'a CountingUpstream,
    bar: &'a ProgressBar,
    results: Vec<ScenarioResult>,
}

/// An HTTP client for the loopback gateway (no proxy, no redirects; reqwest
/// needs a TLS configuration even for `http://`), giving up after
/// `timeout`.
fn http_client(timeout: std::time::Duration) -> Result<reqwest::Client, String> {
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(timeout)
        .timeout(timeout)
        .build()
        .map_err(|e| format!("http client: {e}"))
}

fn event(n: &str) -> Result<WebhookEvent, String> {
    McpWebhook::new(
        format!("task_{n}"),
        "create_media_buy",
        TaskStatus::Completed,
        "2026-04-18T12:00:00Z",
    )
    .operation_id(format!("op_{n}"))
    .result(json!({"media_buy_id": format!("mb_{n}")}))
    .into_event()
    .map_err(|e| e.to_string())
}

impl<'a> Run<'a> {
    pub(crate) fn new(
        handle: &GatewayHandle,
        upstream: &'a CountingUpstream,
        bar: &'a ProgressBar,
    ) -> Result<Self, String> {
        Ok(Self {
            client: http_client(std::time::Duration::from_secs(10))?,
            base_url: handle.base_url(),
            upstream,
            bar,
            results: Vec::with_capacity(COUNT),
        })
    }

    /// Every scenario, in order.
    pub(crate) async fn all(
        &mut self,
        signer: &HttpSigner<Arc<SoftwareSigner>>,
        key: Arc<SoftwareSigner>,
    ) -> Result<Vec<ScenarioResult>, String> {
        let url = format!("{DEMO_PUBLIC_URL}{DEMO_PATH}");
        let sign = |event: WebhookEvent| {
            let url = url.clone();
            async move { signer.sign_webhook(&url, &event).await.map_err(|e| e.to_string()) }
        };
        let a = event("a")?;
        let first_a = sign(a.clone()).await?;
        self.check("event A, first delivery", &first_a, None, 200, FORWARDED)
            .await?;
        let b = sign(event("b")?).await?;
        self.check("event B, first delivery", &b, None, 200, FORWARDED).await?;
        let retry_a = sign(a).await?;
        self.check(
            "event A again (seller retry, fresh signature)",
            &retry_a,
            None,
            200,
            DUPLICATE,
        )
        .await?;
        self.check(
            "event A's request captured and replayed",
            &first_a,
            None,
            401,
            "webhook_signature_replayed",
        )
        .await?;
        let c = sign(event("c")?).await?;
        let tampered = c
            .body()
            .map(|b| b.as_str().replace("mb_c", "mb_evil"))
            .ok_or("signed webhook without a body")?;
        self.check(
            "event C with its body tampered in transit",
            &c,
            Some(tampered.into_bytes()),
            401,
            "webhook_signature_digest_mismatch",
        )
        .await?;
        let hour_ago = SystemClock.now() - 3600;
        let stale = HttpSigner::webhook(Arc::clone(&key))
            .map_err(|e| e.to_string())?
            .with_clock(FixedClock(hour_ago));
        let expired = stale
            .sign_webhook(&url, &event("e")?)
            .await
            .map_err(|e| e.to_string())?;
        self.check(
            "event E signed an hour ago (expired)",
            &expired,
            None,
            401,
            "webhook_signature_window_invalid",
        )
        .await?;
        let stranger = HttpSigner::webhook(
            SoftwareSigner::generate(Algorithm::Ed25519, "not-in-the-jwks").map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        let unknown = stranger
            .sign_webhook(&url, &event("f")?)
            .await
            .map_err(|e| e.to_string())?;
        self.check(
            "event F signed with a key the seller never published",
            &unknown,
            None,
            401,
            "webhook_signature_key_unknown",
        )
        .await?;
        let d = event("d")?;
        self.upstream.fail_next();
        let first_d = sign(d.clone()).await?;
        self.check(
            "event D while the upstream fails (500)",
            &first_d,
            None,
            503,
            RETRY_LATER,
        )
        .await?;
        let retry_d = sign(d).await?;
        self.check("event D retried by the seller", &retry_d, None, 200, FORWARDED)
            .await?;

        // The account-level subscription: the seller proves the buyer
        // controls the URL before activating it, then notifies.
        let notifications = format!("{DEMO_PUBLIC_URL}{DEMO_NOTIFICATIONS_PATH}");
        let value = challenge_value()?;
        let challenge = json!({
            "type": "webhook.challenge", "challenge": value, "account_id": DEMO_ACCOUNT,
            "subscriber_id": DEMO_SUBSCRIBER, "seller_agent_url": super::DEMO_AGENT,
            "delivery_auth": {"mode": "rfc9421"}, "event_types": [DEMO_EVENT_TYPE],
        });
        let signed = sign_json(signer, &notifications, &challenge).await?;
        self.check(
            "activation challenge for the account subscription",
            &signed,
            None,
            200,
            CHALLENGE_ANSWERED,
        )
        .await?;
        let note = |key: &str| {
            json!({
                "idempotency_key": key, "notification_id": "crv_hero_15s.review.1",
                "notification_type": DEMO_EVENT_TYPE, "fired_at": "2026-04-18T12:05:11Z",
                "subscriber_id": DEMO_SUBSCRIBER, "account_id": DEMO_ACCOUNT,
                "creative_id": "crv_hero_15s", "revision_id": "rev_0001",
                "transition": {"from": "pending_review", "to": "approved", "observed_at": "2026-04-18T12:04:58Z"},
                "reason_code": "review_passed", "initiator": "seller",
            })
        };
        let signed = sign_json(signer, &notifications, &note("demo-notification-0000001")).await?;
        self.check("creative.status_changed notification", &signed, None, 200, FORWARDED)
            .await?;
        let signed = sign_json(signer, &notifications, &note("demo-notification-0000002")).await?;
        self.check(
            "the same notification re-emitted under a new key",
            &signed,
            None,
            200,
            REEMISSION,
        )
        .await?;
        Ok(std::mem::take(&mut self.results))
    }

    async fn check(
        &mut self,
        name: &'static str,
        signed: &SignedRequest,
        body: Option<Vec<u8>>,
        status: u16,
        outcome: &'static str,
    ) -> Result<(), String> {
        self.bar.set_message(name);
        let before = self.upstream.applied().len();
        // The gateway sits behind a proxy that preserves `Host`: the request
        // arrives for the public authority the seller signed.
        let path = url::Url::parse(signed.url())
            .map(|u| u.path().to_owned())
            .unwrap_or_else(|_| DEMO_PATH.to_owned());
        let mut request = self
            .client
            .post(format!("{}{path}", self.base_url))
            .header(http::header::HOST, public_authority());
        for (name, value) in signed.headers() {
            request = request.header(*name, value.as_str());
        }
        let body = body.unwrap_or_else(|| signed.body().map(|b| b.as_bytes().to_vec()).unwrap_or_default());
        let response = request.body(body).send().await.map_err(|e| format!("{name}: {e}"))?;
        let got = response.status().as_u16();
        let code = response
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split("error=\"").nth(1))
            .and_then(|v| v.split('"').next())
            .map(str::to_owned);
        let grew = self.upstream.applied().len() > before;
        let answer = serde_json::from_str::<serde_json::Value>(&response.text().await.unwrap_or_default())
            .unwrap_or(serde_json::Value::Null);
        let echoed = answer.get("challenge").and_then(serde_json::Value::as_str);
        // Every rejection names its code in the body too.
        let code = code.or_else(|| {
            answer
                .get("error")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        });
        let observed = match (got, code, grew) {
            (503, Some(code), false) if code == "upstream_unavailable" => RETRY_LATER.to_owned(),
            (_, Some(code), _) => code,
            (200..=299, None, false) if echoed.is_some() => CHALLENGE_ANSWERED.to_owned(),
            (200..=299, None, true) if self.upstream.last_was_reemission() => REEMISSION.to_owned(),
            (200..=299, None, true) => FORWARDED.to_owned(),
            (200..=299, None, false) => DUPLICATE.to_owned(),
            (503, None, false) => RETRY_LATER.to_owned(),
            (_, None, true) => "forwarded despite the error status".to_owned(),
            (_, None, false) => "rejected without a code".to_owned(),
        };
        self.results.push(ScenarioResult {
            name,
            expected: Expected { status, outcome },
            status: got,
            outcome: observed,
        });
        self.bar.inc(1);
        Ok(())
    }
}

/// The authority of [`DEMO_PUBLIC_URL`].
fn public_authority() -> &'static str {
    DEMO_PUBLIC_URL.trim_start_matches("https://").trim_end_matches('/')
}

/// The demo's account, subscriber and subscribed event type.
pub(super) const DEMO_ACCOUNT: &str = "acct_demo";
/// The subscriber identifier of the demo's registration.
pub(super) const DEMO_SUBSCRIBER: &str = "trafficking-desk";
/// The event type the demo's registration subscribes to.
pub(super) const DEMO_EVENT_TYPE: &str = "creative.status_changed";

/// A fresh challenge value: 32 random bytes, unpadded base64url (43
/// characters).
fn challenge_value() -> Result<String, String> {
    use adcp_sign::RandomSource as _;
    let mut bytes = [0_u8; 32];
    adcp_sign::OsRandom.fill(&mut bytes).map_err(|e| e.to_string())?;
    Ok(adcp_sigbase::encoding::BinaryEncoding::Base64UrlUnpadded.encode(&bytes))
}

/// Signs any JSON body under the webhook profile (challenges carry no
/// idempotency key, so they are not `WebhookEvent`s).
async fn sign_json(
    signer: &HttpSigner<Arc<SoftwareSigner>>,
    url: &str,
    body: &serde_json::Value,
) -> Result<SignedRequest, String> {
    let body = adcp_sign::Body::from_json_bytes(body.to_string()).map_err(|e| e.to_string())?;
    let request = adcp_sign::UnsignedRequest::new("POST", url)
        .with_body(&body)
        .with_content_type("application/json");
    signer
        .sign_with(&request, &adcp_sign::SignOptions::new())
        .await
        .map_err(|e| e.to_string())
}
