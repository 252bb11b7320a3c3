//! `adcp-sig activate`: the seller side of the subscriber activation
//! challenge (endpoint ownership proof). Builds the account- or
//! agent-level `webhook.challenge`, signs it with the RFC 9421 webhook
//! profile, POSTs it once through the SDK sender's SSRF-pinned client (no
//! redirects) and checks the echo.
//!
//! Exit codes: 0 activated, 1 not activated (whatever the reason: SSRF,
//! refused, wrong echo, timeout), 2 usage or I/O errors (including a
//! challenge the schema would refuse, such as a non-agent event type in an
//! agent-level challenge: nothing is sent then).
//!
//! The legacy credential (`--credential-file`) never appears in any
//! output: only its SHA-256 fingerprint is sent and printed.

use std::path::Path;
use std::time::Duration;

use adcp_sign::{HttpSigner, SoftwareSigner};
use adcp_webhook::payload::DeliveryAuth;
use adcp_webhook::{Activation, ActivationReport, DestinationPolicy, WebhookSender, MAX_ACTIVATION_TIMEOUT};
use serde_json::{json, Value};

use crate::cli::{ActivateArgs, DeliveryAuthArg};
use crate::exit::Exit;

/// Why nothing was sent: a stable code and a message for the operator.
struct Usage {
    code: &'static str,
    message: String,
}

impl Usage {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

pub fn run(args: &ActivateArgs) -> Exit {
    match activate(args) {
        Ok(report) => {
            if args.json {
                println!("{}", report_json(args, &report));
            } else {
                println!("{}", report.outcome);
            }
            if report.outcome.is_activated() {
                Exit::Ok
            } else {
                Exit::Rejected
            }
        }
        Err(usage) => {
            eprintln!("adcp-sig: {}", usage.message);
            if args.json {
                println!(
                    "{}",
                    json!({"outcome": "usage_error", "error": usage.code, "message": usage.message})
                );
            }
            Exit::Usage
        }
    }
}

fn activate(args: &ActivateArgs) -> Result<ActivationReport, Usage> {
    let activation = activation(args)?;
    let key =
        std::fs::read(&args.key).map_err(|e| Usage::new("key_unreadable", format!("{}: {e}", args.key.display())))?;
    let key = SoftwareSigner::from_jwk_json(&key).map_err(|e| Usage::new("key_invalid", format!("--key: {e}")))?;
    let signer = HttpSigner::webhook(key).map_err(|e| Usage::new("key_invalid", format!("--key: {e}")))?;
    let policy = if args.allow_http {
        eprintln!("adcp-sig: warning: --allow-http is for local development only (plain HTTP and loopback targets)");
        DestinationPolicy::default().dangerously_allow_plain_http()
    } else {
        DestinationPolicy::default()
    };
    let sender = WebhookSender::builder(signer)
        .destination_policy(policy)
        .build()
        .map_err(|e| Usage::new("client_unavailable", e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Usage::new("runtime_unavailable", format!("cannot start the runtime: {e}")))?;
    Ok(runtime.block_on(sender.activate(&activation)))
}

/// The validated activation request: scope, event types, delivery auth
/// and timeout. Everything here is refused before any key is read or any
/// connection made.
fn activation(args: &ActivateArgs) -> Result<Activation, Usage> {
    if args.timeout == 0 || Duration::from_secs(args.timeout) > MAX_ACTIVATION_TIMEOUT {
        return Err(Usage::new(
            "timeout_invalid",
            format!("--timeout must be 1..={}", MAX_ACTIVATION_TIMEOUT.as_secs()),
        ));
    }
    let delivery_auth = match (args.delivery_auth, &args.credential_file) {
        (DeliveryAuthArg::Rfc9421, None) => DeliveryAuth::rfc9421(),
        (DeliveryAuthArg::Rfc9421, Some(_)) => {
            return Err(Usage::new(
                "credential_not_allowed",
                "--credential-file applies to --delivery-auth Bearer or HMAC-SHA256 only",
            ))
        }
        (DeliveryAuthArg::Bearer | DeliveryAuthArg::HmacSha256, None) => {
            return Err(Usage::new(
                "credential_required",
                "--delivery-auth Bearer and HMAC-SHA256 need --credential-file",
            ))
        }
        (DeliveryAuthArg::Bearer, Some(path)) => DeliveryAuth::bearer(&credential(path)?),
        (DeliveryAuthArg::HmacSha256, Some(path)) => DeliveryAuth::hmac_sha256(&credential(path)?),
    };
    let event_types = args.event_types.iter().map(|t| t.trim()).filter(|t| !t.is_empty());
    let built = match (&args.account_id, args.scope) {
        (Some(account_id), None) => Activation::account(
            &args.url,
            account_id,
            &args.subscriber_id,
            &args.seller_agent_url,
            event_types,
        ),
        (None, Some(_)) => Activation::agent(&args.url, &args.subscriber_id, &args.seller_agent_url, event_types),
        // clap's `target` group makes these exactly one.
        _ => return Err(Usage::new("usage", "give exactly one of --account-id or --scope agent")),
    };
    built
        .and_then(|a| a.with_delivery_auth(delivery_auth))
        .map(|a| a.with_timeout(Duration::from_secs(args.timeout)))
        .map_err(|e| {
            Usage::new(
                e.code(),
                format!("challenge refused before sending: {e} ({})", e.code()),
            )
        })
}

/// The legacy credential: the file's content with one trailing newline
/// (`\n` or `\r\n`) removed, so `echo secret > file` and an editor's final
/// newline give the string the buyer registered. Errors name the file,
/// never its content.
fn credential(path: &Path) -> Result<String, Usage> {
    let raw =
        std::fs::read(path).map_err(|e| Usage::new("credential_unreadable", format!("{}: {e}", path.display())))?;
    let mut text = String::from_utf8(raw).map_err(|_| {
        Usage::new(
            "credential_invalid",
            format!("{}: the credential is not UTF-8", path.display()),
        )
    })?;
    if text.ends_with("\r\n") {
        text.truncate(text.len() - 2);
    } else if text.ends_with('\n') {
        text.truncate(text.len() - 1);
    }
    if text.is_empty() {
        return Err(Usage::new(
            "credential_invalid",
            format!("{}: the credential is empty", path.display()),
        ));
    }
    Ok(text)
}

/// The `--json` report: outcome code, status, reason, and the challenge
/// sent (`null` when nothing was sent). Never the credential.
fn report_json(args: &ActivateArgs, report: &ActivationReport) -> Value {
    let challenge = report
        .challenge
        .as_ref()
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or(Value::Null);
    json!({
        "outcome": report.outcome.code(),
        "activated": report.outcome.is_activated(),
        "status": report.outcome.status(),
        "reason": report.outcome.reason_code(),
        "url": args.url,
        "challenge": challenge,
        "duration_ms": u64::try_from(report.duration.as_millis()).unwrap_or(u64::MAX),
    })
}
