//! Reading a `request_signing` capability block, the one reader both ends
//! use: the seller for its own advertised block, the buyer for its
//! counterparty's.

use adcp_verify::request_policy::{CapabilityError, VerifierCapability};
use serde_json::Value;

/// Reads the `request_signing` block from a `get_adcp_capabilities`
/// response, from an MCP tool result carrying it as `structuredContent`,
/// or from the block itself (an object with a `supported` member and
/// nothing but block members).
///
/// A response without `request_signing` (or with `null`) is a counterparty
/// that does not verify signatures: [`VerifierCapability::unsupported`].
/// The block is read with the verifier's strict reader, so a block a
/// verifier would refuse (unknown member, `supported: true` without
/// `covers_content_digest`, a name in the wrong namespace) is an error
/// here too rather than a guess.
///
/// # Errors
///
/// The [`CapabilityError`] of the block.
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
/// assert_eq!(request_signing_capability(&response["request_signing"])?, cap);
/// assert!(!request_signing_capability(&json!({"adcp": {"major_versions": [3]}}))?.supported());
/// # Ok::<(), adcp_verify::request_policy::CapabilityError>(())
/// ```
pub fn request_signing_capability(document: &Value) -> Result<VerifierCapability, CapabilityError> {
    let Value::Object(map) = document else {
        return Err(CapabilityError::NotAnObject);
    };
    if let Some(block) = map.get("request_signing") {
        return match block {
            Value::Null => Ok(VerifierCapability::unsupported()),
            block => VerifierCapability::from_json(block),
        };
    }
    if let Some(inner @ Value::Object(_)) = map.get("structuredContent") {
        return request_signing_capability(inner);
    }
    if map.contains_key("supported") && map.keys().all(|k| is_block_member(k)) {
        return VerifierCapability::from_json(document);
    }
    Ok(VerifierCapability::unsupported())
}

fn is_block_member(key: &str) -> bool {
    matches!(
        key,
        "supported"
            | "covers_content_digest"
            | "required_for"
            | "warn_for"
            | "supported_for"
            | "protocol_methods_required_for"
            | "protocol_methods_warn_for"
            | "protocol_methods_supported_for"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents() {
        let block = json!({"supported": true, "covers_content_digest": "required", "warn_for": ["get_products"]});
        let wrapped = json!({"structuredContent": {"request_signing": block.clone()}});
        assert!(request_signing_capability(&wrapped).unwrap().supported());
        assert!(request_signing_capability(&block).unwrap().supported());
        assert!(!request_signing_capability(&json!({"request_signing": null}))
            .unwrap()
            .supported());
        assert!(request_signing_capability(&json!({"request_signing": {"supported": true}})).is_err());
        assert!(request_signing_capability(&json!([])).is_err());
        // An unrelated object with a `supported` member is not a block.
        assert!(
            !request_signing_capability(&json!({"supported": true, "media_buy": {}}))
                .unwrap()
                .supported()
        );
    }
}
