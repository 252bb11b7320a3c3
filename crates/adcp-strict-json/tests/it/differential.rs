//! Differential properties.
//!
//! - A reference parser (written independently here: recursive, char by
//!   char) reads a document twice, first-wins and last-wins. Whenever the
//!   two values differ, `check` must report duplicates; more strongly,
//!   `check` reports duplicates exactly when the reference sees a repeated
//!   name in some object, with the same names in the same order.
//! - Generated documents without duplicates pass, and `parse_value` gives
//!   the value the generator meant.
//! - Arbitrary and mutated bytes never panic, and whatever `check` accepts
//!   `serde_json` accepts too, re-serializing to something `check` accepts.

use adcp_strict_json::{check, parse_value, sanitize_key_name, Limits, StrictJsonError};
use proptest::prelude::*;
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------
// A document tree that can hold duplicate names.

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Node>),
    Obj(Vec<(String, Node)>),
}

impl Node {
    /// The value a first-wins (`last == false`) or last-wins parser builds.
    fn to_value(&self, last: bool) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Num(n) => serde_json::from_str(n).unwrap(),
            Node::Str(s) => Value::String(s.clone()),
            Node::Arr(items) => Value::Array(items.iter().map(|n| n.to_value(last)).collect()),
            Node::Obj(members) => {
                let mut map = Map::new();
                for (k, v) in members {
                    if last || !map.contains_key(k) {
                        map.insert(k.clone(), v.to_value(last));
                    }
                }
                Value::Object(map)
            }
        }
    }

    /// Raw names of the (object, name) duplicates, in the order their
    /// second occurrence appears in the document.
    fn duplicates(&self, out: &mut Vec<String>) {
        match self {
            Node::Arr(items) => items.iter().for_each(|n| n.duplicates(out)),
            Node::Obj(members) => {
                let mut seen: Vec<(&str, bool)> = Vec::new();
                for (k, v) in members {
                    match seen.iter_mut().find(|(name, _)| *name == k) {
                        Some((_, reported)) if !*reported => {
                            *reported = true;
                            out.push(k.clone());
                        }
                        Some(_) => {}
                        None => seen.push((k, false)),
                    }
                    v.duplicates(out);
                }
            }
            _ => {}
        }
    }

    fn depth(&self) -> usize {
        match self {
            Node::Arr(items) => 1 + items.iter().map(Node::depth).max().unwrap_or(0),
            Node::Obj(members) => 1 + members.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
            _ => 0,
        }
    }
}

// ---------------------------------------------------------------------------
// The independent reference parser (valid JSON in, tree with every member
// out). Only run on documents serde_json accepts.

struct Reference<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

