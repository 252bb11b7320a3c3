//! Revocation lists for discovered sellers (`--revocation-list
//! SELLER_URL=LIST_URL`): the seller's keys come from a local HTTPS server
//! (brand.json → `jwks_uri`) reached through the hidden test-only flags,
//! and its JWS-signed list from the same server.
//!
//! The library-mode tests build the gateway from a `GatewayConfig` (the
//! same path as the binary) with one injected clock for the verifier, the
//! store and key discovery, so `next_update + grace` is reached by moving
//! the clock, not by sleeping. The seller signs with the same clock.
//!
//! What the spec says, and what is asserted:
//!
//! - checklist step 9: `keyid ∈ revoked_kids` → `webhook_signature_key_revoked`;
//!   not refreshed within grace → `webhook_signature_revocation_stale`;
//! - "Retry semantics for verification failures": every `webhook_*` code of
//!   the taxonomy, both of these included, is answered `401` with
//!   `WWW-Authenticate: Signature error="<code>"` and is terminal for that
//!   delivery (the transport table: "No (block new)") — so `401`, never a
//!   retryable `503`, and no `Retry-After`;
//! - "Transport revocation": grace = 4 × the polling interval; the list is
//!   polled again once it is back, without a restart.
//!
//! One test covers the other key-discovery trust check a gateway makes for
//! discovered sellers, `jwks_uri` pinning ("Trust anchor and blast
//! radius": pin the `jwks_uri` learned at onboarding, alarm on changes):
//! brand.json naming another `jwks_uri` is `401
//! webhook_signature_jwks_untrusted` and counted per seller in `/metrics`.
//!
//! The last tests check the other side of that line: the `503`s the
//! gateway answers for outages (upstream, key discovery) are retryable and
//! carry `Retry-After`, without a challenge.

use crate::support::gateway as common;
use crate::support::jwks as jwks_common;
use crate::support::test_network;
use adcp_gateway::{Gateway, GatewayHandle};
use adcp_sig::gateway::{resolve, GatewayArgs};
use adcp_sigbase::Clock;
use adcp_sign::{Algorithm, HttpSigner, SignedRequest, SoftwareSigner, WebhookEvent};
use common::{event, TempDir, Upstream, PATH};
use jwks_common::{ok, Resp, Server};
use serde_json::json;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// 2026-04-18T14:00:00Z.
const T0: i64 = 1_776_520_800;

