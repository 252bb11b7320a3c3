//! Tests for the lossy URL normalizer (`adcp_canon::normalize`).

use std::collections::BTreeMap;
use std::error::Error;
use std::path::PathBuf;

use adcp_canon::normalize::limits::{MAX_GLOB_LEN, MAX_INPUT_LEN, MAX_PATTERNS_PER_LIST, MAX_RULES_FILE_LEN};
use adcp_canon::normalize::{
    DirectoryIndex, Glob, GlobError, HostPattern, HostPatternError, NormalizeError, NormalizeOptions, Normalizer,
    ParamFilter, Rule, RulesFormat, SiteRule, SiteRules, SiteRulesError, DEFAULT_DIRECTORY_INDEX,
};
use proptest::prelude::*;

type TestResult = Result<(), Box<dyn Error>>;

/// Normalizes `input`, compares with `expected`, and checks idempotence.
fn check(n: &Normalizer, input: &str, expected: &str) -> TestResult {
    let got = n.normalize(input)?;
    assert_eq!(got, expected, "normalizing {input:?}");
    let again = n.normalize(&got)?;
    assert_eq!(again, got, "re-normalizing {got:?}");
    Ok(())
}

fn with(options: NormalizeOptions) -> Normalizer {
    Normalizer::new(options)
}

fn globs(patterns: &[&str]) -> Result<Vec<Glob>, GlobError> {
    patterns.iter().map(|p| Glob::new(p)).collect()
}

fn example_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/data")
        .join(name)
}

fn example_rules() -> Result<SiteRules, SiteRulesError> {
    SiteRules::load(example_path("site-rules.json"))
}

fn defaults(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

// ---------------------------------------------------------------------------
// The thirteen rules, one test (or more) per rule with the classic examples.
// ---------------------------------------------------------------------------

#[test]
fn rule_01_lowercase_scheme_and_host() -> TestResult {
    check(
        &Normalizer::default(),
        "HTTP://www.Example.com/",
        "http://www.example.com/",
    )
}

#[test]
fn rule_02_trailing_slash_on_empty_path_is_always_added() -> TestResult {
    check(
        &Normalizer::default(),
        "http://www.example.com",
        "http://www.example.com/",
    )
}

#[test]
fn rule_02_trailing_slash_on_directories_is_opt_in() -> TestResult {
    let n = with(NormalizeOptions {
        trailing_slash: true,
        ..NormalizeOptions::default()
    });
    check(&n, "http://www.example.com/a/b", "http://www.example.com/a/b/")?;
    check(&n, "http://www.example.com/a/b/", "http://www.example.com/a/b/")?;
    check(&n, "http://www.example.com/a/b.html", "http://www.example.com/a/b.html")?;
    check(&n, "http://www.example.com/a?x=1", "http://www.example.com/a/?x=1")?;
    check(
        &Normalizer::default(),
        "http://www.example.com/a/b",
        "http://www.example.com/a/b",
    )
}

#[test]
fn rule_03_directory_index_default_list() -> TestResult {
    let n = with(NormalizeOptions {
        directory_index: DirectoryIndex::Default,
        ..NormalizeOptions::default()
    });
    check(&n, "http://www.example.com/default.asp", "http://www.example.com/")?;
    check(&n, "http://www.example.com/a/index.html", "http://www.example.com/a/")?;
    check(
        &n,
        "http://www.example.com/a/index.html?x=1",
        "http://www.example.com/a/?x=1",
    )?;
    // Only the last segment, and only exact names.
    check(
        &n,
        "http://www.example.com/index.html/a",
        "http://www.example.com/index.html/a",
    )?;
    check(
        &n,
        "http://www.example.com/myindex.html",
        "http://www.example.com/myindex.html",
    )?;
    // Case-sensitive unless paths are case-insensitive.
    check(
        &n,
        "http://www.example.com/INDEX.HTML",
        "http://www.example.com/INDEX.HTML",
    )?;
    assert!(DEFAULT_DIRECTORY_INDEX.contains(&"default.asp"));
    assert!(DEFAULT_DIRECTORY_INDEX.contains(&"index.html"));
    Ok(())
}

#[test]
fn rule_03_directory_index_from_site_rule() -> TestResult {
    let rules = SiteRules::from_json_str(
        r#"{"sites": {"www.example.com": {"directory_index": ["default.asp", "index.html"]},
                      "other.example.com": {"directory_index": ["home.htm"]}}}"#,
    )?;
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(&n, "http://www.example.com/default.asp", "http://www.example.com/")?;
    check(&n, "http://www.example.com/a/index.html", "http://www.example.com/a/")?;
    check(
        &n,
        "http://other.example.com/a/index.html",
        "http://other.example.com/a/index.html",
    )?;
    check(&n, "http://other.example.com/a/home.htm", "http://other.example.com/a/")?;
    // Not enabled for hosts without a rule.
    check(&n, "http://example.net/a/index.html", "http://example.net/a/index.html")
}

#[test]
fn rule_03_is_off_by_default() -> TestResult {
    check(
        &Normalizer::default(),
        "http://www.example.com/a/index.html",
        "http://www.example.com/a/index.html",
    )
}

#[test]
fn rule_04_lowercase_path_on_case_insensitive_site() -> TestResult {
    let rules = SiteRules::from_toml_str("[sites.\"www.example.com\"]\ncase_insensitive_paths = true\n")?;
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(&n, "http://www.example.com/BAR.html", "http://www.example.com/bar.html")?;
    // Percent-escapes keep their uppercase hex digits; the query is untouched.
    check(
        &n,
        "http://www.example.com/A%c2%B1B?Q=X",
        "http://www.example.com/a%C2%B1b?Q=X",
    )?;
    check(
        &Normalizer::default(),
        "http://www.example.com/BAR.html",
        "http://www.example.com/BAR.html",
    )?;
    check(
        &Normalizer::default(),
        "http://other.example/BAR.html",
        "http://other.example/BAR.html",
    )
}

