//! Content-standards artifact push.

use super::ident::present;
use super::model::Model;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A batch of delivered content artifacts for a media buy
/// (`content-standards/artifact-webhook-payload.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactBatch {
    /// Per-delivery dedup key.
    pub idempotency_key: String,
    /// The media buy.
    pub media_buy_id: String,
    /// The batch.
    pub batch_id: String,
    /// When the batch was generated.
    pub timestamp: String,
    /// The artifacts (`{artifact, delivered_at, …}` each). Kept as JSON:
    /// `content-standards/artifact.json` is large and the SDK never reads
    /// inside it.
    pub artifacts: Vec<Value>,
    /// Batch position (`total_artifacts`, `batch_number`, …; opaque).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub pagination: Option<Value>,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Model for ArtifactBatch {
    const REQUIRED: &'static [&'static str] = &["media_buy_id", "batch_id", "timestamp", "artifacts"];
}