/// A clock the test moves by hand (Unix seconds).
#[derive(Clone)]
struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    fn at(t: i64) -> Self {
        Self(Arc::new(AtomicI64::new(t)))
    }

    fn set(&self, t: i64) {
        self.0.store(t, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// base64url without padding.
fn b64(bytes: &[u8]) -> String {
    adcp_sigbase::encoding::BinaryEncoding::Base64UrlUnpadded.encode(bytes)
}

/// The list's payload; `issuer` is the origin of the agent it governs.
fn list_payload(issuer: &str, next_update: i64, revoked: &[&str]) -> serde_json::Value {
    json!({"version": 1, "issuer": issuer, "updated": adcp_test_support::rfc3339(next_update - 60),
        "next_update": adcp_test_support::rfc3339(next_update), "revoked_kids": revoked, "revoked_jtis": []})
}

/// A flattened JWS of the list, signed by `signer` (a key of the JWKS).
fn signed_list(signer: &SoftwareSigner, issuer: &str, next_update: i64, revoked: &[&str]) -> Resp {
    let kid = signer.public_jwk().unwrap().kid().unwrap().to_owned();
    let protected = b64(json!({"alg": "EdDSA", "kid": kid, "typ": "adcp-gov-revocation+jws"})
        .to_string()
        .as_bytes());
    let payload = b64(list_payload(issuer, next_update, revoked).to_string().as_bytes());
    let key = signer.private_jwk().unwrap().signing_key().unwrap();
    let sig = key.sign(format!("{protected}.{payload}").as_bytes()).unwrap();
    ok(json!({"protected": protected, "payload": payload, "signature": b64(sig.as_bytes())}).to_string())
}

fn down() -> Resp {
    Resp {
        status: 503,
        ..ok("{}")
    }
}

const GOOD: &str = "rev-test-good";
const REVOKED: &str = "rev-test-revoked";

/// A seller with two published keys, its brand.json, JWKS and a signed
/// revocation list revoking [`REVOKED`] (`next_update` = `T0 + 60`).
struct Seller {
    server: Server,
    agent: String,
    list_url: String,
    good: SoftwareSigner,
    revoked: SoftwareSigner,
    dir: TempDir,
}

impl Seller {
    async fn start(tag: &str) -> Self {
        let server = Server::start(&["seller.example", "keys.example"]).await;
        let agent = server.url("seller.example", "/mcp");
        let good = SoftwareSigner::generate(Algorithm::Ed25519, GOOD).unwrap();
        let revoked = SoftwareSigner::generate(Algorithm::Ed25519, REVOKED).unwrap();
        server.set(
            "/.well-known/brand.json",
            ok(json!({"agents": [{"url": agent, "jwks_uri": server.url("keys.example", "/jwks.json")}]}).to_string()),
        );
        let keys: Vec<serde_json::Value> = [&good, &revoked]
            .iter()
            .flat_map(|k| k.jwks().unwrap().to_public_json()["keys"].as_array().unwrap().clone())
            .collect();
        server.set("/jwks.json", ok(json!({ "keys": keys }).to_string()));
        server.set(
            "/revocations.json",
            signed_list(&good, &server.url("seller.example", ""), T0 + 60, &[REVOKED]),
        );
        let list_url = server.url("seller.example", "/revocations.json");
        let dir = TempDir::new(tag);
        std::fs::write(dir.0.join("ca.der"), &server.ca_der).unwrap();
        Self {
            server,
            agent,
            list_url,
            good,
            revoked,
            dir,
        }
    }

    /// The gateway's arguments: this seller discovered with its list, the
    /// hidden test-only network flags.
    fn args(&self, upstream: &Upstream) -> GatewayArgs {
        GatewayArgs {
            upstream: Some(upstream.url()),
            agents: vec![self.agent.clone()],
            revocation_lists: vec![format!("{}={}", self.agent, self.list_url)],
            store: Some(self.dir.sqlite()),
            quiet: true,
            dangerously_trust_ca_for_tests: Some(self.dir.0.join("ca.der")),
            dangerously_resolve_for_tests: self.server.names.iter().map(|n| format!("{n}=127.0.0.1")).collect(),
            dangerously_allow_loopback_for_tests: true,
            ..GatewayArgs::default()
        }
    }

    /// The origin of the seller's agent URL: the `issuer` its lists carry.
    fn issuer(&self) -> String {
        self.server.url("seller.example", "")
    }

    fn list_hits(&self) -> usize {
        self.server.hits("/revocations.json")
    }
}

/// A gateway built from `args` as the binary builds it, on a loopback port,
/// every clock being `clock`.
async fn start(args: &GatewayArgs, clock: &ManualClock) -> GatewayHandle {
    let config = resolve(args, None).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let gateway = Gateway::from_config_with_clock(&config, Some(clock)).await.unwrap();
    common::serve(&gateway).await
}

/// What the gateway answered.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    status: u16,
    /// The whole `WWW-Authenticate` value.
    challenge: Option<String>,
    retry_after: Option<String>,
}

fn forwarded() -> Answer {
    Answer {
        status: 200,
        challenge: None,
        retry_after: None,
    }
}

/// The spec's terminal answer: `401`, exactly the challenge, no `Retry-After`.
fn rejected(code: &str) -> Answer {
    Answer {
        status: 401,
        challenge: Some(format!("Signature error=\"{code}\"")),
        retry_after: None,
    }
}

async fn sign(signer: &SoftwareSigner, clock: &ManualClock, url: &str, e: &WebhookEvent) -> SignedRequest {
    HttpSigner::webhook(signer)
        .unwrap()
        .with_clock(clock.clone())
        .sign_webhook(url, e)
        .await
        .unwrap()
}

async fn post(url: &str, signed: &SignedRequest) -> Answer {
    let client = common::http_client(Duration::from_secs(30)).unwrap();
    let response = common::signed_post(&client, url, signed).send().await.unwrap();
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
    Answer {
        status: response.status().as_u16(),
        challenge: header("www-authenticate"),
        retry_after: header("retry-after"),
    }
}

/// Signs `e` with `signer` at the clock's time and sends it to `handle`.
async fn deliver(handle: &GatewayHandle, signer: &SoftwareSigner, clock: &ManualClock, e: &WebhookEvent) -> Answer {
    let url = format!("{}{PATH}", handle.base_url());
    post(&url, &sign(signer, clock, &url, e).await).await
}

fn render(handle: &GatewayHandle) -> String {
    handle.gateway().metrics().render(handle.gateway().receiver().metrics())
}

/// A kid on the seller's signed list is `401 webhook_signature_key_revoked`
/// (nothing forwarded); a kid not on it is forwarded with its verified
/// identity. The list is polled again at `next_update`: a kid the seller
/// revokes later is refused from the next poll on, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_kid_is_401_key_revoked_and_a_current_kid_is_forwarded() {
    let seller = Seller::start("revoked").await;
    let upstream = Upstream::start().await;
    let clock = ManualClock::at(T0);
    let handle = start(&seller.args(&upstream), &clock).await;

    let one = event("one");
    assert_eq!(deliver(&handle, &seller.good, &clock, &one).await, forwarded());
    let two = event("two");
    assert_eq!(
        deliver(&handle, &seller.revoked, &clock, &two).await,
        rejected("webhook_signature_key_revoked"),
        "{}",
        render(&handle)
    );
    assert_eq!(upstream.applied_keys(), [one.idempotency_key().as_str()]);
    let applied = upstream.seen.applied.lock().unwrap().clone();
    assert_eq!(applied[0].0["x-adcp-verified-keyid"], GOOD);
    assert_eq!(applied[0].0["x-adcp-verified-agent"], seller.agent.as_str());
    assert_eq!(seller.list_hits(), 1, "one poll, then the cached list");
    assert!(render(&handle).contains("adcp_gateway_webhooks_total{outcome=\"webhook_signature_key_revoked\"} 1\n"));

    // The seller revokes GOOD as well; seen at the next poll (next_update).
    seller.server.set(
        "/revocations.json",
        signed_list(&seller.good, &seller.issuer(), T0 + 180, &[REVOKED, GOOD]),
    );
    clock.set(T0 + 30);
    let three = event("three");
    assert_eq!(
        deliver(&handle, &seller.good, &clock, &three).await,
        forwarded(),
        "before next_update"
    );
    clock.set(T0 + 61);
    let four = event("four");
    assert_eq!(
        deliver(&handle, &seller.good, &clock, &four).await,
        rejected("webhook_signature_key_revoked")
    );
    assert_eq!(seller.list_hits(), 2);
    assert_eq!(
        upstream.applied_keys(),
        [one.idempotency_key().as_str(), three.idempotency_key().as_str()]
    );
    handle.shutdown().await.unwrap();
}

