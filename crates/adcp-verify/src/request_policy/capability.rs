//! The `request_signing` capability block a verifier advertises, and how it
//! classifies a resolved request.

use super::capability_error::CapabilityError;
use super::names::{is_operation_name, is_protocol_method_name};
use super::resolve::ResolvedRequest;
use crate::profile::{DigestCoverage, Profile};
use std::collections::BTreeSet;

/// How the capability treats one request, strongest list first
/// (`required_for > warn_for > supported_for`, the spec's precedence).
///
/// The derived order is that precedence: `Unlisted < Supported < Warn <
/// Required`, so the mode of a request matched by both namespaces is the
/// [`Ord::max`] of the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// In no list (or signing unsupported): a present signature is still
    /// verified on its merits; an unsigned request is not gated.
    Unlisted,
    /// `supported_for` / `protocol_methods_supported_for`: same behaviour
    /// as [`Mode::Unlisted`]; the listing tells signers they should sign.
    Supported,
    /// `warn_for` / `protocol_methods_warn_for`: shadow mode. Failures are
    /// recorded, establish no signer identity, and the request proceeds
    /// only under an independent valid credential.
    Warn,
    /// `required_for` / `protocol_methods_required_for`: an unsigned
    /// request without another valid credential is rejected with
    /// `request_signature_required`.
    Required,
}

impl Mode {
    /// The operation-list member this mode comes from (`required_for`,
    /// `warn_for`, `supported_for`), `None` for [`Mode::Unlisted`].
    pub fn list_name(self) -> Option<&'static str> {
        match self {
            Mode::Unlisted => None,
            Mode::Supported => Some("supported_for"),
            Mode::Warn => Some("warn_for"),
            Mode::Required => Some("required_for"),
        }
    }
}

/// The six lists of the block, in the order they are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SigningList {
    /// `required_for`.
    Required,
    /// `warn_for`.
    Warn,
    /// `supported_for`.
    Supported,
    /// `protocol_methods_required_for`.
    MethodsRequired,
    /// `protocol_methods_warn_for`.
    MethodsWarn,
    /// `protocol_methods_supported_for`.
    MethodsSupported,
}

impl SigningList {
    pub(crate) const ALL: [SigningList; 6] = [
        SigningList::Required,
        SigningList::Warn,
        SigningList::Supported,
        SigningList::MethodsRequired,
        SigningList::MethodsWarn,
        SigningList::MethodsSupported,
    ];

    /// The JSON member name.
    pub(crate) const fn field(self) -> &'static str {
        match self {
            SigningList::Required => "required_for",
            SigningList::Warn => "warn_for",
            SigningList::Supported => "supported_for",
            SigningList::MethodsRequired => "protocol_methods_required_for",
            SigningList::MethodsWarn => "protocol_methods_warn_for",
            SigningList::MethodsSupported => "protocol_methods_supported_for",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }

    const fn is_protocol_methods(self) -> bool {
        matches!(
            self,
            SigningList::MethodsRequired | SigningList::MethodsWarn | SigningList::MethodsSupported
        )
    }

    /// Checks one entry against the list's namespace.
    fn check(self, name: &str) -> Result<(), CapabilityError> {
        let field = self.field();
        let (valid, other_namespace) = if self.is_protocol_methods() {
            (
                is_protocol_method_name(name),
                is_operation_name(name) || name == "tools/call",
            )
        } else {
            (is_operation_name(name), name.contains('/'))
        };
        match (valid, other_namespace) {
            (true, _) => Ok(()),
            (false, true) => Err(CapabilityError::NamespaceViolation {
                field,
                name: name.to_owned(),
            }),
            (false, false) => Err(CapabilityError::InvalidName {
                field,
                name: name.to_owned(),
            }),
        }
    }
}

