//! Which HTTP fields are structured, and of which type (for the `sf` and
//! `key` component parameters, RFC 9421 §2.1.1–2.1.2).

/// The RFC 8941 top-level type of a structured field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SfType {
    /// An Item.
    Item,
    /// A List.
    List,
    /// A Dictionary.
    Dictionary,
}

/// Fields whose structured type is known without registration.
const KNOWN: &[(&str, SfType)] = &[
    ("signature-input", SfType::Dictionary),
    ("signature", SfType::Dictionary),
    ("accept-signature", SfType::Dictionary),
    ("content-digest", SfType::Dictionary),
    ("repr-digest", SfType::Dictionary),
    ("want-content-digest", SfType::Dictionary),
    ("want-repr-digest", SfType::Dictionary),
    ("priority", SfType::Dictionary),
    ("cache-status", SfType::List),
    ("proxy-status", SfType::List),
    ("client-cert", SfType::Item),
    ("client-cert-chain", SfType::List),
    ("signature-agent", SfType::Dictionary),
];

/// A registry of structured field types, by lowercase field name.
///
/// [`StructuredFields::default`] knows the fields of RFC 9421, RFC 9530 and
/// a few common ones (without allocating); add the fields of your own
/// profile with [`StructuredFields::with`].
#[derive(Debug, Clone)]
pub struct StructuredFields {
    builtin: &'static [(&'static str, SfType)],
    types: Vec<(String, SfType)>,
}

impl Default for StructuredFields {
    fn default() -> Self {
        Self {
            builtin: KNOWN,
            types: Vec::new(),
        }
    }
}

impl StructuredFields {
    /// An empty registry.
    pub fn empty() -> Self {
        Self {
            builtin: &[],
            types: Vec::new(),
        }
    }

    /// Registers (or replaces) the type of `name`.
    pub fn with(mut self, name: &str, ty: SfType) -> Self {
        let name = name.to_ascii_lowercase();
        self.types.retain(|(n, _)| *n != name);
        self.types.push((name, ty));
        self
    }

    /// The type of field `name`, if registered (registrations made with
    /// [`StructuredFields::with`] take precedence over the built-in list).
    pub fn get(&self, name: &str) -> Option<SfType> {
        self.types
            .iter()
            .map(|(n, t)| (n.as_str(), *t))
            .chain(self.builtin.iter().copied())
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, t)| t)
    }
}
