//! Operation resolution over A2A: the AdCP operation of an A2A message is
//! the `skill` of its sole DataPart.
//!
//! The rule is deliberately narrow, because every place two parsers could
//! pick a different Part or a different skill is a signature-gate bypass:
//!
//! - every Part is an object carrying exactly one content member (`text`,
//!   `data`, or a file member: `raw` / `url` in A2A 1.0, `file` in 0.3);
//!   an A2A 0.3 `kind`, when present, must name that member;
//! - FileParts are outside the AdCP invocation profile;
//! - exactly one DataPart, whose `data` is an object whose `skill` is a
//!   non-empty string, read exactly: no alias, no case folding;
//! - TextParts and `metadata` are never consulted;
//! - case variants of the members read (`Skill`, `Parts`, `Message`, …)
//!   are rejected.

use super::members::{non_empty_string, object, reject_case_variants, Object, Reason};
use serde_json::Value;

/// JSON-RPC methods that carry an A2A Message: A2A 1.0 and 0.3 names,
/// matched exactly.
pub(crate) const MESSAGE_METHODS: [&str; 4] = ["SendMessage", "SendStreamingMessage", "message/send", "message/stream"];

/// The Part members that carry content; a Part has exactly one.
const CONTENT_MEMBERS: [&str; 5] = ["text", "data", "raw", "url", "file"];

/// Content members that make a Part a FilePart.
const FILE_MEMBERS: [&str; 3] = ["raw", "url", "file"];

/// Every Part member the resolver reads, for case-variant rejection.
const PART_MEMBERS: [&str; 6] = ["text", "data", "raw", "url", "file", "kind"];

/// Resolves the skill of the `message` member of `carrier` (the JSON-RPC
/// `params`, or the whole HTTP+JSON body).
pub(crate) fn message_skill(carrier: &Object) -> Result<String, Reason> {
    reject_case_variants(carrier, &["message"], "request")?;
    let message = object(carrier, "message", "request")?;
    reject_case_variants(message, &["parts", "taskId"], "message")?;
    let Some(Value::Array(parts)) = message.get("parts") else {
        return Err("message.parts is not an array".into());
    };
    let mut invocation: Option<&Object> = None;
    for (i, part) in parts.iter().enumerate() {
        let Value::Object(part) = part else {
            return Err(format!("message.parts[{i}] is not an object"));
        };
        reject_case_variants(part, &PART_MEMBERS, "part")?;
        let mut present = CONTENT_MEMBERS.iter().copied().filter(|m| part.contains_key(*m));
        let (Some(member), None) = (present.next(), present.next()) else {
            return Err(format!("message.parts[{i}] does not carry exactly one content member"));
        };
        if FILE_MEMBERS.contains(&member) {
            return Err(format!("message.parts[{i}] is a FilePart"));
        }
        if let Some(kind) = part.get("kind") {
            if kind.as_str() != Some(member) {
                return Err(format!("message.parts[{i}].kind disagrees with its {member} member"));
            }
        }
        if member == "data" {
            if invocation.is_some() {
                return Err("message carries more than one DataPart".into());
            }
            let Some(Value::Object(data)) = part.get("data") else {
                return Err(format!("message.parts[{i}].data is not an object"));
            };
            invocation = Some(data);
        }
    }
    let data = invocation.ok_or_else(|| Reason::from("message carries no DataPart"))?;
    reject_case_variants(data, &["skill"], "DataPart data")?;
    non_empty_string(data, "skill", "DataPart data").map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn skill(carrier: Value) -> Result<String, Reason> {
        match carrier {
            Value::Object(m) => message_skill(&m),
            _ => Err("not an object".into()),
        }
    }

    #[test]
    fn sole_data_part_wins_over_text_and_metadata() {
        let c = json!({"message": {"parts": [{"text": "create_media_buy"}, {"data": {"skill": "get_products"}}], "metadata": {"skill": "x"}}});
        assert_eq!(skill(c).as_deref(), Ok("get_products"));
    }

    #[test]
    fn v0_3_kinds() {
        let c = json!({"message": {"kind": "message", "parts": [{"kind": "data", "data": {"skill": "get_products"}}, {"kind": "text", "text": "hi"}]}});
        assert_eq!(skill(c).as_deref(), Ok("get_products"));
        let mismatch = json!({"message": {"parts": [{"kind": "text", "data": {"skill": "get_products"}}]}});
        assert!(skill(mismatch).is_err());
        let non_string_kind = json!({"message": {"parts": [{"kind": 1, "data": {"skill": "get_products"}}]}});
        assert!(skill(non_string_kind).is_err());
        let file = json!({"message": {"parts": [{"kind": "file", "file": {"uri": "x"}}, {"data": {"skill": "a"}}]}});
        assert!(skill(file).is_err());
    }

    #[test]
    fn unresolvable_shapes() {
        for bad in [
            json!({}),
            json!({"message": []}),
            json!({"message": {}}),
            json!({"message": {"parts": {}}}),
            json!({"message": {"parts": []}}),
            json!({"message": {"parts": [1]}}),
            json!({"message": {"parts": [{}]}}),
            json!({"message": {"parts": [{"data": null}]}}),
            json!({"message": {"parts": [{"data": {"skill": null}}]}}),
            json!({"message": {"Parts": [{"data": {"skill": "a"}}], "parts": [{"data": {"skill": "a"}}]}}),
            json!({"Message": {"parts": [{"data": {"skill": "a"}}]}}),
            json!({"message": {"parts": [{"data": {"skill": "a"}, "Kind": "data"}]}}),
            json!({"message": {"parts": [{"data": {"skill": "a"}, "TEXT": "x"}]}}),
        ] {
            assert!(skill(bad.clone()).is_err(), "{bad}");
        }
    }
}
