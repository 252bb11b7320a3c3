//! `adcp-sig call`: the buyer side of request signing on the command
//! line. Sends one AdCP call through `adcp_request::SigningClient`: the
//! counterparty's `request_signing` capability is primed from URL (or read
//! from `--capabilities`), the call is signed as it asks, and a
//! `request_signature_required` challenge to an unsigned call is retried
//! once, signed.
//!
//! Prints the HTTP status, the signing decision and the response body
//! (`--json`: one object). Exit codes: 0 on a 2xx answer, 1 otherwise
//! (non-2xx, SSRF refusal, transport failure, capability unavailable or
//! incompatible), 2 for usage or I/O errors (nothing is sent then).

use std::time::Duration;

use adcp_request::{
    request_signing_capability, CallResponse, ClientError, Counterparty, SigningClient, SigningVersion, TargetPolicy,
    Transport,
};
use adcp_sign::SoftwareSigner;
use serde_json::{json, Value};

use crate::cli::{CallArgs, TransportArg};
use crate::exit::Exit;

/// The longest `--timeout`.
const MAX_TIMEOUT: u64 = 120;

/// Why nothing was sent (exit 2), or why the call failed (exit 1).
struct Failure {
    exit: Exit,
    code: &'static str,
    message: String,
}

impl Failure {
    fn usage(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            exit: Exit::Usage,
            code,
            message: message.into(),
        }
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        let exit = match e {
            ClientError::InvalidCall { .. } => Exit::Usage,
            _ => Exit::Rejected,
        };
        Self {
            exit,
            code: e.code(),
            message: e.to_string(),
        }
    }
}

pub fn run(args: &CallArgs) -> Exit {
    match call(args) {
        Ok(response) => {
            if args.json {
                println!("{}", response_json(&response));
            } else {
                print_text(&response);
            }
            if response.is_success() {
                Exit::Ok
            } else {
                Exit::Rejected
            }
        }
        Err(failure) => {
            eprintln!("adcp-sig: {}", failure.message);
            if args.json {
                let outcome = if failure.exit == Exit::Usage {
                    "usage_error"
                } else {
                    "error"
                };
                println!(
                    "{}",
                    json!({"outcome": outcome, "error": failure.code, "message": failure.message})
                );
            }
            failure.exit
        }
    }
}

fn call(args: &CallArgs) -> Result<CallResponse, Failure> {
    if args.timeout == 0 || args.timeout > MAX_TIMEOUT {
        return Err(Failure::usage(
            "timeout_invalid",
            format!("--timeout must be 1..={MAX_TIMEOUT}"),
        ));
    }
    let arguments = read_json(&args.body, "--body")?;
    if !arguments.is_object() {
        return Err(Failure::usage("body_invalid", "--body must hold a JSON object"));
    }
    let transport = match args.transport {
        TransportArg::Mcp => Transport::Mcp,
        TransportArg::A2a => Transport::A2a,
        TransportArg::Raw => Transport::Raw,
    };
    let mut counterparty = Counterparty::new(&args.url, transport);
    if args.legacy {
        counterparty = counterparty.with_version(SigningVersion::Legacy);
    }
    if let Some(path) = &args.capabilities {
        let document = read_json(path, "--capabilities")?;
        let capability = request_signing_capability(&document)
            .map_err(|e| Failure::usage("capabilities_invalid", format!("--capabilities: {e}")))?;
        counterparty = counterparty.with_capability(capability);
    }
    let key = std::fs::read(&args.key)
        .map_err(|e| Failure::usage("key_unreadable", format!("{}: {e}", args.key.display())))?;
    let key = SoftwareSigner::from_jwk_json(&key).map_err(|e| Failure::usage("key_invalid", format!("--key: {e}")))?;
    let policy = if args.allow_http {
        eprintln!("adcp-sig: warning: --allow-http is for local development only (plain HTTP and loopback targets)");
        TargetPolicy::default().dangerously_allow_plain_http()
    } else {
        TargetPolicy::default()
    };
    let client = SigningClient::builder(key)
        .target_policy(policy)
        .timeout(Duration::from_secs(args.timeout))
        .build()
        .map_err(|e| match e {
            ClientError::Sign(e) => Failure::usage("key_invalid", format!("--key: {e}")),
            e => Failure::from(e),
        })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::usage("runtime_unavailable", format!("cannot start the runtime: {e}")))?;
    Ok(runtime.block_on(client.call(&counterparty, &args.operation, &arguments))?)
}

/// A strict JSON file (duplicate keys refused).
fn read_json(path: &std::path::Path, flag: &str) -> Result<Value, Failure> {
    let bytes = std::fs::read(path)
        .map_err(|e| Failure::usage("file_unreadable", format!("{flag} {}: {e}", path.display())))?;
    adcp_strict_json::parse_value(&bytes, &adcp_strict_json::Limits::default())
        .map_err(|e| Failure::usage("json_invalid", format!("{flag} {}: {e}", path.display())))
}

fn print_text(response: &CallResponse) {
    let decision = response.decision();
    println!("status: {}", response.status().as_u16());
    if decision.signed {
        let digest = if decision.covers_content_digest {
            "content-digest covered"
        } else {
            "content-digest not covered"
        };
        println!(
            "signed: yes ({}; AdCP {} encoding; {digest})",
            decision.reason,
            decision.version.as_str()
        );
    } else {
        println!("signed: no ({})", decision.reason);
    }
    println!("attempts: {}", response.attempts());
    if let Some(code) = response.signature_error() {
        println!("signature error: {code}");
    }
    println!("{}", String::from_utf8_lossy(response.body()));
}

fn response_json(response: &CallResponse) -> Value {
    let decision = response.decision();
    let body = response
        .json()
        .unwrap_or_else(|| Value::String(String::from_utf8_lossy(response.body()).into_owned()));
    json!({
        "outcome": if response.is_success() { "ok" } else { "rejected" },
        "status": response.status().as_u16(),
        "signed": decision.signed,
        "reason": decision.reason.as_str(),
        "covers_content_digest": decision.covers_content_digest,
        "version": decision.version.as_str(),
        "attempts": response.attempts(),
        "signature_error": response.signature_error(),
        "body": body,
    })
}
