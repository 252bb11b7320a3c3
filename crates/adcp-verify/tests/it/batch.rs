//! Batch verification gives every request the outcome sequential
//! verification gives it: mixed algorithms, tampered signatures (which make
//! the Ed25519 batch fail and fall back to one-by-one attribution),
//! tampered bodies, expired windows and nonces repeated within the batch.

use crate::support::{message, run_now, Template};
use adcp_verify::FixedClock;
use adcp_verify::MemoryReplayStore;
use adcp_verify::Profile;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Verifier;

type Bench = Verifier<StaticKeyResolver, MemoryReplayStore, FixedClock>;

struct Request {
    url: String,
    headers: Vec<(String, String)>,
    body: String,
}

fn verifier(ed: &Template, es: &Template) -> Bench {
    let resolver = StaticKeyResolver::new()
        .with_jwks(&ed.jwks(), "https://seller.example/agent")
        .with_jwks(&es.jwks(), "https://seller.example/agent");
    Verifier::new(
        Profile::webhook_v1(),
        resolver,
        MemoryReplayStore::webhook(),
        FixedClock(ed.now),
    )
}

fn nonce(i: u8) -> [u8; 16] {
    let mut n = [0x5a; 16];
    n[0] = i;
    n
}

fn request(t: &Template, headers: Vec<(String, String)>) -> Request {
    Request {
        url: t.url.clone(),
        headers,
        body: t.body.clone(),
    }
}

/// Flips one character of the base64url signature value.
fn tamper_signature(mut headers: Vec<(String, String)>) -> Vec<(String, String)> {
    let (_, value) = headers.iter_mut().find(|(n, _)| n == "Signature").unwrap();
    let at = value.len() / 2;
    let c = if &value[at..=at] == "A" { "B" } else { "A" };
    value.replace_range(at..=at, c);
    headers
}

fn outcomes(results: Vec<Result<adcp_verify::VerifiedSigner, adcp_verify::VerifyError>>) -> Vec<String> {
    results
        .into_iter()
        .map(|r| match r {
            Ok(s) => format!("ok {} {}", s.keyid, s.agent_url),
            Err(e) => e.code_str().to_owned(),
        })
        .collect()
}

fn compare(ed: &Template, es: &Template, requests: &[Request]) -> Vec<String> {
    let msgs: Vec<_> = requests.iter().map(|r| message(&r.url, &r.headers, &r.body)).collect();
    let sequential = {
        let v = verifier(ed, es);
        outcomes(msgs.iter().map(|m| run_now(v.verify(m))).collect())
    };
    let batched = outcomes(run_now(verifier(ed, es).verify_batch(&msgs)));
    assert_eq!(batched, sequential);
    batched
}

fn templates() -> Option<(Template, Template)> {
    let suite = adcp_vectors::require_dir().unwrap()?;
    let ed = Template::load(&suite, "webhook-signing/positive/001-basic-post.json");
    let es = Template::load(&suite, "webhook-signing/positive/002-es256-post.json");
    assert_eq!(ed.now, es.now, "both vectors share one reference time");
    Some((ed, es))
}

#[test]
fn an_honest_batch_is_accepted_whole() {
    let Some((ed, es)) = templates() else { return };
    let requests: Vec<_> = (0..64).map(|i| request(&ed, ed.sign(nonce(i)))).collect();
    let got = compare(&ed, &es, &requests);
    assert!(got.iter().all(|o| o.starts_with("ok ")), "{got:?}");
}

#[test]
fn a_mixed_hostile_batch_gets_sequential_outcomes() {
    let Some((ed, es)) = templates() else { return };
    let mut requests = Vec::new();
    for i in 0..24u8 {
        let r = match i % 8 {
            // A bad signature makes the Ed25519 batch fail: attribution.
            3 => request(&ed, tamper_signature(ed.sign(nonce(i)))),
            // ES256 requests are verified one by one beside the batch.
            4 => request(&es, es.sign(nonce(i))),
            // Body changed after signing: valid signature, digest mismatch.
            5 => Request {
                body: ed.body.replacen('}', ",\"x\":1}", 1),
                ..request(&ed, ed.sign(nonce(i)))
            },
            // A nonce accepted earlier in the same batch: a replay. (A
            // nonce whose request failed before step 12 is not burned.)
            6 => request(&ed, ed.sign(nonce(i - 6))),
            _ => request(&ed, ed.sign(nonce(i))),
        };
        requests.push(r);
    }
    let got = compare(&ed, &es, &requests);
    assert_eq!(got.iter().filter(|o| o.starts_with("ok ")).count(), 24 - 3 * 3);
    assert!(got.contains(&"webhook_signature_invalid".to_owned()), "{got:?}");
    assert!(got.contains(&"webhook_signature_digest_mismatch".to_owned()), "{got:?}");
    assert!(got.contains(&"webhook_signature_replayed".to_owned()), "{got:?}");
}

#[test]
fn empty_and_single_batches() {
    let Some((ed, es)) = templates() else { return };
    assert!(run_now(verifier(&ed, &es).verify_batch(&[])).is_empty());
    let got = compare(&ed, &es, &[request(&ed, ed.sign(nonce(1)))]);
    assert!(got[0].starts_with("ok "));
}
