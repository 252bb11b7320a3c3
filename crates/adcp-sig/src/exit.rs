//! The exit codes every subcommand shares.

/// Outcome of a subcommand, mapped to the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything was accepted (exit 0).
    Ok,
    /// Something was rejected or a check failed (exit 1).
    Rejected,
    /// Usage or I/O error (exit 2).
    Usage,
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        match exit {
            Exit::Ok => std::process::ExitCode::SUCCESS,
            Exit::Rejected => std::process::ExitCode::from(1),
            Exit::Usage => std::process::ExitCode::from(2),
        }
    }
}