impl Reference<'_> {
    fn parse(text: &str) -> Node {
        let mut r = Reference {
            chars: text.chars().peekable(),
        };
        let node = r.value();
        r.ws();
        assert!(r.chars.next().is_none(), "reference: trailing input");
        node
    }

    fn ws(&mut self) {
        while matches!(self.chars.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.chars.next();
        }
    }

    fn value(&mut self) -> Node {
        self.ws();
        match self.chars.next().unwrap() {
            '{' => {
                let mut members = Vec::new();
                self.ws();
                if self.chars.peek() == Some(&'}') {
                    self.chars.next();
                    return Node::Obj(members);
                }
                loop {
                    self.ws();
                    assert_eq!(self.chars.next(), Some('"'));
                    let k = self.string_body();
                    self.ws();
                    assert_eq!(self.chars.next(), Some(':'));
                    let v = self.value();
                    members.push((k, v));
                    self.ws();
                    match self.chars.next() {
                        Some(',') => continue,
                        Some('}') => return Node::Obj(members),
                        other => panic!("reference: {other:?}"),
                    }
                }
            }
            '[' => {
                let mut items = Vec::new();
                self.ws();
                if self.chars.peek() == Some(&']') {
                    self.chars.next();
                    return Node::Arr(items);
                }
                loop {
                    items.push(self.value());
                    self.ws();
                    match self.chars.next() {
                        Some(',') => continue,
                        Some(']') => return Node::Arr(items),
                        other => panic!("reference: {other:?}"),
                    }
                }
            }
            '"' => Node::Str(self.string_body()),
            't' => self.word("rue", Node::Bool(true)),
            'f' => self.word("alse", Node::Bool(false)),
            'n' => self.word("ull", Node::Null),
            c => {
                let mut n = String::from(c);
                while let Some(&c) = self.chars.peek() {
                    if c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-') {
                        n.push(c);
                        self.chars.next();
                    } else {
                        break;
                    }
                }
                Node::Num(n)
            }
        }
    }

    fn word(&mut self, rest: &str, node: Node) -> Node {
        for c in rest.chars() {
            assert_eq!(self.chars.next(), Some(c));
        }
        node
    }

    fn hex4(&mut self) -> u32 {
        (0..4).fold(0, |acc, _| acc * 16 + self.chars.next().unwrap().to_digit(16).unwrap())
    }

    fn string_body(&mut self) -> String {
        let mut s = String::new();
        loop {
            match self.chars.next().unwrap() {
                '"' => return s,
                '\\' => match self.chars.next().unwrap() {
                    'u' => {
                        let u = self.hex4();
                        let c = if (0xD800..0xDC00).contains(&u) {
                            assert_eq!(self.chars.next(), Some('\\'));
                            assert_eq!(self.chars.next(), Some('u'));
                            let l = self.hex4();
                            0x10000 + ((u - 0xD800) << 10) + (l - 0xDC00)
                        } else {
                            u
                        };
                        s.push(char::from_u32(c).unwrap());
                    }
                    'b' => s.push('\u{8}'),
                    'f' => s.push('\u{c}'),
                    'n' => s.push('\n'),
                    'r' => s.push('\r'),
                    't' => s.push('\t'),
                    c => s.push(c), // " \ /
                },
                c => s.push(c),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Rendering a tree as JSON text, with pseudo-random escaping and spacing.

struct Render {
    state: u64,
    out: String,
}

impl Render {
    fn bits(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn one_in(&mut self, n: u64) -> bool {
        self.bits() % n == 0
    }

    fn ws(&mut self) {
        if self.one_in(4) {
            for _ in 0..(self.bits() % 3) {
                let w = [" ", "\t", "\n", "\r\n"][(self.bits() % 4) as usize];
                self.out.push_str(w);
            }
        }
    }

    fn unit(&mut self, u: u32) {
        if self.one_in(2) {
            self.out.push_str(&format!("\\u{u:04x}"));
        } else {
            self.out.push_str(&format!("\\u{u:04X}"));
        }
    }

    fn string(&mut self, s: &str) {
        self.out.push('"');
        for c in s.chars() {
            let short = match c {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '\n' => Some("\\n"),
                '\t' => Some("\\t"),
                '\r' => Some("\\r"),
                '\u{8}' => Some("\\b"),
                '\u{c}' => Some("\\f"),
                '/' if self.one_in(2) => Some("\\/"),
                _ => None,
            };
            let must_escape = (c as u32) < 0x20 || c == '"' || c == '\\';
            if let (Some(esc), false) = (short, self.one_in(3)) {
                self.out.push_str(esc);
            } else if must_escape || self.one_in(4) {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    self.unit(u32::from(*u));
                }
            } else {
                self.out.push(c);
            }
        }
        self.out.push('"');
    }

    fn node(&mut self, node: &Node) {
        self.ws();
        match node {
            Node::Null => self.out.push_str("null"),
            Node::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Node::Num(n) => self.out.push_str(n),
            Node::Str(s) => self.string(s),
            Node::Arr(items) => {
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.node(item);
                }
                self.ws();
                self.out.push(']');
            }
            Node::Obj(members) => {
                self.out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.ws();
                    self.string(k);
                    self.ws();
                    self.out.push(':');
                    self.node(v);
                }
                self.ws();
                self.out.push('}');
            }
        }
        self.ws();
    }
}

fn render(node: &Node, seed: u64) -> String {
    let mut r = Render {
        state: seed | 1,
        out: String::new(),
    };
    r.node(node);
    r.out
}

// ---------------------------------------------------------------------------
// Strategies.

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (-1_000_000i64..1_000_000).prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("in range", |f| f.abs() <= 1.797_693_134_862_3e308)
            .prop_map(|f| f.to_string()),
        any::<f64>()
            .prop_filter("in range", |f| f.abs() <= 1.797_693_134_862_3e308)
            .prop_map(|f| serde_json::to_string(&f).unwrap()),
        "-?(0|[1-9][0-9]{0,30})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?".prop_filter("in range", |s| {
            s.parse::<f64>().is_ok_and(|f| f.abs() <= 1.797_693_134_862_3e308)
        }),
        Just("-0".to_owned()),
        Just("1e308".to_owned()),
        Just("1.7976931348623e308".to_owned()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{0,8}",
        "[\\x00-\\x7f]{0,8}",
        "[\"\\\\/\u{0}\n\té日😀\u{202E}\u{2028}\u{FEFF}]{0,6}",
        any::<String>(),
    ]
}