#[test]
fn rule_04_with_directory_index_compares_case_insensitively() -> TestResult {
    let n = with(NormalizeOptions {
        case_insensitive_paths: true,
        directory_index: DirectoryIndex::Names(vec!["Default.ASP".to_owned()]),
        ..NormalizeOptions::default()
    });
    check(
        &n,
        "http://www.example.com/Dir/DEFAULT.asp",
        "http://www.example.com/dir/",
    )
}

#[test]
fn rule_05_percent_encoding_hex_is_uppercased() -> TestResult {
    check(
        &Normalizer::default(),
        "http://www.example.com/a%c2%b1b",
        "http://www.example.com/a%C2%B1b",
    )
}

#[test]
fn rule_06_fragment_is_removed() -> TestResult {
    check(
        &Normalizer::default(),
        "http://www.example.com/bar.html#section1",
        "http://www.example.com/bar.html",
    )
}

#[test]
fn rule_07_default_port_is_removed() -> TestResult {
    check(
        &Normalizer::default(),
        "http://www.example.com:80/bar.html",
        "http://www.example.com/bar.html",
    )
}

#[test]
fn rule_08_dot_segments_are_removed() -> TestResult {
    check(
        &Normalizer::default(),
        "http://www.example.com/../a/b/../c/./d.html",
        "http://www.example.com/a/c/d.html",
    )
}

