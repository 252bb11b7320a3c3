//! The AdCP negative vectors about header syntax are rejected by this
//! layer, each with its own typed error.

use adcp_sigbase::digest::{ContentDigest, DigestError};
use adcp_sigbase::encoding::{BinaryDecoding, BinaryEncoding, EncodingError};
use adcp_sigbase::{Error, Message, SignatureHeader, SignatureInput, Signatures};
use adcp_vectors::VectorRequest;

/// What a profile-aware caller does with a vector's headers at step 1.
#[derive(Debug)]
enum Rejection {
    Input(Error),
    Signature(Error),
    Field(Error),
    Digest(DigestError),
}

fn step_one(relative: &str) -> Option<Result<(), Rejection>> {
    let suite = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}"))?;
    let doc = adcp_vectors::load_json(&suite, relative).unwrap();
    let req = VectorRequest::from_json(&doc["request"]).unwrap();
    let mut msg = Message::request(req.method.as_str(), req.url.as_str());
    for (name, value) in &req.headers {
        msg.push_header(name.as_str(), value.as_str());
    }
    // Binary encodings are chosen by the endpoint's profile, never guessed.
    let (sig_encoding, digest_decoding) = if relative.starts_with("webhook-signing") {
        (BinaryEncoding::Base64UrlUnpadded, BinaryDecoding::EitherCanonical)
    } else if relative.contains("profile-3.2") {
        (
            BinaryEncoding::Base64Padded,
            BinaryDecoding::Only(BinaryEncoding::Base64Padded),
        )
    } else {
        (BinaryEncoding::Base64UrlUnpadded, BinaryDecoding::EitherCanonical)
    };
    let run = || -> Result<(), Rejection> {
        let input = SignatureInput::from_message(&msg).map_err(Rejection::Input)?;
        let sigs = Signatures::from_message(&msg).map_err(Rejection::Signature)?;
        if let (Some(input), Some(sigs)) = (input, sigs) {
            input.require("sig1").map_err(Rejection::Input)?;
            sigs.decode("sig1", sig_encoding).map_err(Rejection::Signature)?;
        }
        msg.single_field("content-type").map_err(Rejection::Field)?;
        if let Some(value) = msg.combined_field("content-digest").map_err(Rejection::Field)? {
            ContentDigest::parse(&*value, digest_decoding).map_err(Rejection::Digest)?;
        }
        Ok(())
    };
    Some(run())
}

macro_rules! rejected {
    ($path:expr, $pat:pat) => {
        match step_one($path) {
            None => {}
            Some(Err($pat)) => {}
            other => panic!("{}: {:?}", $path, other),
        }
    };
}

#[test]
fn duplicate_signature_input_label() {
    for p in [
        "request-signing/negative/021-duplicate-signature-input-label.json",
        "request-signing/profile-3.2/negative/021-duplicate-signature-input-label.json",
    ] {
        rejected!(
            p,
            Rejection::Input(Error::DuplicateLabel {
                header: SignatureHeader::SignatureInput,
                ..
            })
        );
    }
}

#[test]
fn duplicate_signature_label() {
    for p in [
        "request-signing/negative/029-duplicate-signature-label.json",
        "request-signing/profile-3.2/negative/029-duplicate-signature-label.json",
    ] {
        rejected!(
            p,
            Rejection::Signature(Error::DuplicateLabel {
                header: SignatureHeader::Signature,
                ..
            })
        );
    }
}

#[test]
fn unquoted_string_parameter() {
    for p in [
        "request-signing/negative/024-unquoted-string-param.json",
        "request-signing/profile-3.2/negative/024-unquoted-string-param.json",
    ] {
        rejected!(p, Rejection::Input(Error::UnquotedStringParameter { .. }));
    }
}

#[test]
fn multi_valued_content_type() {
    for p in [
        "request-signing/negative/022-multi-valued-content-type.json",
        "request-signing/profile-3.2/negative/022-multi-valued-content-type.json",
    ] {
        rejected!(p, Rejection::Field(Error::MultiValuedField { .. }));
    }
}

#[test]
fn multi_valued_content_digest() {
    for p in [
        "request-signing/negative/023-multi-valued-content-digest.json",
        "request-signing/profile-3.2/negative/023-multi-valued-content-digest.json",
    ] {
        rejected!(p, Rejection::Digest(DigestError::DuplicateAlgorithm { .. }));
    }
}

#[test]
fn content_digest_key_case() {
    for p in [
        "request-signing/negative/030-content-digest-key-case.json",
        "request-signing/profile-3.2/negative/030-content-digest-key-case.json",
    ] {
        rejected!(p, Rejection::Digest(DigestError::Syntax { .. }));
    }
}

#[test]
fn base64url_in_a_3_2_sf_binary() {
    rejected!(
        "request-signing/profile-3.2/negative/001-base64url-sf-binary.json",
        Rejection::Signature(Error::SignatureEncoding {
            source: EncodingError::WrongAlphabet { .. },
            ..
        })
    );
}

#[test]
fn alphabet_mixing_in_a_webhook_signature() {
    rejected!(
        "webhook-signing/negative/021-base64-alphabet-mixing.json",
        Rejection::Signature(Error::SignatureEncoding {
            source: EncodingError::AlphabetMixing { .. },
            ..
        })
    );
}

#[test]
fn malformed_signature_input() {
    rejected!(
        "webhook-signing/negative/010-malformed-signature-input.json",
        Rejection::Input(Error::NotInnerList { .. })
    );
    // A bare token is a syntactically valid Dictionary member (boolean
    // true) whose label is not `sig1`: it is set aside like any extra
    // label, and what is missing is `sig1`.
    for p in [
        "request-signing/negative/011-malformed-header.json",
        "request-signing/profile-3.2/negative/011-malformed-header.json",
    ] {
        rejected!(
            p,
            Rejection::Input(Error::LabelNotFound {
                header: SignatureHeader::SignatureInput,
                ..
            })
        );
    }
    for bad in [
        &b"sig1=(\"@method\""[..],
        b"sig1=(\"@method\");created=1.5.5",
        b"sig1=(@method)",
    ] {
        assert!(
            matches!(SignatureInput::parse(bad), Err(Error::HeaderMalformed { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn positives_pass_step_one() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let mut n = 0;
    for dir in [
        "webhook-signing/positive",
        "request-signing/positive",
        "request-signing/profile-3.2/positive",
    ] {
        for path in adcp_vectors::json_files(&suite, dir) {
            let relative = path.strip_prefix(&suite).unwrap().to_string_lossy().into_owned();
            let result = step_one(&relative).unwrap();
            assert!(result.is_ok(), "{relative}: {result:?}");
            n += 1;
        }
    }
    assert!(n >= 35, "{n}");
}
