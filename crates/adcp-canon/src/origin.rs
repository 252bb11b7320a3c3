//! Origin canonicalization for eTLD+1 and key-origin comparisons.

use crate::identity::{host_port_into, Mode};
use crate::{canonicalize, CanonError, Component};

/// Canonicalizes the host of a URL, or a bare host, for origin comparison:
/// ASCII-lowercase, then IDNA A-label (UTS-46 as in [`canonicalize`]), one
/// root dot removed. The spec's `canonicalizeOrigin()`.
///
/// A value containing `://` is parsed as a URL and its host returned; any
/// other value is taken as `host[:port]` and the host returned.
///
/// ```
/// assert_eq!(adcp_canon::canonicalize_origin("https://Keys.Bücher.Example/.well-known/jwks.json")?, "keys.xn--bcher-kva.example");
/// assert_eq!(adcp_canon::canonicalize_origin("EXAMPLE.com.")?, "example.com");
/// # Ok::<(), adcp_canon::CanonError>(())
/// ```
pub fn canonicalize_origin(host_or_url: &str) -> Result<String, CanonError> {
    if host_or_url.contains("://") {
        return Ok(canonicalize(host_or_url)?.host().to_owned());
    }
    let mut out = Vec::with_capacity(host_or_url.len());
    let hp = host_port_into(
        host_or_url.as_bytes(),
        0,
        None,
        Mode::Producer,
        Component::Host,
        &mut out,
    )?;
    out.truncate(hp.host_end);
    Ok(String::from_utf8_lossy(&out).into_owned())
}
