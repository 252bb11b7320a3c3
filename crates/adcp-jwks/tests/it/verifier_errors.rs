//! The verifier sees typed discovery results: a webhook signed with
//! `adcp-sign`, verified by `adcp-verify` over an `HttpsKeyResolver` talking
//! to a local HTTPS server. Signed (JWS) revocation lists, revoked and
//! stale keys, unknown kids, broken chains and publisher pins each end in
//! their spec code.

use crate::common::{ok, Resp, Server};
use adcp_jwks::{HttpsKeyResolver, PublisherPin};
use adcp_sigbase::Message;
use adcp_sign::{Algorithm, FixedClock, HttpSigner, SoftwareSigner, WebhookEvent};
use adcp_verify::FixedClock as VerifyClock;
use adcp_verify::MemoryReplayStore;
use adcp_verify::Profile;
use adcp_verify::Verifier;
use adcp_verify::{KeyResolver, RevocationStatus};
use base64::Engine as _;
use serde_json::json;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

const T0: i64 = 1_776_520_800; // 2026-04-18T14:00:00Z

fn rfc3339(t: i64) -> String {
    let s = t - T0;
    format!("2026-04-18T{:02}:{:02}:{:02}Z", 14 + s / 3600, s % 3600 / 60, s % 60)
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A flattened JWS of the revocation list, signed by `signer`, issued by
/// the origin of the seller agent on `s`, of the revocation-list `typ`.
fn signed_list(s: &Server, signer: &SoftwareSigner, kid: &str, next_update: i64, revoked: &[&str]) -> Vec<u8> {
    let issuer = s.url("seller.example", "");
    signed_list_as(signer, kid, &issuer, "adcp-gov-revocation+jws", next_update, revoked)
}

/// As [`signed_list`], with the given `issuer` and protected-header `typ`.
fn signed_list_as(
    signer: &SoftwareSigner,
    kid: &str,
    issuer: &str,
    typ: &str,
    next_update: i64,
    revoked: &[&str],
) -> Vec<u8> {
    let payload = json!({"version": 1, "issuer": issuer, "updated": rfc3339(T0),
        "next_update": rfc3339(next_update), "revoked_kids": revoked, "revoked_jtis": []});
    let protected = b64(json!({"alg": "EdDSA", "kid": kid, "typ": typ}).to_string().as_bytes());
    let payload = b64(payload.to_string().as_bytes());
    let key = signer.private_jwk().unwrap().signing_key().unwrap();
    let sig = key.sign(format!("{protected}.{payload}").as_bytes()).unwrap();
    json!({"protected": protected, "payload": payload, "signature": b64(sig.as_bytes())})
        .to_string()
        .into_bytes()
}

struct Fx {
    s: Server,
    agent: String,
    signer: SoftwareSigner,
    clock: Arc<AtomicI64>,
}

async fn fx() -> Fx {
    let s = Server::start(&["seller.example", "keys.example"]).await;
    let agent = s.url("seller.example", "/mcp");
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "k1").unwrap();
    s.set(
        "/.well-known/brand.json",
        ok(
            json!({"agents": [{"url": agent, "type": "sales", "jwks_uri": s.url("keys.example", "/jwks.json")}]})
                .to_string(),
        ),
    );
    s.set(
        "/jwks.json",
        ok(crate::common::jwks(vec![signer.public_jwk().unwrap().to_public_json()])),
    );
    s.set("/revocations.json", ok(signed_list(&s, &signer, "k1", T0 + 60, &[])));
    Fx {
        s,
        agent,
        signer,
        clock: Arc::new(AtomicI64::new(T0)),
    }
}

impl Fx {
    fn resolver(&self, pin: Option<PublisherPin>) -> HttpsKeyResolver {
        let clock = self.clock.clone();
        let mut b = HttpsKeyResolver::builder(self.agent.clone())
            .fetch_config(self.s.fetch_config())
            .revocation_list_url(self.s.url("seller.example", "/revocations.json"))
            .clock(Arc::new(move || clock.load(Ordering::SeqCst)));
        if let Some(pin) = pin {
            b = b.publisher_pin(pin);
        }
        b.build().unwrap()
    }

