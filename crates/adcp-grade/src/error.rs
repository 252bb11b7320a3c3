//! Why a grader could not run at all (a usage error, exit code 2), as
//! opposed to a failed case, which is in the [`Report`](crate::Report).

/// A grader could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GradeError {
    /// The conformance suite is missing or unreadable.
    #[error("suite: {0}")]
    Suite(String),
    /// The target URL breaks the SSRF policy (plain `http` or a
    /// non-public address without `--allow-http`) or is not a URL.
    #[error("target refused: {0}")]
    Target(String),
    /// The HTTP client could not be built.
    #[error("http client: {0}")]
    Client(String),
    /// The agent's `request_signing` capability could not be read.
    #[error("capability: {0}")]
    Capability(String),
    /// The signer under test could not be set up (key file, oracle URL).
    #[error("signer: {0}")]
    Signer(String),
    /// The published keys could not be set up.
    #[error("keys: {0}")]
    Keys(String),
    /// The sender grader's listener could not be bound (the address is in
    /// use, not local, or not permitted).
    #[error("listen: {0}")]
    Listen(String),
}
