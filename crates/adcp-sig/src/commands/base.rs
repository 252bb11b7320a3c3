//! `adcp-sig base`: the RFC 9421 signature base this library computes.

use crate::cli::BaseArgs;
use crate::exit::Exit;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use adcp_vectors::VectorRequest;
use serde_json::json;

/// Why no base could be printed: a usage/I-O problem (exit 2) or a request
/// the library rejects (exit 1).
enum Failure {
    Usage(String),
    Rejected(String),
}

pub fn run(args: &BaseArgs) -> Exit {
    let (exit, line) = match compute(args) {
        Ok(base) => (
            Exit::Ok,
            if args.json {
                json!({ "signature_base": base }).to_string()
            } else {
                base
            },
        ),
        Err(Failure::Usage(e)) => {
            eprintln!("adcp-sig: {e}");
            return Exit::Usage;
        }
        Err(Failure::Rejected(e)) => {
            if args.json {
                (Exit::Rejected, json!({ "error": e }).to_string())
            } else {
                eprintln!("adcp-sig: {e}");
                return Exit::Rejected;
            }
        }
    };
    println!("{line}");
    exit
}

fn compute(args: &BaseArgs) -> Result<String, Failure> {
    let text = std::fs::read_to_string(&args.request)
        .map_err(|e| Failure::Usage(format!("{}: {e}", args.request.display())))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Failure::Usage(format!("{}: {e}", args.request.display())))?;
    let request = if doc.get("request").is_some() {
        &doc["request"]
    } else {
        &doc
    };
    let req = VectorRequest::from_json(request).map_err(Failure::Usage)?;

    let mut msg = Message::request(req.method.as_str(), req.url.as_str());
    for (name, value) in &req.headers {
        msg.push_header(name.as_str(), value.as_str());
    }
    if let Some(body) = &req.body {
        msg = msg.with_body(body.as_bytes());
    }
    let target = args.target_uri.as_deref().unwrap_or(&req.url);
    let canonical = adcp_canon::canonicalize(target).map_err(|e| Failure::Rejected(format!("target URI: {e}")))?;
    let target_uri = if args.target_uri.is_some() {
        target
    } else {
        canonical.as_str()
    };
    let input = SignatureInput::from_message_for(&msg, &args.label)
        .map_err(|e| Failure::Rejected(e.to_string()))?
        .ok_or_else(|| Failure::Rejected("request has no Signature-Input header".into()))?;
    let params = input
        .require(&args.label)
        .map_err(|e| Failure::Rejected(e.to_string()))?;
    let opts = BaseOptions {
        target_uri: Some(target_uri),
        authority: Some(canonical.authority()),
        ..BaseOptions::default()
    };
    let base = signature_base(&msg, params, &opts).map_err(|e| Failure::Rejected(e.to_string()))?;
    Ok(base.to_str_lossy().into_owned())
}
