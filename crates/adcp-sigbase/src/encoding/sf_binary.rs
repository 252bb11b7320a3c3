//! Whole `sf-binary` tokens (`:…:`), for callers that hold the token with
//! its delimiters.

use super::{BinaryDecoding, BinaryEncoding, EncodingError};

/// Decodes a whole `sf-binary` token, colons included (`:AQID:`), with the
/// caller's choice of decoding. Error offsets point into `token`.
///
/// Only the delimiters are checked here; everything between them goes to the
/// strict decoder. Use this when a structured-field scanner has delimited the
/// item but left its content raw (`sfv` decodes leniently and only knows the
/// standard alphabet, so AdCP parsers take the raw token instead).
///
/// ```
/// use adcp_sigbase::encoding::{decode_sf_binary_token, BinaryEncoding, EncodingError};
///
/// assert_eq!(decode_sf_binary_token(":AQID:", BinaryEncoding::Base64Padded)?, [1, 2, 3]);
/// assert_eq!(
///     decode_sf_binary_token(":AQ-_:", BinaryEncoding::Base64Padded),
///     Err(EncodingError::WrongAlphabet { offset: 3, byte: b'-', expected: BinaryEncoding::Base64Padded }),
/// );
/// assert_eq!(decode_sf_binary_token("AQID", BinaryEncoding::Base64Padded), Err(EncodingError::MissingColons));
/// # Ok::<(), EncodingError>(())
/// ```
pub fn decode_sf_binary_token(
    token: &(impl AsRef<[u8]> + ?Sized),
    decoding: impl Into<BinaryDecoding>,
) -> Result<Vec<u8>, EncodingError> {
    let token = token.as_ref();
    let inner = match token {
        [b':', inner @ .., b':'] => inner,
        _ => return Err(EncodingError::MissingColons),
    };
    decoding.into().decode(inner).map_err(|e| e.shifted(1))
}

/// Encodes `bytes` as a whole `sf-binary`-shaped token, `:…:`, in
/// `encoding`. With [`BinaryEncoding::Base64Padded`] this is an RFC 8941
/// Byte Sequence; with [`BinaryEncoding::Base64UrlUnpadded`] it is the legacy
/// AdCP form, which is *not* valid RFC 8941.
///
/// ```
/// use adcp_sigbase::encoding::{encode_sf_binary, BinaryEncoding};
///
/// assert_eq!(encode_sf_binary(&[0xfb, 0xff], BinaryEncoding::Base64Padded), ":+/8=:");
/// assert_eq!(encode_sf_binary(&[0xfb, 0xff], BinaryEncoding::Base64UrlUnpadded), ":-_8:");
/// ```
pub fn encode_sf_binary(bytes: &[u8], encoding: BinaryEncoding) -> String {
    let mut out = String::with_capacity(encoding.encoded_len(bytes.len()).saturating_add(2));
    out.push(':');
    encoding.encode_into(bytes, &mut out);
    out.push(':');
    out
}
