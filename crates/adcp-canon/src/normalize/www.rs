//! Rule 9: which hosts are candidates for `www.` removal.

use super::host_pattern::is_ip_literal;

/// For `www.<rest>`, returns `<rest>` when removing the label leaves a
/// plausible site name: at least two labels, and a last label that is not
/// all digits or `0x...` (so a domain never turns into an IPv4 address).
pub(crate) fn strip_candidate(host: &str) -> Option<&str> {
    let rest = host.strip_prefix("www.")?;
    let trimmed = rest.strip_suffix('.').unwrap_or(rest);
    let (head, last) = trimmed.rsplit_once('.')?;
    if head.is_empty() || head.starts_with('.') || last.is_empty() || is_ip_literal(rest) {
        return None;
    }
    Some(rest)
}
