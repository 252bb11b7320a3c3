//! `adcp-sig sign`: signs a webhook or request and prints it in the
//! vectors' `request` shape, ready for `adcp-sig verify --request`. With
//! `--count N` it signs N times (fresh nonce each) and prints one request
//! per line: a JSONL file for `adcp-sig verify-batch`.

use adcp_sign::{
    Body, HttpSigner, LegacyDigest, Nonce, SignError, SignOptions, SigningProfile, SoftwareSigner, UnsignedRequest,
};

use crate::cli::{CoverageArg, SignArgs, SignProfileArg};
use crate::exit::Exit;

/// Why nothing was signed: a usage or I/O problem (exit 2) or input the
/// signer refuses (exit 1, with its stable error code).
enum Failure {
    Usage(String),
    Refused(SignError),
}

impl From<SignError> for Failure {
    fn from(e: SignError) -> Self {
        Self::Refused(e)
    }
}

pub fn run(args: &SignArgs) -> Exit {
    match sign(args) {
        Ok(signed) => {
            println!("{signed}");
            Exit::Ok
        }
        Err(Failure::Usage(e)) => {
            eprintln!("adcp-sig: {e}");
            Exit::Usage
        }
        Err(Failure::Refused(e)) => {
            eprintln!("adcp-sig: sign refused: {e}");
            Exit::Rejected
        }
    }
}

fn profile(args: &SignArgs) -> Result<SigningProfile, Failure> {
    match (args.profile, args.covers_content_digest) {
        (SignProfileArg::Webhook, None) => Ok(SigningProfile::webhook_v1()),
        (SignProfileArg::Request, None) => Ok(SigningProfile::request_v3_2()),
        (SignProfileArg::RequestLegacy, coverage) => Ok(SigningProfile::request_legacy(match coverage {
            Some(CoverageArg::Forbidden) => LegacyDigest::Omit,
            Some(CoverageArg::Required | CoverageArg::Either) | None => LegacyDigest::Cover,
        })),
        (_, Some(_)) => Err(Failure::Usage(
            "--covers-content-digest applies to --profile request-legacy only".into(),
        )),
    }
}

fn sign(args: &SignArgs) -> Result<String, Failure> {
    let profile = profile(args)?;
    let key = std::fs::read(&args.key).map_err(|e| Failure::Usage(format!("{}: {e}", args.key.display())))?;
    let signer = HttpSigner::new(profile, SoftwareSigner::from_jwk_json(&key)?)?;
    let raw = match (&args.body, &args.body_file) {
        (Some(text), _) => Some(text.clone().into_bytes()),
        (None, Some(path)) => {
            Some(std::fs::read(path).map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?)
        }
        (None, None) => None,
    };
    if raw.is_none() && profile.requires_body() {
        return Err(Failure::Usage("--profile webhook needs --body or --body-file".into()));
    }
    if args.max_body_bytes == 0 {
        return Err(Failure::Usage("--max-body-bytes must be at least 1".into()));
    }
    let limits = adcp_strict_json::Limits::new(args.max_body_bytes);
    let body = raw
        .map(|raw| Body::from_json_bytes_with_limits(raw, &limits))
        .transpose()?;

    let mut options = SignOptions::new();
    if let Some(created) = args.created {
        options = options.with_created(created);
    }
    if let Some(expires) = args.expires {
        options = options.with_expires(expires);
    }
    if let Some(nonce) = &args.nonce {
        options = options.with_nonce(Nonce::parse(nonce)?);
    }

    let mut request = UnsignedRequest::new(&args.method, &args.url);
    if let Some(body) = &body {
        request = request.with_body(body).with_content_type(&args.content_type);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| Failure::Usage(e.to_string()))?;
    if args.count == 0 {
        return Err(Failure::Usage("--count must be at least 1".into()));
    }
    // Each signature draws its own nonce (none is given with --count).
    let mut out = String::new();
    for i in 0..args.count {
        if i > 0 {
            out.push('\n');
        }
        let signed = runtime.block_on(signer.sign_with(&request, &options))?;
        out.push_str(&signed.to_json().to_string());
    }
    Ok(out)
}