/// A verifier's `request_signing` capability block: whether it verifies
/// signatures, its `covers_content_digest` policy, and the operation and
/// protocol-method lists that decide, per request, whether a signature is
/// required, shadowed or merely supported.
///
/// Built from JSON ([`VerifierCapability::from_json`], the shape of the
/// vectors' `verifier_capability` and of `get_adcp_capabilities`) or with
/// [`VerifierCapability::builder`]. Both validate: unknown members, names
/// outside their namespace's grammar and populated lists without
/// `supported: true` are configuration errors.
///
/// ```
/// use adcp_verify::DigestCoverage;
/// use adcp_verify::request_policy::{Mode, VerifierCapability};
///
/// let cap = VerifierCapability::builder(DigestCoverage::Required)
///     .required_for(["create_media_buy"])
///     .warn_for(["update_media_buy"])
///     .supported_for(["create_media_buy", "update_media_buy", "get_products"])
///     .protocol_methods_required_for(["tasks/cancel"])
///     .build()?;
/// assert_eq!(cap.operation_mode("create_media_buy"), Mode::Required);
/// assert_eq!(cap.operation_mode("update_media_buy"), Mode::Warn);
/// assert_eq!(cap.protocol_method_mode("tasks/cancel"), Mode::Required);
/// assert_eq!(cap.protocol_method_mode("CancelTask"), Mode::Unlisted);
///
/// assert!(VerifierCapability::builder(DigestCoverage::Required).required_for(["tasks/cancel"]).build().is_err());
/// # Ok::<(), adcp_verify::request_policy::CapabilityError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierCapability {
    supported: bool,
    coverage: Option<DigestCoverage>,
    lists: [BTreeSet<String>; 6],
}

impl VerifierCapability {
    /// A verifier that does not support request signing: signatures are
    /// ignored and nothing is gated.
    pub fn unsupported() -> Self {
        Self {
            supported: false,
            coverage: None,
            lists: Default::default(),
        }
    }

    /// Starts a `supported: true` capability with the given
    /// `covers_content_digest` policy (`Required` for every 3.2 endpoint).
    pub fn builder(coverage: DigestCoverage) -> CapabilityBuilder {
        CapabilityBuilder {
            supported: true,
            coverage: Some(coverage),
            lists: Default::default(),
        }
    }

    /// Validates and assembles a capability; shared by the builder and the
    /// JSON reader.
    pub(crate) fn assemble(
        supported: bool,
        coverage: Option<DigestCoverage>,
        lists: [Vec<String>; 6],
    ) -> Result<Self, CapabilityError> {
        if supported && coverage.is_none() {
            return Err(CapabilityError::MissingCoverage);
        }
        let mut sets: [BTreeSet<String>; 6] = Default::default();
        for (list, names) in SigningList::ALL.into_iter().zip(lists) {
            if !supported && !names.is_empty() {
                return Err(CapabilityError::ListsWithoutSupport { field: list.field() });
            }
            for name in names {
                list.check(&name)?;
                sets[list.index()].insert(name);
            }
        }
        Ok(Self {
            supported,
            coverage,
            lists: sets,
        })
    }

    /// `supported`: whether the verifier validates signatures at all.
    pub fn supported(&self) -> bool {
        self.supported
    }

    /// `covers_content_digest`; `None` only when signing is unsupported and
    /// the block omits it.
    pub fn covers_content_digest(&self) -> Option<DigestCoverage> {
        self.coverage
    }

    /// The digest policy signatures are verified under, when signing is
    /// supported.
    pub(crate) fn signing_coverage(&self) -> Option<DigestCoverage> {
        self.coverage.filter(|_| self.supported)
    }

    pub(crate) fn list(&self, list: SigningList) -> &BTreeSet<String> {
        &self.lists[list.index()]
    }

    /// `required_for`.
    pub fn required_for(&self) -> &BTreeSet<String> {
        self.list(SigningList::Required)
    }

    /// `warn_for`.
    pub fn warn_for(&self) -> &BTreeSet<String> {
        self.list(SigningList::Warn)
    }

    /// `supported_for`.
    pub fn supported_for(&self) -> &BTreeSet<String> {
        self.list(SigningList::Supported)
    }

    /// `protocol_methods_required_for`.
    pub fn protocol_methods_required_for(&self) -> &BTreeSet<String> {
        self.list(SigningList::MethodsRequired)
    }

    /// `protocol_methods_warn_for`.
    pub fn protocol_methods_warn_for(&self) -> &BTreeSet<String> {
        self.list(SigningList::MethodsWarn)
    }

    /// `protocol_methods_supported_for`.
    pub fn protocol_methods_supported_for(&self) -> &BTreeSet<String> {
        self.list(SigningList::MethodsSupported)
    }

    /// The mode of an AdCP operation: exact, case-sensitive membership,
    /// strongest list first. [`Mode::Unlisted`] when signing is unsupported.
    pub fn operation_mode(&self, operation: &str) -> Mode {
        self.mode_in(
            [SigningList::Required, SigningList::Warn, SigningList::Supported],
            operation,
        )
    }