#[test]
fn rule_09_www_removed_where_site_declares_alias() -> TestResult {
    let rules = SiteRules::from_json_str(r#"{"sites": {"example.com": {"www_alias": true}}}"#)?;
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(&n, "http://www.example.com/", "http://example.com/")?;
    // The port is kept.
    check(&n, "http://www.example.com:8080/a", "http://example.com:8080/a")?;
    // Other sites keep their www.
    check(&n, "http://www.example.org/", "http://www.example.org/")?;
    // Off by default.
    check(
        &Normalizer::default(),
        "http://www.example.com/",
        "http://www.example.com/",
    )
}

#[test]
fn rule_09_global_option_and_safety_limits() -> TestResult {
    let n = with(NormalizeOptions {
        www_alias: true,
        ..NormalizeOptions::default()
    });
    check(&n, "http://www.example.com/", "http://example.com/")?;
    // Repeated www labels are removed in one pass (idempotence).
    check(&n, "http://www.www.example.com/", "http://example.com/")?;
    // Never down to a single label or to something that parses as an IP.
    check(&n, "http://www.com/", "http://www.com/")?;
    check(&n, "http://www.localhost/", "http://www.localhost/")?;
    check(&n, "http://127.0.0.1/", "http://127.0.0.1/")?;
    // Only a leading, whole `www` label.
    check(&n, "http://www2.example.com/", "http://www2.example.com/")?;
    check(&n, "http://a.www.example.com/", "http://a.www.example.com/")
}

#[test]
fn rule_10_query_sorted_by_name() -> TestResult {
    let n = with(NormalizeOptions {
        sort_query: true,
        ..NormalizeOptions::default()
    });
    check(
        &n,
        "http://www.example.com/display?lang=en&article=fred",
        "http://www.example.com/display?article=fred&lang=en",
    )?;
    check(
        &Normalizer::default(),
        "http://www.example.com/display?lang=en&article=fred",
        "http://www.example.com/display?lang=en&article=fred",
    )
}

#[test]
fn rule_10_sort_keeps_duplicates_ordered_by_value() -> TestResult {
    let n = with(NormalizeOptions {
        sort_query: true,
        ..NormalizeOptions::default()
    });
    check(
        &n,
        "http://example.com/?b=2&a=z&a=y&b=1&a=y&flag",
        "http://example.com/?a=y&a=y&a=z&b=1&b=2&flag",
    )?;
    // A bare name sorts before the same name with an empty value.
    check(&n, "http://example.com/?x=&x", "http://example.com/?x&x=")?;
    // Empty pieces are dropped when the query is rewritten.
    check(&n, "http://example.com/?b=1&&a=2&", "http://example.com/?a=2&b=1")
}

#[test]
fn rule_11_keep_list() -> TestResult {
    let n = with(NormalizeOptions {
        param_filter: ParamFilter::Keep(globs(&["id"])?),
        ..NormalizeOptions::default()
    });
    check(
        &n,
        "http://www.example.com/display?id=123&fakefoo=fakebar",
        "http://www.example.com/display?id=123",
    )?;
    // An empty allow-list drops the whole query, `?` included.
    let none = with(NormalizeOptions {
        param_filter: ParamFilter::Keep(Vec::new()),
        ..NormalizeOptions::default()
    });
    check(
        &none,
        "http://www.example.com/display?id=123",
        "http://www.example.com/display",
    )
}

#[test]
fn rule_11_remove_list_with_globs() -> TestResult {
    let n = with(NormalizeOptions {
        param_filter: ParamFilter::Remove(globs(&["fake*", "utm_*", "*_id", "s?"])?),
        ..NormalizeOptions::default()
    });
    check(
        &n,
        "http://www.example.com/display?id=123&fakefoo=fakebar",
        "http://www.example.com/display?id=123",
    )?;
    check(
        &n,
        "http://example.com/p?utm_source=a&session_id=9&s1=x&s12=y&id=1&utm=2",
        "http://example.com/p?s12=y&id=1&utm=2",
    )?;
    // Everything removed: no dangling `?`.
    check(&n, "http://example.com/p?utm_source=a", "http://example.com/p")
}

#[test]
fn rule_11_names_are_matched_percent_decoded() -> TestResult {
    let n = with(NormalizeOptions {
        param_filter: ParamFilter::Remove(globs(&["a/b", "é"])?),
        ..NormalizeOptions::default()
    });
    check(
        &n,
        "http://example.com/?a%2Fb=1&%C3%A9=2&c=3",
        "http://example.com/?c=3",
    )
}

#[test]
fn rule_12_default_params_from_site_rule() -> TestResult {
    let rules = SiteRules::from_json_str(
        r#"{"sites": {"www.example.com": {"default_params": {"id": "", "sort": "ascending"}}}}"#,
    )?;
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(
        &n,
        "http://www.example.com/display?id=&sort=ascending",
        "http://www.example.com/display",
    )?;
    check(
        &n,
        "http://www.example.com/display?id=7&sort=descending",
        "http://www.example.com/display?id=7&sort=descending",
    )?;
    // A bare name has the empty value.
    check(
        &n,
        "http://www.example.com/display?id&x=1",
        "http://www.example.com/display?x=1",
    )
}

#[test]
fn rule_12_drop_empty_params_option() -> TestResult {
    let n = with(NormalizeOptions {
        drop_empty_params: true,
        default_params: defaults(&[("sort", "ascending")]),
        ..NormalizeOptions::default()
    });
    check(
        &n,
        "http://www.example.com/display?id=&sort=ascending",
        "http://www.example.com/display",
    )?;
    // Bare flags are not "empty-valued" parameters.
    check(
        &n,
        "http://www.example.com/display?edit&id=",
        "http://www.example.com/display?edit",
    )
}

#[test]
fn rule_12_is_off_by_default() -> TestResult {
    check(
        &Normalizer::default(),
        "http://www.example.com/display?id=&sort=ascending",
        "http://www.example.com/display?id=&sort=ascending",
    )
}

#[test]
fn rule_13_empty_query_removed() -> TestResult {
    let n = with(NormalizeOptions {
        drop_empty_query: true,
        ..NormalizeOptions::default()
    });
    check(&n, "http://www.example.com/display?", "http://www.example.com/display")?;
    check(
        &Normalizer::default(),
        "http://www.example.com/display?",
        "http://www.example.com/display?",
    )?;
    // Other query rules do not remove an originally empty query.
    let sort = with(NormalizeOptions {
        sort_query: true,
        ..NormalizeOptions::default()
    });
    check(
        &sort,
        "http://www.example.com/display?",
        "http://www.example.com/display?",
    )
}

#[test]
fn all_rules_together() -> TestResult {
    let rules = SiteRules::from_toml_str(
        r#"
[sites."example.com"]
www_alias = true
case_insensitive_paths = true
directory_index = true
trailing_slash = true
remove_params = ["utm_*"]
default_params = { sort = "ascending" }
drop_empty_params = true
sort_query = true
drop_empty_query = true
"#,
    )?;
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(
        &n,
        "HTTP://WWW.Example.COM:80/A/./B/../Index.HTML?utm_source=x&z=%7e&id=&sort=ascending&a=1#frag",
        "http://example.com/a/?a=1&z=~",
    )?;
    check(&n, "http://www.example.com/Docs?", "http://example.com/docs/")
}

#[test]
fn default_normalizer_is_the_canonical_form() -> TestResult {
    let n = Normalizer::default();
    for url in [
        "http://www.example.com/a/index.html?b=2&a=1&utm_source=x&id=",
        "https://WWW.example.com/Path/?",
        "http://example.com:8080/x/y",
    ] {
        assert_eq!(n.normalize(url)?, adcp_canon::canonicalize(url)?.as_str());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Rule metadata.
// ---------------------------------------------------------------------------

#[test]
fn rule_table_is_complete_and_consistent() {
    let numbers: Vec<u8> = Rule::ALL.iter().map(|r| r.number()).collect();
    assert_eq!(numbers, (1..=13).collect::<Vec<u8>>());
    let lossy: Vec<u8> = Rule::ALL.iter().filter(|r| r.is_lossy()).map(|r| r.number()).collect();
    assert_eq!(lossy, vec![2, 3, 4, 9, 10, 11, 12, 13]);
    for rule in Rule::ALL {
        assert_eq!(rule.is_always_applied(), rule.option_names().is_empty(), "{rule}");
        assert!(!rule.description().is_empty());
    }
    assert_eq!(Rule::RemoveWww.option_names(), &["www_alias"]);
    assert_eq!(Rule::SortQuery.to_string(), "rule 10: sort query parameters");
}

// ---------------------------------------------------------------------------
// Globs.
// ---------------------------------------------------------------------------

#[test]
fn glob_matching() -> Result<(), GlobError> {
    let cases: &[(&str, &str, bool)] = &[
        ("utm_*", "utm_source", true),
        ("utm_*", "utm_", true),
        ("utm_*", "utm", false),
        ("utm_*", "xutm_source", false),
        ("*_id", "session_id", true),
        ("*_id", "_id", true),
        ("*_id", "session_idx", false),
        ("?", "a", true),
        ("?", "", false),
        ("?", "ab", false),
        ("?", "é", true),
        ("p?", "p1", true),
        ("p?", "p10", false),
        ("*", "", true),
        ("*", "anything", true),
        ("a*b*c", "abc", true),
        ("a*b*c", "aXbYc", true),
        ("a*b*c", "aXbYcZ", false),
        ("a*b*c", "acb", false),
        ("*a*", "banana", true),
        ("**x", "yyx", true),
        ("*?", "", false),
        ("*?", "z", true),
        ("id", "id", true),
        ("id", "ID", false),
        ("id", "ids", false),
        ("é*", "été", true),
    ];
    for (pattern, text, expected) in cases {
        assert_eq!(Glob::new(pattern)?.matches(text), *expected, "{pattern:?} vs {text:?}");
    }
    let g = Glob::new("utm_*")?;
    assert_eq!(g.as_str(), "utm_*");
    assert_eq!(g.to_string(), "utm_*");
    assert_eq!("utm_*".parse::<Glob>()?, g);
    Ok(())
}

#[test]
fn glob_rejects_bad_patterns() {
    assert_eq!(Glob::new(""), Err(GlobError::Empty));
    let long = "a".repeat(MAX_GLOB_LEN + 1);
    assert_eq!(
        Glob::new(&long),
        Err(GlobError::TooLong {
            len: MAX_GLOB_LEN + 1,
            max: MAX_GLOB_LEN
        })
    );
    assert!(Glob::new(&"a".repeat(MAX_GLOB_LEN)).is_ok());
    for (pattern, ch, offset) in [("[ab]", '[', 0), ("a{b,c}", '{', 1), ("a\\*", '\\', 1), ("x]", ']', 1)] {
        assert_eq!(
            Glob::new(pattern),
            Err(GlobError::UnsupportedSyntax { ch, offset }),
            "{pattern}"
        );
    }
    for (pattern, ch, offset) in [
        ("a&b", '&', 1),
        ("a=b", '=', 1),
        ("#", '#', 0),
        ("a b", ' ', 1),
        ("a\tb", '\t', 1),
    ] {
        assert_eq!(
            Glob::new(pattern),
            Err(GlobError::InvalidChar { ch, offset }),
            "{pattern}"
        );
    }
    assert!(GlobError::Empty.to_string().contains("empty"));
}

#[test]
fn glob_matching_has_no_exponential_backtracking() -> Result<(), GlobError> {
    let pattern = format!("{}b", "*a".repeat(20));
    let glob = Glob::new(&pattern)?;
    let text = "a".repeat(MAX_INPUT_LEN);
    // An exponential matcher would not finish this; the two-pointer one is
    // linear in practice (no wall-clock assertion: timing is not a test).
    assert!(!glob.matches(&text));
    assert!(glob.matches(&format!("{text}b")));
    Ok(())
}

// ---------------------------------------------------------------------------
// Host patterns and site rule precedence.
// ---------------------------------------------------------------------------

#[test]
fn host_pattern_parsing() -> Result<(), HostPatternError> {
    assert_eq!(HostPattern::parse("*")?, HostPattern::Any);
    assert_eq!(
        HostPattern::parse("Example.COM")?,
        HostPattern::Exact("example.com".to_owned())
    );
    assert_eq!(
        HostPattern::parse("*.Example.com")?,
        HostPattern::Subdomains("example.com".to_owned())
    );
    assert_eq!(HostPattern::parse("*.example.com")?.to_string(), "*.example.com");
    assert_eq!(
        HostPattern::parse("127.0.0.1")?,
        HostPattern::Exact("127.0.0.1".to_owned())
    );
    assert_eq!(HostPattern::parse(""), Err(HostPatternError::Empty));
    for bad in ["*example.com", "a.*.com", "example.*", "**.example.com", "*.*"] {
        assert_eq!(
            HostPattern::parse(bad),
            Err(HostPatternError::MisplacedWildcard),
            "{bad}"
        );
    }
    for (bad, ch) in [
        ("example.com:8080", ':'),
        ("example.com/a", '/'),
        ("user@example.com", '@'),
        ("exa mple.com", ' '),
        ("a%41.com", '%'),
    ] {
        assert_eq!(HostPattern::parse(bad), Err(HostPatternError::InvalidChar(ch)), "{bad}");
    }
    assert_eq!(
        HostPattern::parse("*.127.0.0.1"),
        Err(HostPatternError::WildcardOnIpAddress)
    );
    Ok(())
}

#[test]
fn host_pattern_matching_and_specificity() -> Result<(), HostPatternError> {
    let sub = HostPattern::parse("*.example.com")?;
    assert!(sub.matches("a.example.com"));
    assert!(sub.matches("a.b.example.com"));
    assert!(!sub.matches("example.com"));
    assert!(!sub.matches("badexample.com"));
    let exact = HostPattern::parse("example.com")?;
    assert!(exact.matches("example.com") && !exact.matches("a.example.com"));
    assert!(HostPattern::Any.matches("anything.test"));

    use std::cmp::Ordering::Greater;
    let deeper = HostPattern::parse("*.a.example.com")?;
    assert_eq!(exact.cmp_specificity(&deeper), Greater);
    assert_eq!(deeper.cmp_specificity(&sub), Greater);
    assert_eq!(sub.cmp_specificity(&HostPattern::Any), Greater);
    Ok(())
}

#[test]
fn most_specific_site_rule_wins() -> TestResult {
    let rules = SiteRules::from_json_str(
        r#"{"sites": {
            "*": {"remove_params": ["any"]},
            "*.example.com": {"remove_params": ["sub"]},
            "*.a.example.com": {"remove_params": ["deep"]},
            "x.a.example.com": {"remove_params": ["exact"]}
        }}"#,
    )?;
    let which = |host: &str| rules.lookup(host).map(|m| m.pattern().to_string());
    assert_eq!(which("x.a.example.com").as_deref(), Some("x.a.example.com"));
    assert_eq!(which("y.a.example.com").as_deref(), Some("*.a.example.com"));
    assert_eq!(which("z.y.a.example.com").as_deref(), Some("*.a.example.com"));
    assert_eq!(which("a.example.com").as_deref(), Some("*.example.com"));
    assert_eq!(which("example.com").as_deref(), Some("*"));
    assert_eq!(which("example.org").as_deref(), Some("*"));
    assert_eq!(which("127.0.0.1").as_deref(), Some("*"));

    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    let q = "?any=1&sub=2&deep=3&exact=4";
    check(
        &n,
        &format!("http://x.a.example.com/{q}"),
        "http://x.a.example.com/?any=1&sub=2&deep=3",
    )?;
    check(
        &n,
        &format!("http://y.a.example.com/{q}"),
        "http://y.a.example.com/?any=1&sub=2&exact=4",
    )?;
    check(
        &n,
        &format!("http://a.example.com/{q}"),
        "http://a.example.com/?any=1&deep=3&exact=4",
    )?;
    check(
        &n,
        &format!("http://example.com/{q}"),
        "http://example.com/?sub=2&deep=3&exact=4",
    )
}

#[test]
fn site_rules_are_not_merged_but_fall_back_to_options() -> TestResult {
    let rules = SiteRules::from_json_str(
        r#"{"sites": {
            "*.example.com": {"sort_query": true, "drop_empty_query": true},
            "a.example.com": {"remove_params": ["x"]}
        }}"#,
    )?;
    let options = NormalizeOptions {
        drop_empty_query: true,
        ..NormalizeOptions::default()
    };
    let n = Normalizer::with_site_rules(options, rules);
    // The exact rule wins; its unset sort_query comes from the options (off),
    // not from the `*.example.com` rule.
    check(&n, "http://a.example.com/?b=1&a=2&x=3", "http://a.example.com/?b=1&a=2")?;
    check(&n, "http://a.example.com/?", "http://a.example.com/")?;
    check(
        &n,
        "http://b.example.com/?b=1&a=2&x=3",
        "http://b.example.com/?a=2&b=1&x=3",
    )
}