    /// Signs a webhook with `signer` at `now` and verifies it through
    /// `resolver`; the verifier's error code, or "ok".
    async fn deliver(&self, resolver: &HttpsKeyResolver, signer: &SoftwareSigner, now: i64) -> String {
        self.clock.store(now, Ordering::SeqCst);
        let url = "https://buyer.example/webhooks/adcp";
        let event = WebhookEvent::new(&json!({"task_id": "t1", "status": "completed"})).unwrap();
        let signed = HttpSigner::webhook(signer)
            .unwrap()
            .with_clock(FixedClock(now))
            .sign_webhook(url, &event)
            .await
            .unwrap();
        let target = adcp_canon::canonicalize_received(signed.url()).unwrap();
        let mut msg = Message::request(signed.method(), signed.url()).with_header("Host", target.authority());
        for (name, value) in signed.headers() {
            msg.push_header(*name, value.as_str());
        }
        let body = signed.body().unwrap().as_bytes().to_vec();
        let msg = msg.with_body(&body);
        let verifier = Verifier::new(
            Profile::webhook_v1(),
            resolver.clone(),
            MemoryReplayStore::webhook(),
            VerifyClock(now),
        );
        match verifier.verify(&msg).await {
            Ok(v) => {
                assert_eq!(v.agent_url, self.agent, "identity is the agents[] entry");
                "ok".into()
            }
            Err(e) => e.code_str().to_string(),
        }
    }
}

#[tokio::test]
async fn signed_revocation_list_current_revoked_and_stale() {
    let f = fx().await;
    let r = f.resolver(None);
    assert_eq!(f.deliver(&r, &f.signer, T0).await, "ok");

    // The operator revokes k1 in a newly signed list; seen at the next poll.
    f.s.set(
        "/revocations.json",
        ok(signed_list(&f.s, &f.signer, "k1", T0 + 120, &["k1"])),
    );
    assert_eq!(f.deliver(&r, &f.signer, T0 + 61).await, "webhook_signature_key_revoked");

    // A fresh resolver, the list endpoint failing after one good poll:
    // accepted until next_update + 4 × interval, then stale.
    let f = fx().await;
    let r = f.resolver(None);
    assert_eq!(f.deliver(&r, &f.signer, T0).await, "ok");
    f.s.set(
        "/revocations.json",
        Resp {
            status: 503,
            ..ok("{}")
        },
    );
    assert_eq!(f.deliver(&r, &f.signer, T0 + 250).await, "ok");
    assert_eq!(
        f.deliver(&r, &f.signer, T0 + 301).await,
        "webhook_signature_revocation_stale"
    );
}

#[tokio::test]
async fn forged_or_unsigned_lists_are_never_trusted() {
    // Signed by a key outside the JWKS, a tampered payload, and an unsigned
    // list: none is accepted, so no list was ever fetched → stale.
    let f = fx().await;
    let outsider = SoftwareSigner::generate(Algorithm::Ed25519, "k1").unwrap();
    let mut tampered: serde_json::Value =
        serde_json::from_slice(&signed_list(&f.s, &f.signer, "k1", T0 + 60, &["k1"])).unwrap();
    tampered["payload"] = b64(json!({"next_update": rfc3339(T0 + 60), "revoked_kids": []})
        .to_string()
        .as_bytes())
    .into();
    let unsigned = json!({"next_update": rfc3339(T0 + 60), "revoked_kids": []})
        .to_string()
        .into_bytes();
    for body in [
        signed_list(&f.s, &outsider, "k1", T0 + 60, &[]),
        tampered.to_string().into_bytes(),
        unsigned,
    ] {
        f.s.set("/revocations.json", ok(body));
        let r = f.resolver(None);
        let key = r.resolve("k1").await.unwrap().unwrap();
        assert_eq!(r.revocation_status(&key, T0).await.unwrap(), RevocationStatus::Stale);
        assert_eq!(f.deliver(&r, &f.signer, T0).await, "webhook_signature_revocation_stale");
    }
}

