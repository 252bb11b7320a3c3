//! Payloads of kinds this SDK does not know yet.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A payload of an unknown kind that carries a valid `idempotency_key`:
/// accepted (unless [`super::AcceptKinds::NamedOnly`]) so a seller on a
/// newer 3.x minor can add event types and receivers still dedupe them.
/// Kept whole; the common members are read when present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GenericPayload {
    body: Map<String, Value>,
}

impl GenericPayload {
    pub(crate) fn new(body: Map<String, Value>) -> Self {
        Self { body }
    }

    /// The body.
    #[must_use]
    pub fn body(&self) -> &Map<String, Value> {
        &self.body
    }

    /// A top-level string member.
    #[must_use]
    pub fn str_member(&self, name: &str) -> Option<&str> {
        self.body.get(name).and_then(Value::as_str)
    }
}
