//! The application's hook for independent credentials (bearer, API key,
//! mTLS), composed with request signatures as the spec's "Composition with
//! fallback authenticators" says.

use adcp_verify::request_policy::{FallbackCredential, ResolvedRequest};
use http::request::Parts;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// The future an [`Authenticator`] returns.
pub type AuthenticatorFuture<'a> = Pin<Box<dyn Future<Output = FallbackCredential> + Send + 'a>>;

/// Decides whether a request carries an independent credential the seller
/// accepts **for this operation** (a bearer token, an API key, an mTLS
/// identity): [`FallbackCredential::Valid`] or [`FallbackCredential::Absent`].
///
/// It runs on every request whose body resolved to an operation, before the
/// signature gate, and only reports; the gate applies the spec's rules:
///
/// - an unsigned request with a valid credential is not refused for its
///   missing signature, even for an operation in `required_for`;
/// - a signed request is judged on its signature; a credential never
///   rescues a failed one, except in shadow mode (`warn_for`), where the
///   request proceeds on the credential **without** a signer identity;
/// - a malformed `Signature` / `Signature-Input` pair always rejects;
/// - a webhook registration carrying `authentication` must be signed,
///   credential or not.
///
/// An unrecognized token is not a credential: answer `Absent` for it. The
/// request's identity from the credential is the application's business
/// (its own extension or lookup); this crate records only that one was
/// accepted ([`AuthSource::Fallback`](adcp_verify::request_policy::AuthSource)).
///
/// A synchronous closure `Fn(&Parts, &ResolvedRequest) -> FallbackCredential`
/// is an authenticator; implement the trait for one that needs I/O.
///
/// ```
/// use adcp_request::{Authenticator, AuthenticatorFuture};
/// use adcp_verify::request_policy::{FallbackCredential, ResolvedRequest};
///
/// struct ApiKeys(Vec<String>);
///
/// impl Authenticator for ApiKeys {
///     fn authenticate<'a>(&'a self, parts: &'a http::request::Parts, _: &'a ResolvedRequest) -> AuthenticatorFuture<'a> {
///         let presented = parts.headers.get("x-api-key").and_then(|v| v.to_str().ok());
///         let valid = presented.is_some_and(|k| self.0.iter().any(|known| known == k));
///         Box::pin(async move { if valid { FallbackCredential::Valid } else { FallbackCredential::Absent } })
///     }
/// }
/// ```
pub trait Authenticator: Send + Sync + 'static {
    /// The credential verdict for `parts` (headers, extensions such as a
    /// TLS peer identity) and the operation the body resolved to.
    fn authenticate<'a>(&'a self, parts: &'a Parts, request: &'a ResolvedRequest) -> AuthenticatorFuture<'a>;
}

impl<F> Authenticator for F
where
    F: Fn(&Parts, &ResolvedRequest) -> FallbackCredential + Send + Sync + 'static,
{
    fn authenticate<'a>(&'a self, parts: &'a Parts, request: &'a ResolvedRequest) -> AuthenticatorFuture<'a> {
        Box::pin(std::future::ready(self(parts, request)))
    }
}

/// The default authenticator: no request carries an independent
/// credential, so signatures are the only authentication the gate knows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoFallback;

impl Authenticator for NoFallback {
    fn authenticate<'a>(&'a self, _: &'a Parts, _: &'a ResolvedRequest) -> AuthenticatorFuture<'a> {
        Box::pin(std::future::ready(FallbackCredential::Absent))
    }
}

/// How the core holds the hook: the default without any boxing.
pub(crate) enum Hook {
    None,
    Custom(Box<dyn Authenticator>),
}

impl Hook {
    pub(crate) async fn run(&self, parts: &Parts, request: &ResolvedRequest) -> FallbackCredential {
        match self {
            Hook::None => FallbackCredential::Absent,
            Hook::Custom(a) => a.authenticate(parts, request).await,
        }
    }
}

impl fmt::Debug for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Hook::None => "NoFallback",
            Hook::Custom(_) => "Custom",
        })
    }
}
