//! `webhooks/adagents-discovery-redirects.json` from the AdCP conformance
//! suite: every vector, twice — through the pure redirect rule, and over
//! the network against a local HTTPS server that serves the vector's
//! redirect chain (hosts resolved to loopback through the test-only
//! exception, ports added to every URL). A refused hop must never be dialed.

use crate::common::{ok, redirect, Server};
use adcp_jwks::adagents::{
    check_redirect, discover_adagents, fetch_adagents, AdagentsError, AdagentsTarget, MAX_WELL_KNOWN_HOPS,
};
use adcp_jwks::{DiscoveryTrace, SsrfPolicy};
use serde_json::Value;
use url::Url;

const FILE: &str = "webhooks/adagents-discovery-redirects.json";

fn vectors() -> Option<Vec<Value>> {
    let dir = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}"))?;
    let doc = adcp_vectors::load_json(&dir, FILE).unwrap_or_else(|e| panic!("{e}"));
    let vectors = doc["vectors"].as_array().expect("vectors[]").clone();
    assert!(!vectors.is_empty());
    Some(vectors)
}

fn target(v: &Value) -> AdagentsTarget {
    match v["target"].as_str().unwrap() {
        "well_known" => AdagentsTarget::WellKnown,
        "authoritative_location" => AdagentsTarget::AuthoritativeLocation,
        other => panic!("unknown target {other}"),
    }
}

fn hops(v: &Value) -> Vec<Url> {
    v["redirect_chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| Url::parse(h["location"].as_str().unwrap()).unwrap())
        .collect()
}

/// The pure rule: walk the chain as a fetcher would.
fn walk(v: &Value) -> Result<Url, &'static str> {
    let origin = Url::parse(v["origin_url"].as_str().unwrap()).unwrap();
    let policy = SsrfPolicy::new();
    let mut current = origin.clone();
    for (i, next) in hops(v).into_iter().enumerate() {
        check_redirect(target(v), &origin, i, &next, &policy).map_err(|r| r.reason())?;
        current = next;
    }
    Ok(current)
}

#[test]
fn every_vector_through_the_redirect_rule() {
    let Some(vectors) = vectors() else { return };
    for v in &vectors {
        let id = v["id"].as_str().unwrap();
        let expected = &v["expected"];
        match (expected["result"].as_str().unwrap(), walk(v)) {
            ("resolved", Ok(final_url)) => assert_eq!(final_url.as_str(), expected["final_url"], "{id}"),
            ("refused", Err(reason)) => assert_eq!(reason, expected["reason"], "{id}"),
            (want, got) => panic!("{id}: expected {want}, got {got:?}"),
        }
    }
    const { assert!(MAX_WELL_KNOWN_HOPS == 3) };
}

fn with_port(u: &Url, port: u16) -> Url {
    let mut u = u.clone();
    u.set_port(Some(port)).unwrap();
    u
}

fn route(u: &Url) -> String {
    format!("{}{}", u.host_str().unwrap(), u.path())
}

