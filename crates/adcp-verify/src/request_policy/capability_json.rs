//! Reading and writing the `request_signing` block as JSON.
//!
//! Reading is strict: unknown members are refused (a misspelt
//! `requried_for` must not silently leave an operation unprotected), and
//! every member has exactly one accepted JSON type.

use super::capability::{SigningList, VerifierCapability};
use super::capability_error::CapabilityError;
use crate::profile::DigestCoverage;
use serde_json::{Map, Value};

/// The spec spelling of a digest policy.
pub(crate) fn coverage_str(coverage: DigestCoverage) -> &'static str {
    match coverage {
        DigestCoverage::Required => "required",
        DigestCoverage::Either => "either",
        DigestCoverage::Forbidden => "forbidden",
    }
}

fn parse_coverage(value: &str) -> Result<DigestCoverage, CapabilityError> {
    match value {
        "required" => Ok(DigestCoverage::Required),
        "either" => Ok(DigestCoverage::Either),
        "forbidden" => Ok(DigestCoverage::Forbidden),
        other => Err(CapabilityError::UnknownCoverage(other.to_owned())),
    }
}

impl VerifierCapability {
    /// Reads a `request_signing` object (the vectors' `verifier_capability`).
    ///
    /// `supported` defaults to `false`; `covers_content_digest` is required
    /// when `supported` is true; absent lists are empty.
    ///
    /// # Errors
    ///
    /// Any [`CapabilityError`]: unknown member, wrong type, unknown policy,
    /// namespace violation, invalid name, lists without support.
    ///
    /// ```
    /// use adcp_verify::request_policy::{CapabilityError, Mode, VerifierCapability};
    /// use serde_json::json;
    ///
    /// let cap = VerifierCapability::from_json(&json!({
    ///     "supported": true,
    ///     "covers_content_digest": "required",
    ///     "required_for": ["create_media_buy"],
    ///     "protocol_methods_required_for": ["SendMessage"]
    /// }))?;
    /// assert_eq!(cap.protocol_method_mode("SendMessage"), Mode::Required);
    ///
    /// let typo = json!({"supported": true, "covers_content_digest": "required", "requried_for": []});
    /// assert_eq!(VerifierCapability::from_json(&typo), Err(CapabilityError::UnknownField("requried_for".into())));
    /// # Ok::<(), CapabilityError>(())
    /// ```
    pub fn from_json(value: &Value) -> Result<Self, CapabilityError> {
        let Value::Object(map) = value else {
            return Err(CapabilityError::NotAnObject);
        };
        if let Some(unknown) = map.keys().find(|k| !is_known(k)) {
            return Err(CapabilityError::UnknownField(unknown.clone()));
        }
        let supported = match map.get("supported") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(CapabilityError::WrongType {
                    field: "supported",
                    expected: "a boolean",
                })
            }
        };
        let coverage = match map.get("covers_content_digest") {
            None => None,
            Some(Value::String(s)) => Some(parse_coverage(s)?),
            Some(_) => {
                return Err(CapabilityError::WrongType {
                    field: "covers_content_digest",
                    expected: "a string",
                })
            }
        };
        let mut lists: [Vec<String>; 6] = Default::default();
        for (slot, list) in lists.iter_mut().zip(SigningList::ALL) {
            *slot = string_list(map, list.field())?;
        }
        Self::assemble(supported, coverage, lists)
    }

    /// Reads a `request_signing` object from JSON bytes, parsed strictly
    /// (duplicate members are an error, not last-wins).
    ///
    /// # Errors
    ///
    /// [`CapabilityError::Json`] for bytes that are not strict JSON, then
    /// every error of [`VerifierCapability::from_json`].
    pub fn from_slice(json: &[u8]) -> Result<Self, CapabilityError> {
        let value = adcp_strict_json::parse_value(json, &adcp_strict_json::Limits::default())
            .map_err(|e| CapabilityError::Json(e.to_string()))?;
        Self::from_json(&value)
    }

    /// The block as published in `get_adcp_capabilities`: `supported`,
    /// `covers_content_digest` (when known), the three operation lists
    /// always, the protocol-method lists when populated.
    ///
    /// ```
    /// use adcp_verify::DigestCoverage;
    /// use adcp_verify::request_policy::VerifierCapability;
    /// use serde_json::json;
    ///
    /// let cap = VerifierCapability::builder(DigestCoverage::Required).warn_for(["create_media_buy"]).build()?;
    /// assert_eq!(
    ///     cap.to_json(),
    ///     json!({
    ///         "supported": true,
    ///         "covers_content_digest": "required",
    ///         "required_for": [],
    ///         "warn_for": ["create_media_buy"],
    ///         "supported_for": []
    ///     })
    /// );
    /// assert_eq!(VerifierCapability::from_json(&cap.to_json())?, cap);
    /// # Ok::<(), adcp_verify::request_policy::CapabilityError>(())
    /// ```
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("supported".into(), Value::Bool(self.supported()));
        if let Some(coverage) = self.covers_content_digest() {
            map.insert("covers_content_digest".into(), Value::from(coverage_str(coverage)));
        }
        for list in SigningList::ALL {
            let names = self.list(list);
            let always = matches!(list, SigningList::Required | SigningList::Warn | SigningList::Supported);
            if always || !names.is_empty() {
                let values = names.iter().cloned().map(Value::String).collect();
                map.insert(list.field().into(), Value::Array(values));
            }
        }
        Value::Object(map)
    }
}

fn is_known(key: &str) -> bool {
    key == "supported" || key == "covers_content_digest" || SigningList::ALL.iter().any(|l| l.field() == key)
}

fn string_list(map: &Map<String, Value>, field: &'static str) -> Result<Vec<String>, CapabilityError> {
    let wrong = || CapabilityError::WrongType {
        field,
        expected: "an array of strings",
    };
    match map.get(field) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned).ok_or_else(wrong))
            .collect(),
        Some(_) => Err(wrong()),
    }
}
