//! The `webhook_signing` capability block from the wiring: the produced
//! block against the 3.2 `get_adcp_capabilities` response schema, and the
//! start-up check's refusals.

use crate::support::*;
use adcp_outbox::capabilities::{check_advertised, webhook_signing_block, CapabilityError, WEBHOOK_SIGNING_PROFILE};
use adcp_outbox::{CoalescingPolicy, OutboxConfig, StaticSigners};
use adcp_sign::{Algorithm, BoxSigner, HttpSigner, Signer as _, SoftwareSigner};
use adcp_webhook::RetryPolicy;
use serde_json::{json, Value};
use std::time::Duration;

fn config(horizon_secs: u64) -> OutboxConfig {
    OutboxConfig {
        retry: RetryPolicy::new(
            Duration::from_secs(1),
            Duration::from_secs(60),
            Duration::from_secs(horizon_secs),
        )
        .unwrap(),
        ..OutboxConfig::default()
    }
}

fn two_algorithms() -> StaticSigners {
    let ecdsa = SoftwareSigner::generate(Algorithm::EcdsaP256Sha256, "seller-test-p256").unwrap();
    signers().with("tenant-b", HttpSigner::webhook(BoxSigner::new(ecdsa)).unwrap())
}

/// A minimal 3.2 response (envelope `status` included) around
/// `webhook_signing`, with a
/// `capabilities.changed` coalescence window.
fn response(block: Value, coalescence_window_seconds: u64) -> Value {
    json!({
        "status": "completed",
        "adcp": {
            "major_versions": [3],
            "idempotency": {"supported": false},
            "capability_changes": {
                "capabilities_version": "2026-12-07.1",
                "cache_ttl_seconds": 3600,
                "notifications": {
                    "supported": true,
                    "registration_task": "sync_agent_notification_configs",
                    "event_types": ["capabilities.changed"],
                    "coalescence_window_seconds": coalescence_window_seconds
                }
            }
        },
        "supported_protocols": ["media_buy"],
        "webhook_signing": block
    })
}

fn response_validator() -> Option<jsonschema::Validator> {
    schema_validator("protocol/get-adcp-capabilities-response.json")
}

#[test]
fn the_block_is_built_from_the_configured_keys_and_the_outbox_horizon() {
    let block = webhook_signing_block(&two_algorithms(), &config(172_800), true).unwrap();
    assert!(block.supported);
    assert_eq!(block.profile, WEBHOOK_SIGNING_PROFILE);
    assert_eq!(block.algorithms, ["ed25519", "ecdsa-p256-sha256"]);
    assert!(block.legacy_hmac_fallback);
    assert_eq!(block.delivery_retry_horizon_seconds, 172_800);
    assert_eq!(
        block.to_json(),
        json!({
            "supported": true,
            "profile": "adcp/webhook-signing/v1",
            "algorithms": ["ed25519", "ecdsa-p256-sha256"],
            "legacy_hmac_fallback": true,
            "delivery_retry_horizon_seconds": 172_800
        })
    );

    let one = webhook_signing_block(&signers(), &OutboxConfig::default(), false).unwrap();
    assert_eq!(one.algorithms, ["ed25519"]);
    assert_eq!(one.delivery_retry_horizon_seconds, 86_400);
}

#[test]
fn the_block_validates_against_the_capabilities_response_schema() {
    let Some(validator) = response_validator() else { return };
    for (signers, horizon, legacy) in [(signers(), 86_400, false), (two_algorithms(), 604_800, true)] {
        let block = webhook_signing_block(&signers, &config(horizon), legacy).unwrap();
        let doc = response(block.to_json(), 300);
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{} at {} ({})", e, e.instance_path(), e.schema_path()))
            .collect();
        assert!(errors.is_empty(), "{doc}: {errors:?}");
    }
    // The validator does see the block: a horizon outside the spec's bounds
    // is rejected.
    let mut bad = webhook_signing_block(&signers(), &OutboxConfig::default(), false)
        .unwrap()
        .to_json();
    bad["delivery_retry_horizon_seconds"] = json!(3600);
    assert!(!validator.is_valid(&response(bad, 300)));
}