/// The list endpoint fails after one good poll (`next_update` = `T0 + 60`,
/// so the interval is the 1 min floor and grace 4 × 1 min).
///
/// Expected: the last good list is used until `next_update + grace`
/// (`T0 + 300`): forwarded at `T0 + 250` although that poll failed. Past it,
/// `401 webhook_signature_revocation_stale` with exactly the challenge and
/// no `Retry-After` (terminal per the spec; the list state, not the
/// request, is at fault), nothing forwarded, still so while the endpoint
/// keeps failing. Once it serves a list again, the next poll (at most a
/// minute after the last failed one) makes the seller's deliveries verify
/// again, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_down_past_next_update_plus_grace_is_401_revocation_stale_then_recovers() {
    let seller = Seller::start("stale").await;
    let upstream = Upstream::start().await;
    let clock = ManualClock::at(T0);
    let handle = start(&seller.args(&upstream), &clock).await;

    let one = event("one");
    assert_eq!(deliver(&handle, &seller.good, &clock, &one).await, forwarded());
    seller.server.set("/revocations.json", down());

    clock.set(T0 + 250);
    let two = event("two");
    assert_eq!(
        deliver(&handle, &seller.good, &clock, &two).await,
        forwarded(),
        "within grace"
    );
    assert_eq!(seller.list_hits(), 2, "the failed poll");
    // The revoked kid stays revoked on the last good list.
    assert_eq!(
        deliver(&handle, &seller.revoked, &clock, &event("x")).await,
        rejected("webhook_signature_key_revoked")
    );

    let three = event("three");
    for t in [T0 + 301, T0 + 320] {
        clock.set(t);
        assert_eq!(
            deliver(&handle, &seller.good, &clock, &three).await,
            rejected("webhook_signature_revocation_stale"),
            "at T0 + {}: {}",
            t - T0,
            render(&handle)
        );
    }
    assert_eq!(
        upstream.applied_keys(),
        [one.idempotency_key().as_str(), two.idempotency_key().as_str()]
    );
    assert!(render(&handle).contains("adcp_gateway_webhooks_total{outcome=\"webhook_signature_revocation_stale\"} 2\n"));

    // The endpoint is back; the next poll is due a minute after the last
    // failed one (T0 + 320).
    seller.server.set(
        "/revocations.json",
        signed_list(&seller.good, &seller.issuer(), T0 + 600, &[REVOKED]),
    );
    clock.set(T0 + 381);
    let four = event("four");
    assert_eq!(deliver(&handle, &seller.good, &clock, &four).await, forwarded());
    // Nothing of event three was claimed: its next delivery is forwarded.
    assert_eq!(deliver(&handle, &seller.good, &clock, &three).await, forwarded());
    assert_eq!(
        deliver(&handle, &seller.revoked, &clock, &event("y")).await,
        rejected("webhook_signature_key_revoked")
    );
    assert_eq!(
        upstream.applied_keys(),
        [
            one.idempotency_key().as_str(),
            two.idempotency_key().as_str(),
            four.idempotency_key().as_str(),
            three.idempotency_key().as_str()
        ]
    );
    handle.shutdown().await.unwrap();
}

