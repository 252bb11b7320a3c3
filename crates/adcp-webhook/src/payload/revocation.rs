//! Rights-grant revocation.

use super::ident::{present, some};
use super::model::Model;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A rights grant revoked by the rights holder
/// (`brand/revocation-notification.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RightsRevocation {
    /// Per-delivery dedup key.
    pub idempotency_key: String,
    /// The revoked grant.
    pub rights_id: String,
    /// The rights holder's brand.
    pub brand_id: String,
    /// Why.
    pub reason: String,
    /// When the revocation takes effect.
    pub effective_at: String,
    /// The uses revoked (`enums/right-use.json`); absent means all.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "some")]
    pub revoked_uses: Option<Vec<String>>,
    /// The originating request's `context`, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub context: Option<Value>,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Model for RightsRevocation {
    const REQUIRED: &'static [&'static str] = &["rights_id", "brand_id", "reason", "effective_at"];
}