#[test]
fn site_rule_overrides_options() -> TestResult {
    let rules = SiteRules::from_json_str(
        r#"{"sites": {"raw.example.com": {"sort_query": false, "remove_params": [], "www_alias": false}}}"#,
    )?;
    let options = NormalizeOptions {
        sort_query: true,
        www_alias: true,
        param_filter: ParamFilter::Remove(globs(&["utm_*"])?),
        ..NormalizeOptions::default()
    };
    let n = Normalizer::with_site_rules(options, rules);
    check(
        &n,
        "http://raw.example.com/?b=1&utm_x=2&a=3",
        "http://raw.example.com/?b=1&utm_x=2&a=3",
    )?;
    // The www host is kept, and it has no rule of its own: the options apply.
    check(
        &n,
        "http://www.raw.example.com/?b=1&utm_x=2&a=3",
        "http://www.raw.example.com/?a=3&b=1",
    )?;
    check(
        &n,
        "http://www.other.example.com/?b=1&utm_x=2&a=3",
        "http://other.example.com/?a=3&b=1",
    )
}

#[test]
fn www_alias_precedence_between_www_and_bare_host() -> TestResult {
    // `*` says no alias, but the more specific bare-host rule says yes.
    let rules =
        SiteRules::from_json_str(r#"{"sites": {"*": {"www_alias": false}, "example.com": {"www_alias": true}}}"#)?;
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(&n, "http://www.example.com/", "http://example.com/")?;
    check(&n, "http://www.example.org/", "http://www.example.org/")?;

    // An explicit setting on the www host itself beats the bare host.
    let rules = SiteRules::from_json_str(
        r#"{"sites": {"example.com": {"www_alias": true}, "www.example.com": {"www_alias": false}}}"#,
    )?;
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(&n, "http://www.example.com/", "http://www.example.com/")?;

    // A www-host rule that does not mention www_alias defers to the bare host.
    let rules = SiteRules::from_json_str(
        r#"{"sites": {"example.com": {"www_alias": true}, "www.example.com": {"sort_query": true}}}"#,
    )?;
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(&n, "http://www.example.com/", "http://example.com/")?;

    // `*.example.com` covers www.example.com too.
    let rules = SiteRules::from_json_str(r#"{"sites": {"*.example.com": {"www_alias": true}}}"#)?;
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(&n, "http://www.example.com/", "http://example.com/")?;
    check(&n, "http://www.a.example.com/", "http://a.example.com/")
}

#[test]
fn rules_of_the_bare_host_apply_after_www_removal() -> TestResult {
    let rules = SiteRules::from_json_str(
        r#"{"sites": {"example.com": {"www_alias": true, "sort_query": true},
                      "www.example.com": {"remove_params": ["b"]}}}"#,
    )?;
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(
        &n,
        "http://www.example.com/?c=1&b=2&a=3",
        "http://example.com/?a=3&b=2&c=1",
    )
}

