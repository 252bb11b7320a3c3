//! Resident set size of a process, from `/proc/PID/status` (Linux).

/// `VmRSS` of process `pid` in KiB, or `None` when it cannot be read (the
/// process ended, or this is not Linux).
#[must_use]
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_vm_rss(&status)
}

/// The `VmRSS:` line of a `/proc/PID/status` text, in KiB.
#[must_use]
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vm_rss() {
        assert_eq!(
            parse_vm_rss("Name:\tx\nVmRSS:\t   12345 kB\nVmData: 1 kB\n"),
            Some(12345)
        );
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
    }

    #[test]
    fn reads_own_rss() {
        if cfg!(target_os = "linux") {
            assert!(rss_kib(std::process::id()).is_some_and(|kb| kb > 0));
        }
    }
}