#[tokio::test]
async fn unknown_kid_and_broken_chains() {
    let f = fx().await;
    let r = f.resolver(None);
    let stranger = SoftwareSigner::generate(Algorithm::Ed25519, "k-unknown").unwrap();
    assert_eq!(f.deliver(&r, &stranger, T0).await, "webhook_signature_key_unknown");

    // agents[].url not byte-equal: the key cannot be tied to an agent entry.
    let f = fx().await;
    f.s.set(
        "/.well-known/brand.json",
        ok(json!({"agents": [{"url": format!("{}/", f.agent)}]}).to_string()),
    );
    assert_eq!(
        f.deliver(&f.resolver(None), &f.signer, T0).await,
        "webhook_signature_jwks_untrusted"
    );

    // brand.json down: transient.
    let f = fx().await;
    f.s.set(
        "/.well-known/brand.json",
        Resp {
            status: 503,
            ..ok("{}")
        },
    );
    assert_eq!(
        f.deliver(&f.resolver(None), &f.signer, T0).await,
        "webhook_signature_jwks_unavailable"
    );

    // A JWKS that reuses a kid across purposes: that kid is refused at
    // step 8 (terminal, whichever entry comes first), not the whole JWKS
    // as "unavailable" (retryable though nothing would change); another
    // kid of the same JWKS still verifies, and the list (signed by k2)
    // still counts.
    let other = SoftwareSigner::generate(Algorithm::Ed25519, "k2").unwrap();
    let mut a = SoftwareSigner::generate(Algorithm::Ed25519, "k1")
        .unwrap()
        .public_jwk()
        .unwrap()
        .to_public_json();
    a["adcp_use"] = "governance-signing".into();
    for first in [true, false] {
        let f = fx().await;
        let b = f.signer.public_jwk().unwrap().to_public_json();
        let c = other.public_jwk().unwrap().to_public_json();
        let keys = if first {
            vec![a.clone(), c, b]
        } else {
            vec![b, c, a.clone()]
        };
        f.s.set("/jwks.json", ok(crate::common::jwks(keys)));
        f.s.set("/revocations.json", ok(signed_list(&f.s, &other, "k2", T0 + 60, &[])));
        let r = f.resolver(None);
        assert_eq!(
            f.deliver(&r, &f.signer, T0).await,
            "webhook_signature_key_purpose_invalid"
        );
        assert_eq!(f.deliver(&r, &other, T0).await, "ok");
    }
}

#[tokio::test]
async fn publisher_pin_is_authoritative_for_sell_side_webhooks() {
    let f = fx().await;
    let pinned = SoftwareSigner::generate(Algorithm::Ed25519, "pinned-1").unwrap();
    // The pinned key signs the list too (the list is verified with the
    // keys in force for this agent).
    f.s.set(
        "/revocations.json",
        ok(signed_list(&f.s, &pinned, "pinned-1", T0 + 60, &[])),
    );
    let pin = PublisherPin::from_keys(
        &[pinned.public_jwk().unwrap().to_public_json()],
        "https://pub.example/.well-known/adagents.json",
    )
    .unwrap();
    let r = f.resolver(Some(pin));
    assert_eq!(f.deliver(&r, &pinned, T0).await, "ok");
    // k1 is in the operator's JWKS but not in the pin: unknown.
    assert_eq!(f.deliver(&r, &f.signer, T0 + 31).await, "webhook_signature_key_unknown");
    assert_eq!(
        f.s.hits("/jwks.json"),
        0,
        "the operator JWKS is not the key source under a pin"
    );
}

