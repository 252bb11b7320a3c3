//! Component identifiers (RFC 9421 §2): a name plus parameters.

use crate::sf::{BareValue, Parameters};
use crate::Error;
use std::borrow::Cow;

/// Derived component names this crate can compute (RFC 9421 §2.2).
const DERIVED: &[&str] = &[
    "@method",
    "@target-uri",
    "@authority",
    "@scheme",
    "@request-target",
    "@path",
    "@query",
    "@query-param",
    "@status",
];

/// A covered component: an HTTP field name (lowercase) or a derived
/// component name (`@…`), with its parameters in received order.
///
/// ```
/// use adcp_sigbase::ComponentId;
/// let c = ComponentId::field("content-digest");
/// assert_eq!(c.to_string(), r#""content-digest""#);
/// let q = ComponentId::query_param("Pet");
/// assert_eq!(q.to_string(), r#""@query-param";name="Pet""#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentId {
    name: Cow<'static, str>,
    params: Parameters,
}

impl ComponentId {
    /// An HTTP field component; the name is lowercased.
    pub fn field(name: &str) -> Self {
        Self {
            name: Cow::Owned(name.to_ascii_lowercase()),
            params: Parameters::new(),
        }
    }

    /// A derived component (`@method`, `@target-uri`, …).
    pub fn derived(name: &str) -> Self {
        Self {
            name: intern_name(name),
            params: Parameters::new(),
        }
    }

    /// `@query-param;name="…"`.
    pub fn query_param(name: &str) -> Self {
        Self::derived("@query-param").with_param("name", BareValue::String(name.to_owned()))
    }

    /// Builds from a parsed name and parameters, validating both.
    pub(crate) fn parsed(name: Cow<'static, str>, params: Parameters, label: &str) -> Result<Self, Error> {
        let id = Self { name, params };
        id.validate(label)?;
        Ok(id)
    }

    /// Builds without validation, for tests of the parsers.
    #[cfg(test)]
    pub(crate) fn unchecked(name: Cow<'static, str>, params: Parameters) -> Self {
        Self { name, params }
    }

    /// Adds a parameter (`sf`, `key`, `bs`, `req`, `tr`, `name`).
    pub fn with_param(mut self, key: &str, value: BareValue) -> Self {
        self.params.push(key, value);
        self
    }

    /// The component name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parameters in order.
    pub fn params(&self) -> &Parameters {
        &self.params
    }

    /// Whether this is a derived component (`@…`).
    pub fn is_derived(&self) -> bool {
        self.name.starts_with('@')
    }

    /// Whether a boolean flag parameter (`sf`, `bs`, `req`, `tr`) is set.
    pub fn flag(&self, key: &str) -> bool {
        self.params.get(key) == Some(&BareValue::Boolean(true))
    }

    /// A string parameter (`key`, `name`).
    pub fn string_param(&self, key: &str) -> Option<&str> {
        match self.params.get(key) {
            Some(BareValue::String(s)) => Some(s),
            _ => None,
        }
    }

    /// Appends the serialized identifier (`"name";param=value`).
    pub fn serialize_into(&self, out: &mut String) {
        out.push('"');
        out.push_str(&self.name);
        out.push('"');
        self.params.serialize_into(out);
    }

    /// Whether `other` names the same component (name and parameters,
    /// parameter order ignored).
    pub fn same_as(&self, other: &ComponentId) -> bool {
        self.name == other.name
            && self.params.len() == other.params.len()
            && self.params.iter().all(|(k, v)| other.params.get(k) == Some(v))
    }

    fn validate(&self, label: &str) -> Result<(), Error> {
        let invalid_name = || Error::InvalidComponentName {
            label: label.to_owned(),
            name: self.name.to_string(),
        };
        // A borrowed name came from the intern tables: known valid.
        let interned = matches!(self.name, Cow::Borrowed(_));
        if !interned && self.is_derived() && !DERIVED.contains(&self.name.as_ref()) {
            return Err(invalid_name());
        }
        if !interned && !self.is_derived() && (self.name.is_empty() || !self.name.bytes().all(is_lower_tchar)) {
            return Err(invalid_name());
        }
        let invalid_param = |p: &str| Error::InvalidComponentParameter {
            component: self.to_string(),
            parameter: p.to_owned(),
        };
        for (key, value) in self.params.iter() {
            let ok = match (key, value) {
                ("req", BareValue::Boolean(true)) => true,
                ("sf" | "bs" | "tr", BareValue::Boolean(true)) => !self.is_derived(),
                ("key", BareValue::String(_)) => !self.is_derived(),
                ("name", BareValue::String(_)) => self.name == "@query-param",
                _ => false,
            };
            if !ok {
                return Err(invalid_param(key));
            }
        }
        if self.flag("bs") && (self.flag("sf") || self.params.contains("key")) {
            return Err(invalid_param("bs"));
        }
        if self.name == "@query-param" && !self.params.contains("name") {
            return Err(invalid_param("name"));
        }
        Ok(())
    }
}

impl std::fmt::Display for ComponentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::with_capacity(self.name.len() + 2);
        self.serialize_into(&mut s);
        f.write_str(&s)
    }
}

/// Field names AdCP and RFC 9421 profiles cover all the time (interned by
/// [`intern_name`]).
#[cfg(test)]
const COMMON_FIELDS: &[&str] = &["content-type", "content-digest", "content-length", "date", "host"];

/// A component name: borrowed for derived and common field names.
pub(crate) fn intern_name(name: &str) -> Cow<'static, str> {
    // A match compiles to a length switch and one comparison; the tables
    // above stay the reference (see the test below).
    Cow::Borrowed(match name {
        "@method" => "@method",
        "@target-uri" => "@target-uri",
        "@authority" => "@authority",
        "@scheme" => "@scheme",
        "@request-target" => "@request-target",
        "@path" => "@path",
        "@query" => "@query",
        "@query-param" => "@query-param",
        "@status" => "@status",
        "content-type" => "content-type",
        "content-digest" => "content-digest",
        "content-length" => "content-length",
        "date" => "date",
        "host" => "host",
        _ => return Cow::Owned(name.to_owned()),
    })
}

/// RFC 9110 `tchar` without uppercase letters.
fn is_lower_tchar(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_covers_exactly_the_tables() {
        for name in DERIVED.iter().chain(COMMON_FIELDS) {
            assert!(matches!(intern_name(name), Cow::Borrowed(n) if n == *name), "{name}");
        }
        for name in ["@unknown", "x-custom", "Content-Type", ""] {
            assert!(matches!(intern_name(name), Cow::Owned(_)), "{name}");
        }
    }
}
