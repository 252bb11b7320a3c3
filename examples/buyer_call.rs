//! A buyer calling a seller with signed requests.
//!
//! ```text
//! cargo run -p adcp-examples --example buyer_call
//! ```
//!
//! Starts a seller on loopback (`demo/request_seller.rs`: an MCP endpoint
//! whose `get_adcp_capabilities` advertises `request_signing` with
//! `create_media_buy` in `required_for`, behind the seller layer
//! `adcp_request::RequestVerifierLayer`), then uses
//! `adcp_request::SigningClient` to call `get_products` and
//! `create_media_buy`. The client primes the seller's capability once,
//! signs what it says (the required `create_media_buy` above all), and
//! prints each call's status and signing decision. Exits 0 only when the
//! client primed once, the required call was signed and verified, and
//! every call was accepted. Plain HTTP to loopback is allowed only because
//! the example opts in; production clients use the default policy (public
//! HTTPS only).

mod demo;

use adcp_request::{Counterparty, SigningClient, SigningReason, TargetPolicy};
use demo::request_seller::{request_seller, BUYER_AGENT_URL};
use demo::{expect, Outcome};
use serde_json::json;
use std::sync::atomic::Ordering;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Outcome {
    // The seller knows the buyer's public keys (from the buyer's
    // brand.json agents[].jwks_uri in real life).
    let seller = request_seller(&demo::buyer_key()?.jwks()?.to_public_json()).await?;

    // Once, at start-up: the buyer's signing client.
    let client = SigningClient::builder(demo::buyer_key()?)
        .target_policy(TargetPolicy::default().dangerously_allow_plain_http())
        .build()?;
    let counterparty = Counterparty::mcp(format!("{}/mcp", seller.base));

    let calls = [
        ("get_products", json!({"brief": "CTV prime time, US, Q3"})),
        (
            "create_media_buy",
            json!({
                "idempotency_key": "5f0c6a9e-buyer-call-demo-0001",
                "product_id": "ctv_prime",
                "budget": {"total": 50000, "currency": "USD"},
            }),
        ),
    ];
    let mut accepted = 0;
    let mut required_signed = false;
    for (operation, arguments) in &calls {
        let response = client.call(&counterparty, operation, arguments).await?;
        let decision = response.decision();
        println!(
            "{operation} -> {} signed={} ({}) result={}",
            response.status().as_u16(),
            decision.signed,
            decision.reason,
            response.result().unwrap_or_default()
        );
        accepted += usize::from(response.is_success());
        if *operation == "create_media_buy" {
            required_signed = decision.signed && decision.reason == SigningReason::RequiredFor;
        }
    }

    let primings = seller.primings.load(Ordering::SeqCst);
    println!("get_adcp_capabilities primed {primings} time(s)");
    expect(primings == 1, "the client primed the capability once")?;
    expect(required_signed, "create_media_buy signed because it is required")?;
    expect(accepted == calls.len(), "every call accepted")?;
    let verified = seller
        .accepted
        .lock()
        .map(|a| {
            a.iter()
                .any(|c| c.operation == "create_media_buy" && c.signer.as_deref() == Some(BUYER_AGENT_URL))
        })
        .unwrap_or(false);
    expect(verified, "the seller verified create_media_buy as the buyer agent")?;
    println!("buyer_call: ok");
    Ok(())
}