    /// The mode of a JSON-RPC method (the decoded envelope `method`):
    /// exact, case-sensitive membership with no A2A 0.3 / 1.0 translation.
    /// `tools/call` is never matched here; the operation it carries is.
    pub fn protocol_method_mode(&self, method: &str) -> Mode {
        if method == "tools/call" {
            return Mode::Unlisted;
        }
        self.mode_in(
            [
                SigningList::MethodsRequired,
                SigningList::MethodsWarn,
                SigningList::MethodsSupported,
            ],
            method,
        )
    }

    /// The mode of a resolved request: the stronger of its operation's and
    /// its JSON-RPC method's. The namespaces never cross-match.
    pub fn mode_for(&self, request: &ResolvedRequest) -> Mode {
        let by_operation = request.operation().map_or(Mode::Unlisted, |op| self.operation_mode(op));
        let by_method = request
            .protocol_method()
            .map_or(Mode::Unlisted, |m| self.protocol_method_mode(m));
        by_operation.max(by_method)
    }

    fn mode_in(&self, [required, warn, supported]: [SigningList; 3], name: &str) -> Mode {
        if !self.supported {
            Mode::Unlisted
        } else if self.list(required).contains(name) {
            Mode::Required
        } else if self.list(warn).contains(name) {
            Mode::Warn
        } else if self.list(supported).contains(name) {
            Mode::Supported
        } else {
            Mode::Unlisted
        }
    }

    /// Checks that the endpoint's verification profile applies the policy
    /// this capability advertises (a 3.2 endpoint, [`Profile::request_v3_2`],
    /// must advertise `required`; a legacy endpoint its own policy). Call
    /// once at configuration time, so the plan's
    /// [`digest_coverage`](super::VerifyPlan::digest_coverage) and the
    /// checklist's step 6 agree.
    ///
    /// # Errors
    ///
    /// [`CapabilityError::ProfileMismatch`] when signing is supported and
    /// the two policies differ.
    pub fn check_profile(&self, profile: &Profile) -> Result<(), CapabilityError> {
        match self.signing_coverage() {
            Some(coverage) if coverage != profile.digest_coverage() => Err(CapabilityError::ProfileMismatch {
                profile: profile.name(),
                expected: profile.digest_coverage(),
                advertised: Some(coverage),
            }),
            _ => Ok(()),
        }
    }
}

/// Builds a validated [`VerifierCapability`]; see
/// [`VerifierCapability::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct CapabilityBuilder {
    supported: bool,
    coverage: Option<DigestCoverage>,
    lists: [Vec<String>; 6],
}

impl CapabilityBuilder {
    fn push<I, S>(mut self, list: SigningList, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.lists[list.index()].extend(names.into_iter().map(Into::into));
        self
    }

    /// Adds AdCP operations to `required_for`.
    pub fn required_for<I: IntoIterator<Item = S>, S: Into<String>>(self, names: I) -> Self {
        self.push(SigningList::Required, names)
    }

    /// Adds AdCP operations to `warn_for`.
    pub fn warn_for<I: IntoIterator<Item = S>, S: Into<String>>(self, names: I) -> Self {
        self.push(SigningList::Warn, names)
    }

    /// Adds AdCP operations to `supported_for`.
    pub fn supported_for<I: IntoIterator<Item = S>, S: Into<String>>(self, names: I) -> Self {
        self.push(SigningList::Supported, names)
    }

    /// Adds JSON-RPC methods to `protocol_methods_required_for`.
    pub fn protocol_methods_required_for<I: IntoIterator<Item = S>, S: Into<String>>(self, names: I) -> Self {
        self.push(SigningList::MethodsRequired, names)
    }

    /// Adds JSON-RPC methods to `protocol_methods_warn_for`.
    pub fn protocol_methods_warn_for<I: IntoIterator<Item = S>, S: Into<String>>(self, names: I) -> Self {
        self.push(SigningList::MethodsWarn, names)
    }

    /// Adds JSON-RPC methods to `protocol_methods_supported_for`.
    pub fn protocol_methods_supported_for<I: IntoIterator<Item = S>, S: Into<String>>(self, names: I) -> Self {
        self.push(SigningList::MethodsSupported, names)
    }

    /// Validates the names against their namespaces.
    ///
    /// # Errors
    ///
    /// [`CapabilityError::NamespaceViolation`] or
    /// [`CapabilityError::InvalidName`] for the first bad entry.
    pub fn build(self) -> Result<VerifierCapability, CapabilityError> {
        VerifierCapability::assemble(self.supported, self.coverage, self.lists)
    }
}