#[test]
fn no_key_means_nothing_to_advertise() {
    let err = webhook_signing_block(&StaticSigners::new(), &OutboxConfig::default(), false).unwrap_err();
    assert_eq!(err, CapabilityError::NoSigningKey);
    assert!(err.to_string().contains("no signing key"), "{err}");
}

#[test]
fn the_wired_block_is_accepted() {
    let signers = two_algorithms();
    let config = OutboxConfig {
        coalescing: CoalescingPolicy::default().with_default("capabilities.changed", Duration::from_secs(120)),
        ..config(259_200)
    };
    let block = webhook_signing_block(&signers, &config, false).unwrap();
    check_advertised(&response(block.to_json(), 120), &signers, &config).unwrap();
    check_advertised(&response(block.to_json(), 300), &signers, &config).unwrap();
    // Advertising a subset of the configured algorithms is fine.
    let mut subset = block.to_json();
    subset["algorithms"] = json!(["ecdsa-p256-sha256"]);
    check_advertised(&response(subset, 300), &signers, &config).unwrap();
    // Without an advertised coalescence window there is nothing to bound.
    check_advertised(&json!({"webhook_signing": block.to_json()}), &signers, &config).unwrap();
}

#[test]
fn an_advertised_horizon_the_outbox_does_not_keep_is_refused() {
    let signers = signers();
    let kept = config(86_400);
    let mut block = webhook_signing_block(&signers, &kept, false).unwrap().to_json();
    block["delivery_retry_horizon_seconds"] = json!(604_800);
    let err = check_advertised(&response(block.clone(), 300), &signers, &kept).unwrap_err();
    assert_eq!(
        err,
        CapabilityError::HorizonMismatch {
            advertised: "604800".into(),
            kept: 86_400
        }
    );
    let message = err.to_string();
    assert!(
        message.contains("delivery_retry_horizon_seconds is 604800"),
        "{message}"
    );
    assert!(message.contains("86400 s"), "{message}");

    block.as_object_mut().unwrap().remove("delivery_retry_horizon_seconds");
    let err = check_advertised(&response(block, 300), &signers, &kept).unwrap_err();
    assert_eq!(err, CapabilityError::HorizonNotAdvertised { kept: 86_400 });
    assert!(
        err.to_string()
            .contains("delivery_retry_horizon_seconds is not advertised"),
        "{err}"
    );
}

#[test]
fn an_advertised_algorithm_without_a_key_is_refused() {
    let ed25519_only = signers();
    let config = OutboxConfig::default();
    let mut block = webhook_signing_block(&ed25519_only, &config, false).unwrap().to_json();
    block["algorithms"] = json!(["ed25519", "ecdsa-p256-sha256"]);
    let err = check_advertised(&response(block.clone(), 300), &ed25519_only, &config).unwrap_err();
    assert_eq!(
        err,
        CapabilityError::AlgorithmWithoutKey {
            algorithm: "\"ecdsa-p256-sha256\"".into()
        }
    );
    assert!(
        err.to_string()
            .contains("advertises \"ecdsa-p256-sha256\", but no configured signing key"),
        "{err}"
    );

    // No key at all backs nothing.
    let err = check_advertised(&response(block.clone(), 300), &StaticSigners::new(), &config).unwrap_err();
    assert!(matches!(err, CapabilityError::AlgorithmWithoutKey { .. }), "{err}");

    block["algorithms"] = json!([]);
    let err = check_advertised(&response(block, 300), &ed25519_only, &config).unwrap_err();
    assert_eq!(err, CapabilityError::AlgorithmsNotAdvertised);
}