/// Member names from a small alphabet, so that repetitions are frequent.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[ab]{0,2}",
        2 => "[aAé😀/\"\\\\\u{0}\n\u{202E}]{1,2}",
        1 => "[a-z_]{1,40}",
        1 => any::<String>(),
    ]
}

fn leaf() -> impl Strategy<Value = Node> {
    prop_oneof![
        Just(Node::Null),
        any::<bool>().prop_map(Node::Bool),
        number().prop_map(Node::Num),
        text().prop_map(Node::Str),
    ]
}

fn tree() -> impl Strategy<Value = Node> {
    leaf().prop_recursive(8, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Node::Arr),
            prop::collection::vec((name(), inner), 0..7).prop_map(Node::Obj),
        ]
    })
}

/// Trees whose objects never repeat a name.
fn unique_tree() -> impl Strategy<Value = Node> {
    tree().prop_map(|n| dedup(&n))
}

fn dedup(node: &Node) -> Node {
    match node {
        Node::Arr(items) => Node::Arr(items.iter().map(dedup).collect()),
        Node::Obj(members) => {
            let mut out: Vec<(String, Node)> = Vec::new();
            for (k, v) in members {
                if !out.iter().any(|(seen, _)| seen == k) {
                    out.push((k.clone(), dedup(v)));
                }
            }
            Node::Obj(out)
        }
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------
// Invariants.

/// What `check` must say about `json`, given the reference's view.
fn assert_agrees_with_reference(json: &[u8]) -> Result<(), TestCaseError> {
    let result = check(json, &Limits::default());
    let serde = serde_json::from_slice::<Value>(json);
    if let Ok(()) = &result {
        // Accepted ⇒ serde_json accepts, and its re-serialization is accepted.
        let value = serde
            .as_ref()
            .map_err(|e| TestCaseError::fail(format!("serde_json refuses: {e}")))?;
        prop_assert_eq!(&parse_value(json, &Limits::default()).unwrap(), value);
        let again = serde_json::to_vec(value).unwrap();
        prop_assert_eq!(check(&again, &Limits::default()), Ok(()));
    }
    let Ok(serde_value) = serde else {
        // Not JSON for serde_json: never accepted (checked above).
        return Ok(());
    };
    let text = std::str::from_utf8(json).unwrap();
    let tree = Reference::parse(text);
    let first = tree.to_value(false);
    let last = tree.to_value(true);
    prop_assert_eq!(&last, &serde_value, "reference last-wins == serde_json");
    let mut raw = Vec::new();
    tree.duplicates(&mut raw);
    match result {
        Ok(()) => {
            prop_assert!(raw.is_empty(), "reference sees duplicates {:?}", raw);
            prop_assert_eq!(&first, &last);
        }
        Err(StrictJsonError::DuplicateKeys(d)) => {
            prop_assert!(!raw.is_empty(), "no duplicates for the reference");
            let expected: Vec<String> = raw.iter().take(4).map(|k| sanitize_key_name(k)).collect();
            prop_assert_eq!(d.names(), expected.as_slice());
            prop_assert_eq!(d.total(), raw.len());
        }
        // serde_json is laxer in exactly two documented respects.
        Err(StrictJsonError::TooDeep { max }) => prop_assert!(tree.depth() > max),
        Err(StrictJsonError::Syntax { reason, .. }) => {
            prop_assert_eq!(reason, "number out of range (magnitude above 1.7976931348623e308)");
        }
        Err(other) => prop_assert!(false, "unexpected {other:?} for a serde_json-valid document"),
    }
    // The property the spec cares about: a first-wins / last-wins
    // disagreement is always caught.
    if first != last {
        prop_assert!(matches!(
            check(json, &Limits::default()),
            Err(StrictJsonError::DuplicateKeys(_))
        ));
    }
    Ok(())
}

const JSONISH: &[u8] = b"{}[]\":,0123456789-+.eEtrufalsn \\u/bfnrtAdD8cC\x00\n\xc3\xa9\xff";

fn jsonish_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(JSONISH.to_vec()), 0..64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn generated_documents_match_the_tree(tree in tree(), seed in any::<u64>()) {
        let json = render(&tree, seed);
        let result = check(json.as_bytes(), &Limits::default());
        let mut raw = Vec::new();
        tree.duplicates(&mut raw);
        if raw.is_empty() {
            prop_assert_eq!(&result, &Ok(()), "{}", json);
            prop_assert_eq!(parse_value(json.as_bytes(), &Limits::default()).unwrap(), tree.to_value(true));
        } else {
            let Err(StrictJsonError::DuplicateKeys(d)) = &result else {
                return Err(TestCaseError::fail(format!("{json}: {result:?}")));
            };
            let expected: Vec<String> = raw.iter().take(4).map(|k| sanitize_key_name(k)).collect();
            prop_assert_eq!(d.names(), expected.as_slice());
            prop_assert_eq!(d.total(), raw.len());
        }
        assert_agrees_with_reference(json.as_bytes())?;
    }

    #[test]
    fn documents_without_duplicates_pass(tree in unique_tree(), seed in any::<u64>()) {
        let json = render(&tree, seed);
        prop_assert_eq!(check(json.as_bytes(), &Limits::default()), Ok(()), "{}", json);
        prop_assert_eq!(parse_value(json.as_bytes(), &Limits::default()).unwrap(), tree.to_value(false));
        // serde_json's own rendering too.
        let compact = serde_json::to_vec(&tree.to_value(false)).unwrap();
        prop_assert_eq!(check(&compact, &Limits::default()), Ok(()));
        let pretty = serde_json::to_vec_pretty(&tree.to_value(false)).unwrap();
        prop_assert_eq!(check(&pretty, &Limits::default()), Ok(()));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = check(&bytes, &Limits::default());
        let _ = check(&bytes, &Limits::new(16).with_max_depth(2).with_max_string_len(3));
        assert_agrees_with_reference(&bytes)?;
    }

    #[test]
    fn jsonish_bytes_agree(bytes in jsonish_bytes()) {
        assert_agrees_with_reference(&bytes)?;
    }

    #[test]
    fn mutated_documents_agree(
        tree in tree(),
        seed in any::<u64>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, prop::sample::select(JSONISH.to_vec())), 1..4),
    ) {
        let mut bytes = render(&tree, seed).into_bytes();
        for (at, op, b) in edits {
            let i = at.index(bytes.len() + 1);
            match op {
                0 => bytes.insert(i, b),
                1 if i < bytes.len() => { bytes.remove(i); }
                _ if i < bytes.len() => bytes[i] = b,
                _ => bytes.push(b),
            }
        }
        let _ = check(&bytes, &Limits::new(64).with_max_depth(3));
        assert_agrees_with_reference(&bytes)?;
    }
}

#[test]
fn first_wins_and_last_wins_disagree_on_the_vectors_shapes() {
    for json in [
        r#"{"status":"approved","status":"rejected"}"#,
        r#"{"parts":[{"data":{"skill":"get_products","sk\u0069ll":"create_media_buy"}}]}"#,
        r#"{"method":"tasks/get","method":"SendMessage"}"#,
    ] {
        let tree = Reference::parse(json);
        assert_ne!(tree.to_value(false), tree.to_value(true));
        assert!(matches!(
            check(json.as_bytes(), &Limits::default()),
            Err(StrictJsonError::DuplicateKeys(_))
        ));
        assert_agrees_with_reference(json.as_bytes()).unwrap();
    }
}