/// A list that is not a JWS is never trusted by default: no list is ever
/// loaded, so the seller's deliveries are `401 webhook_signature_revocation_stale`
/// (fail closed), nothing forwarded. With the hidden test-only flag the
/// same unsigned list is used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsigned_list_is_refused_unless_the_test_only_flag_allows_it() {
    let seller = Seller::start("unsigned").await;
    seller.server.set(
        "/revocations.json",
        ok(list_payload(&seller.issuer(), T0 + 60, &[REVOKED]).to_string()),
    );
    let upstream = Upstream::start().await;
    let clock = ManualClock::at(T0);

    let handle = start(&seller.args(&upstream), &clock).await;
    assert_eq!(
        deliver(&handle, &seller.good, &clock, &event("one")).await,
        rejected("webhook_signature_revocation_stale")
    );
    handle.shutdown().await.unwrap();
    assert!(upstream.applied_keys().is_empty());

    let args = GatewayArgs {
        dangerously_allow_unsigned_revocation_list_for_tests: true,
        ..seller.args(&upstream)
    };
    let handle = start(&args, &clock).await;
    let two = event("two");
    assert_eq!(deliver(&handle, &seller.good, &clock, &two).await, forwarded());
    assert_eq!(
        deliver(&handle, &seller.revoked, &clock, &event("three")).await,
        rejected("webhook_signature_key_revoked")
    );
    assert_eq!(upstream.applied_keys(), [two.idempotency_key().as_str()]);
    handle.shutdown().await.unwrap();
}

