//! A2A native task notifications (`Task` / `TaskStatusUpdateEvent`),
//! delivered to an A2A `TaskPushNotificationConfig` registration.

use crate::envelope::TaskStatus;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An A2A notification body, kept whole (A2A 1.0 defines it, not the AdCP
/// schemas); [`crate::extract`] reads the AdCP data inside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct A2aTaskPayload {
    body: Map<String, Value>,
}

impl A2aTaskPayload {
    pub(crate) fn new(body: Map<String, Value>) -> Self {
        Self { body }
    }

    /// The body.
    #[must_use]
    pub fn body(&self) -> &Map<String, Value> {
        &self.body
    }

    /// The A2A task (`task`, `statusUpdate`, `artifactUpdate` wrappers, or a
    /// bare task).
    fn inner(&self) -> &Map<String, Value> {
        if self.body.contains_key("status") {
            return &self.body;
        }
        ["task", "statusUpdate", "artifactUpdate"]
            .iter()
            .find_map(|k| self.body.get(*k).and_then(Value::as_object))
            .unwrap_or(&self.body)
    }

    /// The A2A task id (`id`, or `taskId` on update events).
    #[must_use]
    pub fn task_id(&self) -> Option<&str> {
        let inner = self.inner();
        inner.get("id").or_else(|| inner.get("taskId")).and_then(Value::as_str)
    }

    /// The task state in AdCP spelling (`TASK_STATE_COMPLETED` →
    /// `completed`, as [`crate::extract::a2a_state`]), if the body carries
    /// one.
    #[must_use]
    pub fn state(&self) -> Option<String> {
        let state = self.inner().get("status")?.get("state")?.as_str()?;
        let state = state.strip_prefix("TASK_STATE_").unwrap_or(state);
        Some(state.to_ascii_lowercase().replace('_', "-"))
    }

    /// The task state as a [`TaskStatus`], when it is one.
    #[must_use]
    pub fn task_status(&self) -> Option<TaskStatus> {
        TaskStatus::parse(&self.state()?)
    }
}