#[test]
fn host_patterns_are_canonicalized_like_urls() -> TestResult {
    let rules = SiteRules::from_json_str(
        r#"{"sites": {"Bücher.Example": {"sort_query": true}, "*.ÉCOLE.example": {"www_alias": true}}}"#,
    )?;
    assert!(rules
        .get(&HostPattern::Exact("xn--bcher-kva.example".to_owned()))
        .is_some());
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(
        &n,
        "http://bücher.example/?b=1&a=2",
        "http://xn--bcher-kva.example/?a=2&b=1",
    )?;
    check(&n, "http://www.école.example/", "http://xn--cole-9oa.example/")
}

#[test]
fn programmatic_site_rules() -> TestResult {
    let mut rules = SiteRules::new();
    assert!(rules.is_empty());
    rules.insert(
        "Example.com",
        SiteRule {
            sort_query: Some(true),
            ..SiteRule::default()
        },
    )?;
    assert_eq!(rules.len(), 1);
    assert!(rules.get(&HostPattern::Exact("example.com".to_owned())).is_some());
    let dup = rules.insert("EXAMPLE.COM", SiteRule::default());
    assert!(
        matches!(&dup, Err(SiteRulesError::DuplicateHost { pattern, canonical }) if pattern == "EXAMPLE.COM" && canonical == "example.com"),
        "{dup:?}"
    );
    let bad = rules.insert(
        "a.example.com",
        SiteRule {
            directory_index: Some(DirectoryIndex::Names(vec!["a/b".to_owned()])),
            ..SiteRule::default()
        },
    );
    assert!(matches!(bad, Err(SiteRulesError::InvalidDirectoryIndex { .. })));
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
    check(&n, "http://example.com/?b=1&a=2", "http://example.com/?a=2&b=1")?;
    assert_eq!(n.site_rules().len(), 1);
    assert_eq!(n.options(), &NormalizeOptions::default());
    Ok(())
}

// ---------------------------------------------------------------------------
// Loading rules files.
// ---------------------------------------------------------------------------