/// A publisher pin whose `signing_keys[]` share a `kid` (the pin is a key
/// set like a JWKS: `kid`s must not collide) is still a pin: the colliding
/// kid is refused at step 8 in either order, another pinned kid verifies.
#[tokio::test]
async fn publisher_pin_with_a_colliding_kid() {
    let pinned = SoftwareSigner::generate(Algorithm::Ed25519, "pinned-1").unwrap();
    let twin = SoftwareSigner::generate(Algorithm::Ed25519, "pinned-1").unwrap();
    let second = SoftwareSigner::generate(Algorithm::Ed25519, "pinned-2").unwrap();
    let jwk = |s: &SoftwareSigner| s.public_jwk().unwrap().to_public_json();
    for keys in [
        [jwk(&pinned), jwk(&second), jwk(&twin)],
        [jwk(&twin), jwk(&second), jwk(&pinned)],
    ] {
        let f = fx().await;
        f.s.set(
            "/revocations.json",
            ok(signed_list(&f.s, &second, "pinned-2", T0 + 60, &[])),
        );
        let pin = PublisherPin::from_keys(&keys, "https://pub.example/.well-known/adagents.json").unwrap();
        let r = f.resolver(Some(pin));
        assert_eq!(
            f.deliver(&r, &pinned, T0).await,
            "webhook_signature_key_purpose_invalid"
        );
        assert_eq!(f.deliver(&r, &twin, T0).await, "webhook_signature_key_purpose_invalid");
        assert_eq!(f.deliver(&r, &second, T0).await, "ok");
    }
}

/// The list must be a JWS of `typ` `adcp-gov-revocation+jws` (the
/// governance list's signing semantics, which the transport list
/// inherits) issued by the agent's origin. A list failing either, even
/// validly signed by a key of the JWKS, is not a refresh: alone it leaves
/// the status stale; after a good list it neither revokes nor extends the
/// grace.
#[tokio::test]
async fn signed_list_with_wrong_typ_or_issuer_is_not_a_refresh() {
    let origin = |f: &Fx| f.s.url("seller.example", "");
    type Bad = fn(&Fx, &str, &[&str], i64) -> Vec<u8>;
    let wrong: [(&str, Bad); 5] = [
        ("typ JWT", |f, o, r, n| signed_list_as(&f.signer, "k1", o, "JWT", n, r)),
        ("governance token typ", |f, o, r, n| {
            signed_list_as(&f.signer, "k1", o, "adcp-gov+jws", n, r)
        }),
        ("no typ", |f, o, r, n| signed_list_as(&f.signer, "k1", o, "", n, r)),
        ("issuer of another origin", |f, _, r, n| {
            signed_list_as(
                &f.signer,
                "k1",
                "https://other.example",
                "adcp-gov-revocation+jws",
                n,
                r,
            )
        }),
        ("issuer without the agent's port", |f, _, r, n| {
            signed_list_as(
                &f.signer,
                "k1",
                "https://seller.example",
                "adcp-gov-revocation+jws",
                n,
                r,
            )
        }),
    ];
    for (why, bad) in wrong {
        let f = fx().await;
        let o = origin(&f);
        f.s.set("/revocations.json", ok(bad(&f, &o, &[], T0 + 60)));
        assert_eq!(
            f.deliver(&f.resolver(None), &f.signer, T0).await,
            "webhook_signature_revocation_stale",
            "{why}"
        );

        let f = fx().await;
        let o = origin(&f);
        let r = f.resolver(None);
        assert_eq!(f.deliver(&r, &f.signer, T0).await, "ok", "{why}");
        f.s.set("/revocations.json", ok(bad(&f, &o, &["k1"], T0 + 120)));
        assert_eq!(f.deliver(&r, &f.signer, T0 + 61).await, "ok", "{why}: not revoked");
        assert_eq!(
            f.deliver(&r, &f.signer, T0 + 301).await,
            "webhook_signature_revocation_stale",
            "{why}"
        );
    }
    // The media type is case-insensitive and may carry `application/`.
    let f = fx().await;
    let o = origin(&f);
    let typ = "application/ADCP-gov-revocation+JWS";
    f.s.set(
        "/revocations.json",
        ok(signed_list_as(&f.signer, "k1", &o, typ, T0 + 60, &["k1"])),
    );
    assert_eq!(
        f.deliver(&f.resolver(None), &f.signer, T0).await,
        "webhook_signature_key_revoked"
    );
}
