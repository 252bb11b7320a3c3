//! Content-standards artifact batches
//! (`content-standards/artifact-webhook-payload.json`).

use super::{common_builder, setters, Draft, IdRule};
use crate::payload::PayloadKind;

/// An artifact batch. No `notification_id` (the schema has none);
/// `timestamp` is fixed once, like `fired_at`.
#[derive(Debug, Clone)]
pub struct ArtifactBatchBuilder {
    draft: Draft,
}

impl ArtifactBatchBuilder {
    /// A batch generated at `timestamp`.
    #[must_use]
    pub fn new(timestamp: impl Into<String>) -> Self {
        let mut draft = Draft::plain(
            PayloadKind::ArtifactBatch,
            &["media_buy_id", "batch_id", "artifacts"],
            IdRule::Absent,
        );
        draft.set_time("timestamp", timestamp.into());
        Self { draft }
    }
}

setters!(ArtifactBatchBuilder {
    /// The media buy the artifacts were delivered for.
    media_buy_id("media_buy_id"): text;
    /// The batch (the receiver's correlation id).
    batch_id("batch_id"): text;
    /// The artifacts (an array of artifact objects).
    artifacts("artifacts"): json;
    /// The `pagination` object, for a batch in parts.
    pagination("pagination"): json;
});
common_builder!(ArtifactBatchBuilder);