/// The gateway process, killed if a failed assertion leaves it running.
struct Reaper(std::process::Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The binary: `--revocation-list` wired to the seller's resolver (the
/// system clock, a list valid for ten minutes), and refused at start-up
/// (exit 2, a message naming the flag) for a seller that is not an
/// `--agent` or a list URL that is not `https`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_takes_revocation_lists_and_checks_them_at_start_up() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let seller = Seller::start("revocation-cli").await;
    let now = adcp_sigbase::SystemClock.now();
    seller.server.set(
        "/revocations.json",
        signed_list(&seller.good, &seller.issuer(), now + 600, &[REVOKED]),
    );
    let upstream = Upstream::start().await;
    let ca = seller.dir.0.join("ca.der");
    let command = |extra: &[String]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_adcp-sig"));
        command
            .args([
                "gateway",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                upstream.url().as_str(),
            ])
            .args(["--agent", &seller.agent, "--store", &seller.dir.sqlite()])
            .args(test_network::flags(&ca, &seller.server.names))
            .args(extra)
            .env_remove("ADCP_GATEWAY_REVOCATION_LISTS");
        command
    };

    // The flag, then the environment (comma-separated: the second entry
    // is the bad one).
    for (bad, expected, env) in [
        (
            format!("https://stranger.example/mcp={}", seller.list_url),
            "not one of the --agent URLs",
            false,
        ),
        (
            format!(
                "{}={},{}=http://seller.example/revocations.json",
                seller.agent, seller.list_url, seller.agent
            ),
            "not https",
            true,
        ),
    ] {
        let out = tokio::task::spawn_blocking({
            let mut command = if env {
                let mut command = command(&[]);
                command.env("ADCP_GATEWAY_REVOCATION_LISTS", &bad);
                command
            } else {
                command(&["--revocation-list".into(), bad.clone()])
            };
            move || command.output().unwrap()
        })
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(
            stderr.contains("--revocation-list") && stderr.contains(expected),
            "{stderr}"
        );
    }

    let mut child = Reaper(
        command(&[
            "--revocation-list".into(),
            format!("{}={}", seller.agent, seller.list_url),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap(),
    );
    let mut stderr = BufReader::new(child.0.stderr.take().unwrap());
    let (line, addr) = common::listening(&mut stderr);
    assert!(
        line.contains(&format!("(revocation list {})", seller.list_url)),
        "{line}"
    );

    let url = format!("http://{addr}{PATH}");
    let clock = ManualClock::at(now);
    let (one, two) = (event("one"), event("two"));
    let mut answers = Vec::new();
    for (signer, e) in [(&seller.good, &one), (&seller.revoked, &two)] {
        clock.set(adcp_sigbase::SystemClock.now());
        answers.push(post(&url, &sign(signer, &clock, &url, e).await).await);
    }
    let _ = Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status();
    let status = child.0.wait().unwrap();
    let log: String = stderr.lines().map(|l| l.unwrap() + "\n").collect();
    assert_eq!(status.code(), Some(0), "{log}");
    assert_eq!(
        answers,
        [forwarded(), rejected("webhook_signature_key_revoked")],
        "{log}"
    );
    assert_eq!(upstream.applied_keys(), [one.idempotency_key().as_str()]);
    assert_eq!(seller.list_hits(), 1);
}

/// The spec signs the list so that "a compromised CDN or DNS origin cannot
/// serve a stale or tampered list to un-revoke a compromised key". A
/// signature alone does not stop a *rollback*: an older list, validly
/// signed before the key was revoked, replayed by the CDN.
/// `HttpsKeyResolver` refuses a list older than the one it holds (by
/// `updated`, else `next_update`), and counts that as a failed refresh.
///
/// Expected: after the seller's list revoking [`REVOKED`] was loaded, an
/// older signed list without it is not taken, and [`REVOKED`] stays
/// `401 webhook_signature_key_revoked`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_signed_list_replayed_by_the_cdn_does_not_un_revoke_a_kid() {
    let seller = Seller::start("rollback").await;
    let upstream = Upstream::start().await;
    let clock = ManualClock::at(T0);
    let handle = start(&seller.args(&upstream), &clock).await;
    assert_eq!(deliver(&handle, &seller.good, &clock, &event("one")).await, forwarded());
    assert_eq!(
        deliver(&handle, &seller.revoked, &clock, &event("two")).await,
        rejected("webhook_signature_key_revoked")
    );
    // The list of ten minutes earlier (updated T0 - 600, nothing revoked),
    // validly signed, served at the next poll.
    seller.server.set(
        "/revocations.json",
        signed_list(&seller.good, &seller.issuer(), T0 - 540, &[]),
    );
    clock.set(T0 + 61);
    let answer = deliver(&handle, &seller.revoked, &clock, &event("three")).await;
    assert_eq!(seller.list_hits(), 2, "the poll happened");
    handle.shutdown().await.unwrap();
    assert_eq!(answer, rejected("webhook_signature_key_revoked"));
}

// ---------------------------------------------------------------------------
// Retry-After on the gateway's retryable 503s
// ---------------------------------------------------------------------------

fn unavailable() -> Answer {
    Answer {
        status: 503,
        challenge: None,
        retry_after: Some(adcp_webhook::UNAVAILABLE_RETRY_AFTER_SECS.to_string()),
    }
}

