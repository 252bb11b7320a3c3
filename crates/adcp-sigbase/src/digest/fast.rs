//! The form every signer emits, `sha-256=:VALUE:` (or `sha-512`), read
//! without the general Dictionary parser.
//!
//! Only a success is taken from here: anything else — other keys, several
//! members, parameters, whitespace, a value that does not decode or has the
//! wrong length — goes to the full parser, which then produces exactly the
//! result (and error) it always did. A property test keeps the two equal.

use super::{ContentDigest, DigestAlgorithm, DigestMember};
use crate::encoding::BinaryDecoding;

/// `Some` only when `input` is one known-algorithm member whose value
/// decodes, under `decoding`, to a digest of the algorithm's length.
pub(super) fn single_member(input: &[u8], decoding: BinaryDecoding) -> Option<ContentDigest> {
    let algorithm = if input.starts_with(b"sha-256=:") {
        DigestAlgorithm::Sha256
    } else if input.starts_with(b"sha-512=:") {
        DigestAlgorithm::Sha512
    } else {
        return None;
    };
    let token = input.get(9..)?.strip_suffix(b":")?;
    // The strict decoders reject every byte outside the Base64 alphabets
    // (a `:` included), so a decoded token is exactly one byte sequence.
    let mut value = Vec::with_capacity(token.len().div_ceil(4) * 3);
    decoding.decode_into(token, &mut value).ok()?;
    if value.len() != algorithm.output_len() {
        return None;
    }
    Some(ContentDigest {
        members: smallvec::smallvec![DigestMember {
            key: std::borrow::Cow::Borrowed(algorithm.key()),
            algorithm: Some(algorithm),
            value,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::super::ContentDigest;
    use crate::encoding::{BinaryDecoding, BinaryEncoding};
    use proptest::prelude::*;

    const DECODINGS: [BinaryDecoding; 3] = [
        BinaryDecoding::Only(BinaryEncoding::Base64Padded),
        BinaryDecoding::Only(BinaryEncoding::Base64UrlUnpadded),
        BinaryDecoding::EitherCanonical,
    ];

    /// Values near the fast form: real digests in both spellings, and
    /// tokens with stray characters, wrong lengths and odd suffixes.
    fn field() -> impl Strategy<Value = String> {
        let prefix = prop::sample::select(vec![
            "sha-256=:",
            "sha-512=:",
            "SHA-256=:",
            "md5=:",
            "sha-256=",
            " sha-256=:",
            "",
        ]);
        let encoded = (prop::collection::vec(any::<u8>(), 0..70), any::<bool>()).prop_map(|(bytes, url)| {
            let encoding = if url {
                BinaryEncoding::Base64UrlUnpadded
            } else {
                BinaryEncoding::Base64Padded
            };
            encoding.encode(&bytes)
        });
        let noisy = "[A-Za-z0-9+/=_:, ;-]{0,90}";
        let token = prop_oneof![encoded, noisy.prop_map(String::from)];
        let suffix = prop::sample::select(vec![":", "", ": ", ":;a=1", ":, sha-512=:AA==:", "::", ":, md5=:AA==:"]);
        (prefix, token, suffix).prop_map(|(p, t, s)| format!("{p}{t}{s}"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]
        #[test]
        fn fast_path_agrees_with_the_dictionary_parser(field in field(), which in 0usize..3) {
            let decoding = DECODINGS[which];
            let full = ContentDigest::parse_dictionary(field.as_bytes(), decoding);
            prop_assert_eq!(ContentDigest::parse(&field, decoding), full.clone());
            if let Some(fast) = super::single_member(field.as_bytes(), decoding) {
                prop_assert_eq!(Ok(fast), full);
            }
        }
    }

    #[test]
    fn the_signer_form_takes_the_fast_path() {
        let body = b"{}";
        for encoding in [BinaryEncoding::Base64Padded, BinaryEncoding::Base64UrlUnpadded] {
            let field = ContentDigest::compute(body, &[super::DigestAlgorithm::Sha256], encoding);
            assert!(
                super::single_member(field.as_bytes(), encoding.into()).is_some(),
                "{field}"
            );
        }
    }
}