#[test]
fn example_files_load_and_agree() -> TestResult {
    let json = SiteRules::load(example_path("site-rules.json"))?;
    let toml = SiteRules::load(example_path("site-rules.toml"))?;
    assert_eq!(json, toml);
    assert_eq!(json.len(), 5);
    let text = std::fs::read_to_string(example_path("site-rules.toml"))?;
    assert_eq!(SiteRules::from_toml_str(&text)?, json);
    let text = std::fs::read_to_string(example_path("site-rules.json"))?;
    assert_eq!(SiteRules::parse(&text, RulesFormat::Json)?, json);

    let legacy = json
        .get(&HostPattern::parse("legacy.example.com")?)
        .ok_or("missing legacy rule")?;
    assert_eq!(legacy.case_insensitive_paths, Some(true));
    assert_eq!(
        legacy.directory_index,
        Some(DirectoryIndex::Names(vec![
            "default.asp".to_owned(),
            "default.aspx".to_owned(),
            "index.htm".to_owned()
        ]))
    );
    let shop = json
        .get(&HostPattern::parse("shop.example.org")?)
        .ok_or("missing shop rule")?;
    assert_eq!(
        shop.default_params,
        Some(defaults(&[("id", ""), ("sort", "ascending")]))
    );
    Ok(())
}

#[test]
fn example_rules_normalize() -> TestResult {
    let n = Normalizer::with_site_rules(NormalizeOptions::default(), example_rules()?);
    check(
        &n,
        "http://www.example.com/index.html?q=rust&utm_source=mail&page=1&x=2",
        "http://example.com/?q=rust",
    )?;
    check(&n, "http://www.example.com/a/?", "http://example.com/a/")?;
    check(
        &n,
        "https://blog.example.com/post?utm_medium=x&b=1&user_sid=abc&a=2",
        "https://blog.example.com/post?a=2&b=1",
    )?;
    check(
        &n,
        "http://LEGACY.example.com/Docs/Default.ASP?utm_campaign=z",
        "http://legacy.example.com/docs/?utm_campaign=z",
    )?;
    check(
        &n,
        "http://legacy.example.com/Docs/Guide",
        "http://legacy.example.com/docs/guide/",
    )?;
    check(
        &n,
        "http://www.shop.example.org/display?id=&sort=ascending&ref=home&session1=x",
        "http://shop.example.org/display",
    )?;
    check(&n, "http://example.net/?utm_source=a&z=1", "http://example.net/?z=1")?;
    check(&n, "http://example.net/?", "http://example.net/")
}