/// The upstream failing (`500`) and key discovery failing (the JWKS
/// endpoint answers `500`, `webhook_signature_jwks_unavailable`) are both
/// `503` with `Retry-After: 2` and no `WWW-Authenticate`; nothing is
/// forwarded until each is back, then the retry is forwarded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateways_503s_for_outages_carry_retry_after_and_no_challenge() {
    assert_eq!(adcp_webhook::UNAVAILABLE_RETRY_AFTER_SECS, 2);
    let seller = Seller::start("retry-after").await;
    let upstream = Upstream::start().await;
    let clock = ManualClock::at(T0);
    let handle = start(&seller.args(&upstream), &clock).await;

    // Upstream down.
    upstream.fail_next(1);
    let one = event("one");
    assert_eq!(deliver(&handle, &seller.good, &clock, &one).await, unavailable());
    assert!(upstream.applied_keys().is_empty());
    assert_eq!(deliver(&handle, &seller.good, &clock, &one).await, forwarded());

    // Key discovery down: a fresh gateway (nothing cached) whose seller's
    // JWKS endpoint fails.
    handle.shutdown().await.unwrap();
    seller.server.set("/jwks.json", down());
    let handle = start(&seller.args(&upstream), &clock).await;
    let two = event("two");
    assert_eq!(deliver(&handle, &seller.good, &clock, &two).await, unavailable());
    assert!(render(&handle).contains("adcp_gateway_webhooks_total{outcome=\"webhook_signature_jwks_unavailable\"} 1\n"));
    assert_eq!(upstream.applied_keys(), [one.idempotency_key().as_str()]);
    // Back, and the failure's 60 s negative cache has passed.
    seller.server.set(
        "/jwks.json",
        ok(json!({"keys": seller.good.jwks().unwrap().to_public_json()["keys"]}).to_string()),
    );
    clock.set(T0 + adcp_jwks::NEGATIVE_TTL_SECS + 1);
    assert_eq!(deliver(&handle, &seller.good, &clock, &two).await, forwarded());
    assert_eq!(
        upstream.applied_keys(),
        [one.idempotency_key().as_str(), two.idempotency_key().as_str()]
    );
    handle.shutdown().await.unwrap();
}

/// brand.json moves the seller's `jwks_uri` (with a new key there): the
/// gateway keeps the first-learned one, answers the new key's delivery
/// `401 webhook_signature_jwks_untrusted` (terminal, nothing forwarded),
/// counts the change in `adcp_gateway_jwks_uri_changes_total{agent}`, and
/// keeps forwarding the seller's deliveries signed with the key it trusts.
/// With `--pin-jwks-uri` naming the new URL instead, the same move is the
/// expected one: no alarm, the new key verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_jwks_uri_is_401_jwks_untrusted_and_counted() {
    let seller = Seller::start("jwks-moved").await;
    let upstream = Upstream::start().await;
    let clock = ManualClock::at(T0);
    let mut args = seller.args(&upstream);
    args.revocation_lists.clear();
    let handle = start(&args, &clock).await;
    let series = format!("adcp_gateway_jwks_uri_changes_total{{agent=\"{}\"}}", seller.agent);

    let one = event("one");
    assert_eq!(deliver(&handle, &seller.good, &clock, &one).await, forwarded());
    assert!(
        render(&handle).contains(&format!("{series} 0\n")),
        "{}",
        render(&handle)
    );

    // The seller's brand.json now names another jwks_uri, holding a key
    // the gateway has never seen.
    let moved = SoftwareSigner::generate(Algorithm::Ed25519, "moved-key").unwrap();
    let moved_url = seller.server.url("keys.example", "/moved-jwks.json");
    seller.server.set(
        "/.well-known/brand.json",
        ok(json!({"agents": [{"url": seller.agent, "jwks_uri": moved_url}]}).to_string()),
    );
    seller.server.set(
        "/moved-jwks.json",
        ok(moved.jwks().unwrap().to_public_json().to_string()),
    );
    clock.set(T0 + 5);
    let two = event("two");
    assert_eq!(
        deliver(&handle, &moved, &clock, &two).await,
        rejected("webhook_signature_jwks_untrusted"),
        "{}",
        render(&handle)
    );
    assert!(
        render(&handle).contains(&format!("{series} 1\n")),
        "{}",
        render(&handle)
    );
    // The trusted key still verifies (its snapshot stands).
    let three = event("three");
    assert_eq!(deliver(&handle, &seller.good, &clock, &three).await, forwarded());
    assert_eq!(
        upstream.applied_keys(),
        [one.idempotency_key().as_str(), three.idempotency_key().as_str()]
    );
    handle.shutdown().await.unwrap();

    // An operator who expected the move pins the new URL: no alarm.
    let mut pinned = args.clone();
    pinned.jwks_uri_pins = vec![format!("{}={moved_url}", seller.agent)];
    let handle = start(&pinned, &clock).await;
    let four = event("four");
    assert_eq!(deliver(&handle, &moved, &clock, &four).await, forwarded());
    assert!(
        render(&handle).contains(&format!("{series} 0\n")),
        "{}",
        render(&handle)
    );
    handle.shutdown().await.unwrap();
}
