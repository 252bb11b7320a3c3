//! Property tests: no panics on arbitrary input, idempotence on every
//! accepted input, and agreement of the two entry points on ASCII input.

use adcp_canon::{canonicalize, canonicalize_authority_header, canonicalize_origin, canonicalize_received};
use proptest::prelude::*;

/// URL-shaped strings that hit every step: mixed-case schemes and hosts,
/// IDN, root dots, IP literals, ports, userinfo, dot segments, percent
/// triplets, consecutive slashes, queries and fragments.
fn url_like() -> impl Strategy<Value = String> {
    let scheme = prop::sample::select(vec!["https", "HTTPS", "http", "Http", "wss", "h2+x"]);
    let userinfo = prop::option::of(prop::sample::select(vec!["u", "u:p", "%41:b", "a@b"]));
    let label = prop::sample::select(vec![
        "example",
        "Seller",
        "b\u{fc}cher",
        "B\u{dc}CHER",
        "xn--bcher-kva",
        "a-b",
        "com",
        "x1",
        "fa\u{df}",
        "",
        "123",
        "0x1f",
        "-a",
        "ab--c",
        "\u{5d0}",
        "\u{3002}",
    ]);
    let name = prop::collection::vec(label, 1..4).prop_map(|l| l.join("."));
    let host = prop_oneof![
        name.clone(),
        name.prop_map(|n| format!("{n}.")),
        Just("10.0.0.1".to_owned()),
        Just("127.1".to_owned()),
        Just("[2001:DB8::1]".to_owned()),
        Just("[::1".to_owned()),
        Just("[fe80::1%25eth0]".to_owned()),
        Just("fe80::1".to_owned()),
    ];
    let port = prop::option::of(prop::sample::select(vec![
        "", "443", "80", "8443", "0443", "65536", "x",
    ]));
    let segment = prop::sample::select(vec![
        "a",
        "B",
        ".",
        "..",
        "",
        "%2e",
        "%2E%2E",
        "%7e",
        "%41",
        "%2f",
        "%3A",
        "%zz",
        "%",
        "caf\u{e9}",
        "x|y",
        "a\\b",
        " ",
        "~",
    ]);
    let path = prop::collection::vec(segment, 0..6).prop_map(|s| {
        if s.is_empty() {
            String::new()
        } else {
            format!("/{}", s.join("/"))
        }
    });
    let query = prop::option::of(prop::sample::select(vec![
        "", "b=2&a=1", "x=a+b", "x=%7e%2f", "q=%ZZ", "a?b/c", "\u{fc}",
    ]));
    let fragment = prop::option::of(prop::sample::select(vec!["", "frag", "a#b"]));
    (scheme, userinfo, host, port, path, query, fragment).prop_map(|(s, u, h, p, path, q, f)| {
        let mut url = format!("{s}://");
        if let Some(u) = u {
            url.push_str(u);
            url.push('@');
        }
        url.push_str(&h);
        if let Some(p) = p {
            url.push(':');
            url.push_str(p);
        }
        url.push_str(&path);
        if let Some(q) = q {
            url.push('?');
            url.push_str(q);
        }
        if let Some(f) = f {
            url.push('#');
            url.push_str(f);
        }
        url
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = canonicalize_received(&bytes);
        let _ = canonicalize_authority_header(&bytes, "https");
        if let Ok(s) = std::str::from_utf8(&bytes) {
            let _ = canonicalize(s);
            let _ = canonicalize_origin(s);
        }
    }

    #[test]
    fn never_panics_on_arbitrary_strings(s in any::<String>()) {
        let _ = canonicalize(&s);
        let _ = canonicalize_received(&s);
        let _ = canonicalize_origin(&s);
    }

    #[test]
    fn idempotent_on_accepted_input(url in url_like()) {
        if let Ok(once) = canonicalize(&url) {
            let twice = canonicalize(once.as_str());
            prop_assert_eq!(twice.as_ref().map(|u| u.as_str()), Ok(once.as_str()));
            let received = canonicalize_received(once.as_str());
            prop_assert_eq!(received.as_ref().map(|u| u.as_str()), Ok(once.as_str()));
            prop_assert!(once.as_str().is_ascii());
            // The authority accessor is what a received header must equal.
            let header = canonicalize_authority_header(once.authority().as_bytes(), once.scheme());
            prop_assert_eq!(header.as_deref(), Ok(once.authority()));
        }
    }

    #[test]
    fn entry_points_agree_on_ascii_input(url in url_like()) {
        let producer = canonicalize(&url).map_err(|e| e.kind());
        let received = canonicalize_received(&url).map_err(|e| e.kind());
        if url.is_ascii() {
            prop_assert_eq!(producer, received);
        } else {
            // Raw non-ASCII is never accepted off the wire.
            prop_assert!(received.is_err());
        }
    }

    /// `:0…0N` is port N on every entry point: written `:N`, or dropped
    /// when N is the scheme's default.
    #[test]
    fn leading_zeros_in_a_port_are_dropped(
        port in 1u16..=65535,
        zeros in 0usize..12,
        scheme in prop::sample::select(vec!["https", "http", "wss"]),
        host in prop::sample::select(vec!["seller.example.com", "[2001:db8::1]", "10.0.0.1"]),
    ) {
        let padded = format!("{}{port}", "0".repeat(zeros));
        let default = match scheme {
            "https" => Some(443),
            "http" => Some(80),
            _ => None,
        };
        let authority = if default == Some(port) { host.to_owned() } else { format!("{host}:{port}") };
        let want = format!("{scheme}://{authority}/p");
        let url = format!("{scheme}://{host}:{padded}/p");
        prop_assert_eq!(canonicalize(&url).map(|u| u.as_str().to_owned()), Ok(want.clone()));
        let received = canonicalize_received(&url);
        prop_assert_eq!(received.as_ref().map(|u| u.as_str()), Ok(want.as_str()));
        prop_assert_eq!(received.as_ref().map(|u| u.port_or_default()), Ok(Some(port)));
        let header = canonicalize_authority_header(format!("{host}:{padded}").as_bytes(), scheme);
        prop_assert_eq!(header, Ok(authority));
    }

    #[test]
    fn idempotent_on_arbitrary_ascii(s in "[a-zA-Z][a-zA-Z0-9+.-]{0,5}://[ -~]{0,40}") {
        if let Ok(once) = canonicalize_received(&s) {
            let twice = canonicalize_received(once.as_str());
            prop_assert_eq!(twice.as_ref().map(|u| u.as_str()), Ok(once.as_str()));
            prop_assert_eq!(canonicalize(&s).map_err(|e| e.kind()), Ok(once));
        }
    }
}

/// Guards the properties above against passing vacuously: the generator
/// must produce a healthy share of accepted URLs.
#[test]
fn generator_produces_accepted_urls() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = url_like();
    let mut accepted = 0;
    for _ in 0..2000 {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            continue;
        };
        if canonicalize(&tree.current()).is_ok() {
            accepted += 1;
        }
    }
    assert!(accepted >= 300, "only {accepted} of 2000 generated URLs were accepted");
}
