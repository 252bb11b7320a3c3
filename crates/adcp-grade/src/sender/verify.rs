//! One delivery through the real webhook verifier (`adcp_verify`'s
//! checklist under `Profile::webhook_v1`, the one `adcp_webhook::Receiver`
//! runs), at the delivery's arrival time, against the published keys.
//!
//! Each delivery is verified with a replay cache of its own: a nonce reused
//! across deliveries is graded by `sender/fresh-nonce`, not here, so one
//! fault fails one case.

use super::journal::{Body, Delivery};
use adcp_sigbase::Message;
use adcp_verify::{FixedClock, KeyResolver, MemoryReplayStore, Profile, VerifiedSigner, Verifier};
use std::sync::Arc;

/// The `@target-uri` a delivery is verified against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// `http://ADDR` as listened, the path as received; `Host` as received.
    AsReceived {
        /// `http://127.0.0.1:8080`.
        origin: String,
    },
    /// The public URL the seller was given (`--public-url`): the target
    /// whatever path arrived, `Host` taken from it (a proxy in front may
    /// have rewritten the received one).
    Public {
        /// The URL as registered.
        url: String,
        /// Its authority (`buyer.example`, `buyer.example:8443`).
        authority: String,
    },
}

impl Target {
    /// The target URI for a delivery at `path`.
    pub(crate) fn uri(&self, path: &str) -> String {
        match self {
            Self::AsReceived { origin } => format!("{origin}{path}"),
            Self::Public { url, .. } => url.clone(),
        }
    }
}

/// Why a delivery did not verify: the verifier's code and detail, or why
/// it could not be verified at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) code: String,
    pub(crate) detail: String,
}

/// Verifies `delivery` as a buyer's receiver would have on arrival.
pub(crate) async fn verify(
    delivery: &Delivery,
    target: &Target,
    keys: &Arc<dyn KeyResolver>,
) -> Result<VerifiedSigner, Refusal> {
    let body = match &delivery.body {
        Body::Read(bytes) => bytes.as_slice(),
        Body::TooLarge => return Err(refusal("not_read", "body over the 1 MiB limit (answered 413)")),
        Body::HeadersTooLarge => return Err(refusal("not_read", "headers over the 64 KiB limit (answered 431)")),
        Body::Unreadable => return Err(refusal("not_read", "the body could not be read")),
    };
    let mut msg = Message::request(delivery.method.as_str(), target.uri(&delivery.path));
    let public = match target {
        Target::Public { authority, .. } => {
            msg.push_header("host", authority.as_str());
            true
        }
        Target::AsReceived { .. } => false,
    };
    for (name, value) in &delivery.headers {
        if !(public && name == "host") {
            msg.push_header(name.as_str(), value.as_slice());
        }
    }
    let msg = msg.with_body(body);
    let verifier = Verifier::new(
        Profile::webhook_v1(),
        Arc::clone(keys),
        MemoryReplayStore::webhook(),
        FixedClock(delivery.unix),
    );
    verifier.verify(&msg).await.map_err(|e| Refusal {
        code: e.code_str().to_owned(),
        detail: e.detail().to_owned(),
    })
}

fn refusal(code: &str, detail: &str) -> Refusal {
    Refusal {
        code: code.to_owned(),
        detail: detail.to_owned(),
    }
}