#[tokio::test]
async fn every_vector_over_the_network() {
    let Some(vectors) = vectors() else { return };
    let mut passed = 0;
    for v in &vectors {
        let id = v["id"].as_str().unwrap();
        let origin = Url::parse(v["origin_url"].as_str().unwrap()).unwrap();
        let chain = hops(v);
        let mut names: Vec<String> = std::iter::once(&origin)
            .chain(chain.iter())
            .map(|u| u.host_str().unwrap().to_owned())
            .collect();
        names.sort();
        names.dedup();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let s = Server::start(&refs).await;
        // Each URL of the chain answers with the next hop; the last answers 200.
        let statuses: Vec<u16> = v["redirect_chain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| u16::try_from(h["status"].as_u64().unwrap()).unwrap())
            .collect();
        let mut from = origin.clone();
        let mut routes = std::collections::HashSet::new();
        for (next, status) in chain.iter().zip(&statuses) {
            s.set(&route(&from), redirect(*status, with_port(next, s.port).as_str()));
            routes.insert(route(&from));
            from = next.clone();
        }
        // The last URL answers 200, unless it is (by host and path) one that
        // already redirects, as in the `http://` downgrade of the origin.
        if !routes.contains(&route(&from)) {
            s.set(&route(&from), ok(r#"{"authorized_agents":[]}"#));
        }

        let mut trace = DiscoveryTrace::default();
        let start = with_port(&origin, s.port);
        let got = fetch_adagents(&s.fetcher(), &start, target(v), &mut trace, 0).await;
        let expected = &v["expected"];
        match (expected["result"].as_str().unwrap(), got) {
            ("resolved", Ok(fetched)) => {
                let want = with_port(&Url::parse(expected["final_url"].as_str().unwrap()).unwrap(), s.port);
                assert_eq!(fetched.final_url, want, "{id}");
                assert_eq!(s.total_requests(), chain.len() + 1, "{id}: one request per hop");
            }
            ("refused", Err(AdagentsError::Redirect(refusal))) => {
                assert_eq!(refusal.reason(), expected["reason"], "{id}");
                // The refused hop was not dialed: requests stop at the
                // answer that named it.
                let refused_at = walk(v).map(|_| usize::MAX).unwrap_or_else(|_| {
                    (0..chain.len())
                        .find(|i| check_redirect(target(v), &origin, *i, &chain[*i], &SsrfPolicy::new()).is_err())
                        .unwrap()
                });
                assert_eq!(s.total_requests(), refused_at + 1, "{id}: the refused hop was dialed");
                // One trace step per answer received; the last names the refusal.
                assert_eq!(trace.steps.len(), refused_at + 1, "{id}");
                assert_eq!(
                    trace.failure().unwrap().outcome,
                    adcp_jwks::StepOutcome::Failed(refusal.reason()),
                    "{id}"
                );
            }
            (want, got) => panic!("{id}: expected {want}, got {got:?}"),
        }
        passed += 1;
    }
    assert_eq!(passed, vectors.len());
}

#[tokio::test]
async fn pointer_then_authoritative_location_without_redirects() {
    let s = Server::start(&["pub.example", "network.example", "www.network.example"]).await;
    let auth = s.url("network.example", "/authoritative/adagents.json");
    s.set(
        "pub.example/.well-known/adagents.json",
        ok(serde_json::json!({ "authoritative_location": auth }).to_string()),
    );
    s.set(
        "network.example/authoritative/adagents.json",
        ok(r#"{"authorized_agents":[{"url":"https://seller.example/mcp"}]}"#),
    );
    let origin = Url::parse(&s.url("pub.example", "/")).unwrap();
    let mut trace = DiscoveryTrace::default();
    let (final_url, agents) = discover_adagents(&s.fetcher(), &origin, &mut trace, 0).await.unwrap();
    assert_eq!(final_url.as_str(), auth);
    assert_eq!(agents.len(), 1);
    assert_eq!(trace.steps.len(), 2);
    // A redirect on the dereference is refused, and its target not dialed.
    s.set(
        "network.example/authoritative/adagents.json",
        redirect(301, &s.url("www.network.example", "/authoritative/adagents.json")),
    );
    let mut trace = DiscoveryTrace::default();
    let err = discover_adagents(&s.fetcher(), &origin, &mut trace, 0)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AdagentsError::Redirect(r) if r.reason() == "redirect_on_authoritative_location"),
        "{err:?}"
    );
    assert_eq!(s.host_hits("www.network.example"), 0);
    // A pointer to a pointer is refused.
    s.set(
        "network.example/authoritative/adagents.json",
        ok(serde_json::json!({ "authoritative_location": auth }).to_string()),
    );
    let mut trace = DiscoveryTrace::default();
    assert_eq!(
        discover_adagents(&s.fetcher(), &origin, &mut trace, 0)
            .await
            .unwrap_err(),
        AdagentsError::PointerChain
    );
}