#[test]
fn a_coalescing_window_longer_than_the_advertised_one_is_refused() {
    let signers = signers();
    let config = OutboxConfig {
        coalescing: CoalescingPolicy::default().with_default("capabilities.changed", Duration::from_millis(300_500)),
        ..OutboxConfig::default()
    };
    let block = webhook_signing_block(&signers, &config, false).unwrap().to_json();
    let err = check_advertised(&response(block.clone(), 300), &signers, &config).unwrap_err();
    assert_eq!(
        err,
        CapabilityError::CoalescingWindowTooLong {
            configured: 301,
            advertised: 300
        }
    );
    let message = err.to_string();
    assert!(
        message.contains("capabilities.changed coalescing window is 301 s"),
        "{message}"
    );
    assert!(message.contains("coalescence_window_seconds (300 s)"), "{message}");
    check_advertised(&response(block.clone(), 301), &signers, &config).unwrap();

    let mut doc = response(block, 300);
    doc["adcp"]["capability_changes"]["notifications"]["coalescence_window_seconds"] = json!(-1);
    let err = check_advertised(&doc, &signers, &config).unwrap_err();
    assert!(matches!(err, CapabilityError::CoalescenceWindowInvalid { .. }), "{err}");
}

#[test]
fn a_block_that_does_not_describe_the_outbox_is_refused() {
    let signers = signers();
    let config = OutboxConfig::default();
    let block = webhook_signing_block(&signers, &config, false).unwrap().to_json();

    let err = check_advertised(&json!({"adcp": {}}), &signers, &config).unwrap_err();
    assert_eq!(err, CapabilityError::NotAdvertised);

    let mut unsigned = block.clone();
    unsigned["supported"] = json!(false);
    let err = check_advertised(&response(unsigned, 300), &signers, &config).unwrap_err();
    assert!(err.to_string().contains("webhook_signing.supported is false"), "{err}");

    let mut other = block;
    other["profile"] = json!("adcp/webhook-signing/v2");
    let err = check_advertised(&response(other, 300), &signers, &config).unwrap_err();
    assert!(
        err.to_string()
            .contains("webhook_signing.profile is \"adcp/webhook-signing/v2\""),
        "{err}"
    );
}

/// A key whose algorithm the webhook profile does not permit.
struct HmacKey;

impl adcp_sign::Signer for HmacKey {
    fn key_id(&self) -> &str {
        "shared-secret-1"
    }

    fn algorithm(&self) -> Algorithm {
        Algorithm::HmacSha256
    }

    async fn sign(&self, _message: &[u8]) -> Result<Vec<u8>, adcp_sign::SignerError> {
        Ok(vec![0; 32])
    }
}

#[test]
fn an_hmac_key_cannot_be_wired_as_a_webhook_signer() {
    // The webhook profile's signer refuses the key before any wiring could
    // hold it, so `AlgorithmNotInProfile` in the block's builder is a
    // second line that a valid `HttpSigner` never reaches.
    let err = HttpSigner::webhook(BoxSigner::new(HmacKey)).map(|_| ()).unwrap_err();
    assert_eq!(err.code(), "alg_not_allowed", "{err}");
    assert_eq!(HmacKey.key_id(), "shared-secret-1");
}

#[test]
fn an_unsupported_flag_or_another_profile_is_refused() {
    let signers = signers();
    let kept = config(86_400);
    let block = webhook_signing_block(&signers, &kept, false).unwrap().to_json();
    let mut off = block.clone();
    off["supported"] = json!(false);
    let err = check_advertised(&response(off, 300), &signers, &kept).unwrap_err();
    assert_eq!(
        err,
        CapabilityError::NotSupported {
            advertised: "false".into()
        }
    );
    assert!(err.to_string().contains("supported is false"), "{err}");
    let mut other = block;
    other["profile"] = json!("some-other-profile");
    let err = check_advertised(&response(other, 300), &signers, &kept).unwrap_err();
    assert!(matches!(err, CapabilityError::ProfileMismatch { .. }), "{err}");
    assert!(err.to_string().contains("some-other-profile"), "{err}");
}
