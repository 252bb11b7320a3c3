//! `adcp-sig keygen`: a new signing key as a private JWK and a public JWKS.

use std::io::Write as _;
use std::path::Path;

use adcp_sign::{Algorithm, KeyPurpose, SoftwareSigner};

use crate::cli::{KeyAlgArg, KeyPurposeArg, KeygenArgs};
use crate::exit::Exit;

pub fn run(args: &KeygenArgs) -> Exit {
    match keygen(args) {
        Ok(()) => Exit::Ok,
        Err(e) => {
            eprintln!("adcp-sig: {e}");
            Exit::Usage
        }
    }
}

fn keygen(args: &KeygenArgs) -> Result<(), String> {
    let algorithm = match args.alg {
        KeyAlgArg::Ed25519 => Algorithm::Ed25519,
        KeyAlgArg::Es256 => Algorithm::EcdsaP256Sha256,
    };
    let purpose = match args.purpose {
        KeyPurposeArg::RequestSigning => KeyPurpose::RequestSigning,
        KeyPurposeArg::WebhookSigning => KeyPurpose::WebhookSigning,
    };
    if purpose.is_deprecated() {
        // Still valid: buyers whose verifiers refuse request-signing keys
        // on webhooks need it during 3.x (docs/signing.md).
        eprintln!(
            "adcp-sig: note: adcp_use \"webhook-signing\" is deprecated (AdCP 3.2: new signers SHOULD publish \
             \"request-signing\"), but every conformant webhook verifier must still accept it; the key cannot \
             sign requests"
        );
    }
    let signer = SoftwareSigner::generate(algorithm, args.kid.as_str())
        .map_err(|e| e.to_string())?
        .with_key_purpose(purpose);
    let private = signer.private_jwk().map_err(|e| e.to_string())?.to_json().to_string();
    let jwks = signer.jwks().map_err(|e| e.to_string())?.to_public_json().to_string();
    // Check both destinations before writing either, so a refusal leaves
    // no half-made key behind.
    for path in [&args.out_private, &args.out_jwks].into_iter().flatten() {
        if path.exists() {
            return Err(format!("{} exists; refusing to overwrite it", path.display()));
        }
    }
    let mut stdout = Vec::new();
    match &args.out_private {
        Some(path) => write_new(path, &private, true)?,
        None => stdout.push(private),
    }
    match &args.out_jwks {
        Some(path) => write_new(path, &jwks, false)?,
        None => stdout.push(jwks),
    }
    for line in stdout {
        println!("{line}");
    }
    Ok(())
}

/// Creates `path` (failing if it exists) and writes `text` and a newline;
/// a private key file is readable by its owner only.
fn write_new(path: &Path, text: &str, private: bool) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(if private { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut file = options.open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .map_err(|e| format!("{}: {e}", path.display()))
}