#[test]
fn load_picks_format_by_extension() -> TestResult {
    assert_eq!(
        RulesFormat::from_path(&PathBuf::from("a.JSON")),
        Some(RulesFormat::Json)
    );
    assert_eq!(
        RulesFormat::from_path(&PathBuf::from("a.toml")),
        Some(RulesFormat::Toml)
    );
    assert_eq!(RulesFormat::from_path(&PathBuf::from("a.yaml")), None);
    assert_eq!(RulesFormat::from_path(&PathBuf::from("json")), None);

    let dir = std::env::temp_dir().join(format!("adcp-canon-normalize-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let yaml = dir.join("rules.yaml");
    std::fs::write(&yaml, "sites: {}")?;
    assert!(matches!(
        SiteRules::load(&yaml),
        Err(SiteRulesError::UnknownFormat { .. })
    ));

    // TOML content in a .json file is parsed as JSON, and fails as JSON.
    let mislabeled = dir.join("rules.json");
    std::fs::write(&mislabeled, "[sites.\"example.com\"]\nsort_query = true\n")?;
    assert!(matches!(SiteRules::load(&mislabeled), Err(SiteRulesError::Json(_))));

    let big = dir.join("big.toml");
    std::fs::write(&big, format!("# {}\n", "x".repeat(MAX_RULES_FILE_LEN)))?;
    assert!(matches!(
        SiteRules::load(&big),
        Err(SiteRulesError::TooLarge {
            max: MAX_RULES_FILE_LEN,
            ..
        })
    ));

    let missing = dir.join("missing.toml");
    let err = SiteRules::load(&missing);
    assert!(matches!(&err, Err(SiteRulesError::Io { .. })), "{err:?}");
    if let Err(e) = err {
        assert!(e.source().is_some());
        assert!(e.to_string().contains("missing.toml"));
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn empty_documents_are_empty_rule_sets() -> TestResult {
    assert!(SiteRules::from_json_str("{}")?.is_empty());
    assert!(SiteRules::from_json_str(r#"{"sites": {}}"#)?.is_empty());
    assert!(SiteRules::from_toml_str("")?.is_empty());
    Ok(())
}

#[test]
fn unknown_fields_are_rejected() {
    let json = SiteRules::from_json_str(r#"{"sites": {"example.com": {"sort_querry": true}}}"#);
    assert!(
        matches!(&json, Err(SiteRulesError::Json(e)) if e.to_string().contains("sort_querry")),
        "{json:?}"
    );
    let top = SiteRules::from_json_str(r#"{"site": {}}"#);
    assert!(matches!(top, Err(SiteRulesError::Json(_))));
    let toml = SiteRules::from_toml_str("[sites.\"example.com\"]\nwww_alias = true\nbogus = 1\n");
    assert!(
        matches!(&toml, Err(SiteRulesError::Toml(e)) if e.to_string().contains("bogus")),
        "{toml:?}"
    );
    let toml_top = SiteRules::from_toml_str("version = 1\n");
    assert!(matches!(toml_top, Err(SiteRulesError::Toml(_))));
}

#[test]
fn wrong_types_are_rejected() {
    assert!(matches!(
        SiteRules::from_json_str(r#"{"sites": {"example.com": {"sort_query": "yes"}}}"#),
        Err(SiteRulesError::Json(_))
    ));
    assert!(matches!(
        SiteRules::from_json_str(r#"{"sites": {"example.com": {"directory_index": "index.html"}}}"#),
        Err(SiteRulesError::Json(_))
    ));
    assert!(matches!(
        SiteRules::from_toml_str("[sites.\"example.com\"]\ndefault_params = { page = 1 }\n"),
        Err(SiteRulesError::Toml(_))
    ));
    assert!(matches!(
        SiteRules::from_json_str(r#"{"sites": []}"#),
        Err(SiteRulesError::Json(_))
    ));
}

#[test]
fn duplicate_hosts_are_rejected() {
    let exact = SiteRules::from_json_str(
        r#"{"sites": {"example.com": {"sort_query": true}, "example.com": {"www_alias": true}}}"#,
    );
    assert!(
        matches!(&exact, Err(SiteRulesError::DuplicateHost { pattern, .. }) if pattern == "example.com"),
        "{exact:?}"
    );
    let cased = SiteRules::from_json_str(r#"{"sites": {"*.example.com": {}, "*.EXAMPLE.com": {}}}"#);
    assert!(
        matches!(&cased, Err(SiteRulesError::DuplicateHost { canonical, .. }) if canonical == "*.example.com"),
        "{cased:?}"
    );
    let cased_toml = SiteRules::from_toml_str("[sites.\"Example.com\"]\n[sites.\"example.com\"]\n");
    assert!(
        matches!(cased_toml, Err(SiteRulesError::DuplicateHost { .. })),
        "{cased_toml:?}"
    );
    // TOML itself rejects a literally repeated table.
    let toml = SiteRules::from_toml_str("[sites.\"example.com\"]\n[sites.\"example.com\"]\n");
    assert!(matches!(toml, Err(SiteRulesError::Toml(_))));
}

#[test]
fn duplicate_default_params_are_rejected() {
    let r = SiteRules::from_json_str(r#"{"sites": {"example.com": {"default_params": {"a": "1", "a": "2"}}}}"#);
    assert!(
        matches!(&r, Err(SiteRulesError::DuplicateDefaultParam { name, .. }) if name == "a"),
        "{r:?}"
    );
    let empty = SiteRules::from_json_str(r#"{"sites": {"example.com": {"default_params": {"": "1"}}}}"#);
    assert!(matches!(empty, Err(SiteRulesError::InvalidDefaultParam { .. })));
}

#[test]
fn bad_globs_are_rejected() {
    let r = SiteRules::from_json_str(r#"{"sites": {"example.com": {"remove_params": ["utm_*", "[ab]"]}}}"#);
    assert!(
        matches!(
            &r,
            Err(SiteRulesError::InvalidGlob { site, field: "remove_params", pattern, source })
                if site == "example.com"
                    && pattern == "[ab]"
                    && *source == GlobError::UnsupportedSyntax { ch: '[', offset: 0 }
        ),
        "{r:?}"
    );
    let r = SiteRules::from_toml_str("[sites.\"*\"]\nkeep_params = [\"\"]\n");
    assert!(matches!(
        r,
        Err(SiteRulesError::InvalidGlob {
            field: "keep_params",
            source: GlobError::Empty,
            ..
        })
    ));
    let many: Vec<String> = (0..=MAX_PATTERNS_PER_LIST).map(|i| format!("\"p{i}\"")).collect();
    let r = SiteRules::from_json_str(&format!(
        r#"{{"sites": {{"example.com": {{"remove_params": [{}]}}}}}}"#,
        many.join(",")
    ));
    assert!(
        matches!(
            r,
            Err(SiteRulesError::TooMany {
                what: "remove_params",
                ..
            })
        ),
        "{r:?}"
    );
}

#[test]
fn keep_and_remove_together_are_rejected() {
    let r =
        SiteRules::from_json_str(r#"{"sites": {"example.com": {"keep_params": ["id"], "remove_params": ["utm_*"]}}}"#);
    assert!(matches!(r, Err(SiteRulesError::ConflictingParamFilters { site }) if site == "example.com"));
}

#[test]
fn bad_host_patterns_and_index_names_are_rejected() {
    for pattern in ["", "a.*.com", "example.com:8080", "*.10.0.0.1", "http://example.com"] {
        let doc = format!(r#"{{"sites": {{"{pattern}": {{}}}}}}"#);
        let r = SiteRules::from_json_str(&doc);
        assert!(
            matches!(&r, Err(SiteRulesError::InvalidHostPattern { pattern: p, .. }) if p == pattern),
            "{pattern}: {r:?}"
        );
    }
    for name in ["", ".", "..", "a/b", "a?b", "a b", "%41"] {
        let doc = format!(r#"{{"sites": {{"example.com": {{"directory_index": ["{name}"]}}}}}}"#);
        let r = SiteRules::from_json_str(&doc);
        assert!(
            matches!(&r, Err(SiteRulesError::InvalidDirectoryIndex { name: n, .. }) if n == name),
            "{name}: {r:?}"
        );
    }
}

#[test]
fn oversized_documents_are_rejected() {
    let doc = format!("{{\"sites\": {{}}, \"pad\": \"{}\"}}", "x".repeat(MAX_RULES_FILE_LEN));
    assert!(matches!(
        SiteRules::from_json_str(&doc),
        Err(SiteRulesError::TooLarge {
            max: MAX_RULES_FILE_LEN,
            ..
        })
    ));
}

#[test]
fn site_rules_errors_display_and_chain() -> TestResult {
    let r = SiteRules::from_json_str(r#"{"sites": {"example.com": {"keep_params": ["a&b"]}}}"#);
    let e = r.err().ok_or("expected an error")?;
    let text = e.to_string();
    assert!(text.contains("example.com") && text.contains("keep_params"), "{text}");
    assert!(e.source().is_some());
    Ok(())
}

// ---------------------------------------------------------------------------
// Normalizer errors.
// ---------------------------------------------------------------------------

#[test]
fn canonicalization_errors_are_wrapped() -> TestResult {
    let n = Normalizer::default();
    for bad in ["", "not a url", "http://exa mple.com/"] {
        let r = n.normalize(bad);
        let expected = adcp_canon::canonicalize(bad).err();
        assert!(expected.is_some(), "{bad:?} should not canonicalize");
        assert_eq!(r.err(), expected.map(NormalizeError::Canonicalize), "{bad:?}");
    }
    let e = n.normalize("not a url").err().ok_or("expected an error")?;
    assert!(e.source().is_some());
    assert!(e.to_string().contains("canonicalization"));
    Ok(())
}

#[test]
fn overlong_input_is_rejected() {
    let url = format!("http://example.com/{}", "a".repeat(MAX_INPUT_LEN));
    let r = Normalizer::default().normalize(&url);
    assert_eq!(
        r,
        Err(NormalizeError::InputTooLong {
            len: url.len(),
            max: MAX_INPUT_LEN
        })
    );
}

// ---------------------------------------------------------------------------
// Idempotence.
// ---------------------------------------------------------------------------

fn url_strategy() -> impl Strategy<Value = String> {
    let scheme = prop_oneof![Just("http"), Just("https"), Just("HTTP")];
    let host = prop_oneof![
        Just("www.example.com"),
        Just("example.com"),
        Just("WWW.Example.COM"),
        Just("a.b.example.com"),
        Just("www.a.example.com"),
        Just("www.www.example.com"),
        Just("legacy.example.com"),
        Just("www.shop.example.org"),
        Just("example.net"),
        Just("www.com"),
        Just("127.0.0.1"),
    ];
    let port = prop_oneof![Just(""), Just(":80"), Just(":443"), Just(":8080")];
    let segment = prop_oneof![
        Just("a".to_owned()),
        Just("B".to_owned()),
        Just(".".to_owned()),
        Just("..".to_owned()),
        Just("".to_owned()),
        Just("index.html".to_owned()),
        Just("INDEX.HTML".to_owned()),
        Just("Default.ASP".to_owned()),
        Just("%41b".to_owned()),
        Just("%c2%b1".to_owned()),
        "[a-zA-Z0-9._~-]{1,6}",
    ];
    let path = prop::collection::vec(segment, 0..5).prop_map(|s| {
        if s.is_empty() {
            String::new()
        } else {
            format!("/{}", s.join("/"))
        }
    });
    let name = prop_oneof![
        Just("utm_source"),
        Just("utm_medium"),
        Just("id"),
        Just("sort"),
        Just("page"),
        Just("q"),
        Just("fbclid"),
        Just("user_sid"),
        Just("session1"),
        Just("ref"),
        Just("Z"),
        Just("a%5Fb"),
        Just(""),
    ];
    let value = prop_oneof![
        Just(None),
        Just(Some("")),
        Just(Some("1")),
        Just(Some("ascending")),
        Just(Some("en")),
        Just(Some("%7e")),
        Just(Some("A+B")),
        Just(Some("x%2Fy")),
    ];
    let param = (name, value).prop_map(|(n, v)| match v {
        Some(v) => format!("{n}={v}"),
        None => n.to_owned(),
    });
    let query = prop::option::of(prop::collection::vec(param, 0..6).prop_map(|p| p.join("&")));
    let fragment = prop::option::of(Just("frag"));
    (scheme, host, port, path, query, fragment).prop_map(|(s, h, p, path, q, f)| {
        let mut url = format!("{s}://{h}{p}{path}");
        if let Some(q) = q {
            url.push('?');
            url.push_str(&q);
        }
        if let Some(f) = f {
            url.push('#');
            url.push_str(f);
        }
        url
    })
}

fn normalizers() -> Result<Vec<Normalizer>, Box<dyn Error>> {
    let everything = NormalizeOptions {
        trailing_slash: true,
        directory_index: DirectoryIndex::Default,
        case_insensitive_paths: true,
        www_alias: true,
        sort_query: true,
        param_filter: ParamFilter::Remove(globs(&["utm_*", "*_sid", "?"])?),
        default_params: defaults(&[("sort", "ascending"), ("page", "1")]),
        drop_empty_params: true,
        drop_empty_query: true,
    };
    let keep = NormalizeOptions {
        directory_index: DirectoryIndex::Names(vec!["index".to_owned(), "index.html".to_owned()]),
        trailing_slash: true,
        param_filter: ParamFilter::Keep(globs(&["id", "q", "a?b"])?),
        default_params: defaults(&[("id", "")]),
        ..NormalizeOptions::default()
    };
    Ok(vec![
        Normalizer::default(),
        Normalizer::new(everything.clone()),
        Normalizer::new(keep),
        Normalizer::with_site_rules(NormalizeOptions::default(), example_rules()?),
        Normalizer::with_site_rules(everything, example_rules()?),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn normalize_is_idempotent(url in url_strategy()) {
        let normalizers = normalizers().map_err(|e| TestCaseError::fail(e.to_string()))?;
        // Every generated URL is valid, so the property is never vacuous.
        prop_assert!(adcp_canon::canonicalize(&url).is_ok(), "{:?}", url);
        for (i, n) in normalizers.iter().enumerate() {
            if let Ok(once) = n.normalize(&url) {
                let twice = n.normalize(&once);
                prop_assert_eq!(twice.as_ref(), Ok(&once), "normalizer {} on {:?}", i, url);
                prop_assert!(adcp_canon::canonicalize(&once).is_ok());
            }
        }
    }

    #[test]
    fn default_normalizer_equals_canonicalize(url in url_strategy()) {
        let ours = Normalizer::default().normalize(&url).ok();
        let canonical = adcp_canon::canonicalize(&url).ok().map(|c| c.as_str().to_owned());
        prop_assert_eq!(ours, canonical);
    }

    #[test]
    fn glob_star_matches_everything_and_literals_match_themselves(text in "[a-z_%0-9é]{0,20}") {
        let star = Glob::new("*").map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(star.matches(&text));
        if !text.is_empty() {
            let literal = Glob::new(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(literal.matches(&text));
            let prefix: String = text.chars().take(1).collect();
            let glob = Glob::new(&format!("{prefix}*")).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(glob.matches(&text));
        }
    }
}
