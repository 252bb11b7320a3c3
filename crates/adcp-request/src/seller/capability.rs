//! Reading the seller's own `request_signing` block.

use adcp_verify::request_policy::{CapabilityError, VerifierCapability};
use serde_json::Value;

/// The `request_signing` block of a `get_adcp_capabilities` response (the
/// response object itself, or an MCP tool result carrying it as
/// `structuredContent`), validated as [`VerifierCapability::from_json`]
/// does. A response without the block does not support request signing
/// ([`VerifierCapability::unsupported`]).
///
/// # Errors
///
/// [`CapabilityError`] for a response that is not an object or a block that
/// does not validate.
///
/// ```
/// use adcp_request::request_signing_capability;
/// use adcp_verify::request_policy::Mode;
/// use serde_json::json;
///
/// let response = json!({
///     "adcp": {"major_versions": [3]},
///     "request_signing": {"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]}
/// });
/// let cap = request_signing_capability(&response)?;
/// assert_eq!(cap.operation_mode("create_media_buy"), Mode::Required);
/// assert!(!request_signing_capability(&json!({}))?.supported());
/// # Ok::<(), adcp_verify::request_policy::CapabilityError>(())
/// ```
pub fn request_signing_capability(response: &Value) -> Result<VerifierCapability, CapabilityError> {
    let Some(mut object) = response.as_object() else {
        return Err(CapabilityError::NotAnObject);
    };
    if let Some(Value::Object(inner)) = object.get("structuredContent") {
        object = inner;
    }
    match object.get("request_signing") {
        None | Some(Value::Null) => Ok(VerifierCapability::unsupported()),
        Some(block) => VerifierCapability::from_json(block),
    }
}
