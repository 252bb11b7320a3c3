//! `Content-Digest` parsing and strict Base64: no panics on any input; an
//! accepted field re-serializes to one that parses to the same members, in
//! either encoding; every value a strict decoder accepts is the one spelling
//! of its bytes.
#![no_main]
#![forbid(unsafe_code)]

use adcp_sigbase::digest::{ContentDigest, DigestPolicy, MAX_FIELD_LEN};
use adcp_sigbase::encoding::{BinaryDecoding, BinaryEncoding};
use libfuzzer_sys::fuzz_target;

const ENCODINGS: [BinaryEncoding; 2] = [BinaryEncoding::Base64Padded, BinaryEncoding::Base64UrlUnpadded];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, field)) = data.split_first() else {
        return;
    };
    let decoding = match selector % 3 {
        0 => BinaryDecoding::Only(BinaryEncoding::Base64Padded),
        1 => BinaryDecoding::Only(BinaryEncoding::Base64UrlUnpadded),
        _ => BinaryDecoding::EitherCanonical,
    };

    if let Ok(parsed) = ContentDigest::parse(field, decoding) {
        for (i, m) in parsed.members().iter().enumerate() {
            assert!(
                parsed.members()[..i].iter().all(|p| p.key() != m.key()),
                "duplicate key kept"
            );
            if let Some(alg) = m.algorithm() {
                assert_eq!(m.value().len(), alg.output_len());
            }
        }
        for encoding in ENCODINGS {
            let text = parsed.serialize(encoding);
            if text.len() <= MAX_FIELD_LEN {
                let again = ContentDigest::parse(&text, encoding).expect("serialized field must parse");
                assert_eq!(again, parsed);
            }
        }
        let _ = parsed.verify(field, &DigestPolicy::default());
    }

    for encoding in ENCODINGS {
        if let Ok(bytes) = encoding.decode(field) {
            assert_eq!(
                encoding.encode(&bytes).as_bytes(),
                field,
                "non-canonical value accepted"
            );
        }
    }
    if let Ok(bytes) = BinaryDecoding::EitherCanonical.decode(field) {
        assert!(ENCODINGS.iter().any(|e| e.encode(&bytes).as_bytes() == field));
    }
});
