//! Strict member access on parsed JSON objects for operation resolution.
//!
//! Duplicate member names are already rejected by the strict parser (names
//! compared after unescaping). What remains is case: some decoders match
//! member names case-insensitively (Go's `encoding/json`), so an object
//! carrying `Skill` next to, or instead of, `skill` would be read one way
//! by this gate and another way by such a dispatcher. A case variant of a
//! member the resolver reads is therefore unresolvable.

use serde_json::{Map, Value};

/// A JSON object.
pub(crate) type Object = Map<String, Value>;

/// Why a body does not resolve to exactly one operation (server-side
/// detail; the peer only sees `request_body_malformed`).
pub(crate) type Reason = String;

/// Fails when `obj` has a member equal to one of `recognized` ignoring
/// ASCII case but not exactly.
pub(crate) fn reject_case_variants(obj: &Object, recognized: &[&str], context: &str) -> Result<(), Reason> {
    for key in obj.keys() {
        if let Some(name) = recognized
            .iter()
            .find(|name| **name != key.as_str() && name.eq_ignore_ascii_case(key))
        {
            return Err(format!("{context} carries {key:?}, a case variant of {name:?}"));
        }
    }
    Ok(())
}

/// The member `name` of `obj` as an object.
pub(crate) fn object<'v>(obj: &'v Object, name: &str, context: &str) -> Result<&'v Object, Reason> {
    match obj.get(name) {
        Some(Value::Object(inner)) => Ok(inner),
        Some(_) => Err(format!("{context}.{name} is not an object")),
        None => Err(format!("{context} has no {name}")),
    }
}

/// The member `name` of `obj` as a non-empty string.
pub(crate) fn non_empty_string<'v>(obj: &'v Object, name: &str, context: &str) -> Result<&'v str, Reason> {
    match obj.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(Value::String(_)) => Err(format!("{context}.{name} is empty")),
        Some(_) => Err(format!("{context}.{name} is not a string")),
        None => Err(format!("{context} has no {name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Object {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn case_variants() {
        assert!(reject_case_variants(&obj(json!({"skill": 1, "input": 2})), &["skill"], "data").is_ok());
        assert!(reject_case_variants(&obj(json!({"Skill": 1})), &["skill"], "data").is_err());
        assert!(reject_case_variants(&obj(json!({"skill": 1, "SKILL": 2})), &["skill"], "data").is_err());
        assert!(reject_case_variants(&obj(json!({"taskid": 1})), &["taskId"], "message").is_err());
    }

    #[test]
    fn typed_access() {
        let o = obj(json!({"a": {}, "s": "x", "e": "", "n": 1}));
        assert!(object(&o, "a", "o").is_ok());
        assert!(object(&o, "s", "o").is_err());
        assert!(object(&o, "z", "o").is_err());
        assert_eq!(non_empty_string(&o, "s", "o"), Ok("x"));
        assert!(non_empty_string(&o, "e", "o").is_err());
        assert!(non_empty_string(&o, "n", "o").is_err());
        assert!(non_empty_string(&o, "z", "o").is_err());
    }
}
