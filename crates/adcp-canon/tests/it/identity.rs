//! The canonicalizer's behaviour beyond the conformance vectors: the
//! decisions documented in the crate docs, and one rejection per error kind.

use adcp_canon::{
    canonicalize, canonicalize_authority_header, canonicalize_origin, canonicalize_received, derive_authority,
    Component, ErrorKind, HostKind, Profile, MAX_INPUT_LEN,
};

#[track_caller]
fn ok(input: &str, want: &str) {
    let got = canonicalize(input).unwrap_or_else(|e| panic!("{input}: {e}"));
    assert_eq!(got.as_str(), want, "{input}");
    if input.is_ascii() {
        let received = canonicalize_received(input).unwrap_or_else(|e| panic!("{input} (received): {e}"));
        assert_eq!(received.as_str(), want, "{input} (received)");
    }
    let again = canonicalize(want).unwrap_or_else(|e| panic!("{want}: {e}"));
    assert_eq!(again.as_str(), want, "not idempotent: {input}");
}

#[track_caller]
fn rejected(input: &str, kind: ErrorKind) {
    let err = canonicalize(input).expect_err(input);
    assert_eq!(err.kind(), kind, "{input}: {err}");
    assert_eq!(err.code(Profile::Webhook), "webhook_target_uri_malformed");
    assert_eq!(err.code(Profile::Request), "request_target_uri_malformed");
    if input.is_ascii() {
        let err = canonicalize_received(input).expect_err(input);
        assert_eq!(err.kind(), kind, "{input} (received): {err}");
    }
}

#[test]
fn percent_encoded_dot_segments_are_resolved_idempotently() {
    ok("https://h/a/%2E%2E/b", "https://h/b");
    ok("https://h/a/%2e/b", "https://h/a/b");
    ok("https://h/a/.%2E/b", "https://h/b");
    ok("https://h/a/%2E%2E%2Fb", "https://h/a/..%2Fb");
    ok("https://h/a/..%2Fb/../c", "https://h/a/c");
}

#[test]
fn query_percent_encoding_is_normalized_but_never_reencoded() {
    ok("https://h/p?x=%7e&y=%2f", "https://h/p?x=~&y=%2F");
    ok("https://h/p?x=%41%42", "https://h/p?x=AB");
    ok("https://h/p?b=2&a=1&b=1", "https://h/p?b=2&a=1&b=1");
    ok("https://h/p?q=a+b%20c", "https://h/p?q=a+b%20c");
    ok("https://h/p?a/b?c", "https://h/p?a/b?c");
    ok("https://h/p?x=|{}^", "https://h/p?x=|{}^");
    ok("https://h/p?", "https://h/p?");
    ok("https://h/p?#f", "https://h/p?");
    ok("https://h/p#f?x", "https://h/p");
}

#[test]
fn path_preserves_what_http_stacks_deliver() {
    ok("https://h/a|b/{c}/\"d\"", "https://h/a|b/{c}/\"d\"");
    ok("https://h/a//b///c", "https://h/a//b///c");
    ok("https://h/%3a%2f%3F", "https://h/%3A%2F%3F");
    ok("https://h/%7E%2D%5F%2E", "https://h/~-_.");
    ok("https://h/a:b@c;d=e,f", "https://h/a:b@c;d=e,f");
}

#[test]
fn non_ascii_path_is_percent_encoded_by_producers_and_rejected_when_received() {
    let url = canonicalize("https://h/caf\u{e9}?q=\u{fc}").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(url.as_str(), "https://h/caf%C3%A9?q=%C3%BC");
    let err = canonicalize_received("https://h/caf\u{e9}").expect_err("non-ASCII path");
    assert_eq!((err.kind(), err.component()), (ErrorKind::NonAscii, Component::Path));
    let err = canonicalize_received("https://h/p?q=\u{fc}").expect_err("non-ASCII query");
    assert_eq!((err.kind(), err.component()), (ErrorKind::NonAscii, Component::Query));
    let err = canonicalize_received(b"https://h\xff/p").expect_err("invalid UTF-8 host");
    assert_eq!(err.kind(), ErrorKind::NonAscii);
}

#[test]
fn hosts() {
    ok("https://EXAMPLE.com/", "https://example.com/");
    ok("https://xn--BCHER-KVA.example/", "https://xn--bcher-kva.example/");
    ok("https://b\u{fc}cher.example/", "https://xn--bcher-kva.example/");
    ok("https://B\u{dc}CHER.example./", "https://xn--bcher-kva.example/");
    // Nontransitional: ß and ς are kept, not mapped to ss / σ.
    ok("https://fa\u{df}.de/", "https://xn--fa-hia.de/");
    // Ideographic full stop is a label separator under UTS-46.
    ok("https://b\u{fc}cher\u{3002}example/", "https://xn--bcher-kva.example/");
    ok("https://10.0.0.1/", "https://10.0.0.1/");
    ok("https://10.0.0.1:8443/", "https://10.0.0.1:8443/");
    ok("https://[::FFFF:192.0.2.1]/", "https://[::ffff:192.0.2.1]/");
    ok("https://[2001:DB8:0:0::1]/", "https://[2001:db8:0:0::1]/");
    ok("https://a-b.c1.example/", "https://a-b.c1.example/");
    let url = canonicalize("https://[::1]:8443/").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (url.host(), url.host_kind(), url.port()),
        ("[::1]", HostKind::Ipv6, Some(8443))
    );
    let url = canonicalize("https://1.2.3.4/").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(url.host_kind(), HostKind::Ipv4);
}

#[test]
fn host_rejections() {
    rejected("https://example.com../p", ErrorKind::MultipleTrailingDots);
    rejected("https://example..com/p", ErrorKind::EmptyLabel);
    rejected("https://.example.com/p", ErrorKind::EmptyLabel);
    rejected("https://./p", ErrorKind::EmptyLabel);
    rejected("https://exa_mple.com/", ErrorKind::InvalidHostCharacter);
    rejected("https://exa mple.com/", ErrorKind::InvalidHostCharacter);
    rejected("https://exa!mple.com/", ErrorKind::InvalidHostCharacter);
    rejected("https://ex%61mple.com/", ErrorKind::PercentEncodedHost);
    rejected("https://-example.com/", ErrorKind::Idna);
    rejected("https://example-.com/", ErrorKind::Idna);
    rejected("https://ab--cd.example/", ErrorKind::Idna);
    rejected("https://xn--invalid-.example/", ErrorKind::Idna);
    rejected(&format!("https://{}.com/", "a".repeat(64)), ErrorKind::Idna);
    rejected("https://127.1/", ErrorKind::AmbiguousNumericHost);
    rejected("https://2130706433/", ErrorKind::AmbiguousNumericHost);
    rejected("https://0x7f.0.0.1/", ErrorKind::AmbiguousNumericHost);
    rejected("https://a.0x10/", ErrorKind::AmbiguousNumericHost);
    rejected("https://010.0.0.1/", ErrorKind::AmbiguousNumericHost);
    rejected("https://256.0.0.1/", ErrorKind::AmbiguousNumericHost);
    rejected("https://1.2.3.4./", ErrorKind::AmbiguousNumericHost);
    rejected("https://example.123/", ErrorKind::AmbiguousNumericHost);
    rejected(
        "https://\u{ff11}.\u{ff12}.\u{ff13}.\u{ff14}/",
        ErrorKind::AmbiguousNumericHost,
    );
    rejected("https://[::1/p", ErrorKind::UnclosedBracket);
    rejected("https://fe80::1/p", ErrorKind::BareIpv6);
    rejected("https://[fe80::1%25eth0]/p", ErrorKind::Ipv6ZoneId);
    rejected("https://[fe80::1%eth0]/p", ErrorKind::Ipv6ZoneId);
    rejected("https://[::g]/p", ErrorKind::InvalidIpv6);
    rejected("https://[1.2.3.4]/p", ErrorKind::InvalidIpv6);
    rejected("https://[v1.x]/p", ErrorKind::IpvFuture);
    rejected("https://[::1]x/p", ErrorKind::InvalidAfterBracket);
    rejected("https://a[b]/p", ErrorKind::InvalidHostCharacter);
    // CheckBidi: an LTR label may not contain right-to-left characters, and
    // labels of a bidi domain name may not start with a digit.
    ok("https://\u{5d0}1.example/", "https://xn--1-zhc.example/");
    rejected("https://a\u{5d0}.example/", ErrorKind::Idna);
    rejected("https://1\u{5d0}.example/", ErrorKind::Idna);
}

#[test]
fn authority_shapes() {
    ok("https://user:pass@h.example/", "https://h.example/");
    ok("https://u%20x:p@h.example/", "https://h.example/");
    ok("https://h.example:/p", "https://h.example/p");
    ok("http://h.example:443/", "http://h.example:443/");
    ok("https://h.example:80/", "https://h.example:80/");
    ok("ftp://h.example:21/", "ftp://h.example:21/");
    rejected("https:///p", ErrorKind::EmptyAuthority);
    rejected("https://", ErrorKind::EmptyAuthority);
    rejected("https://user@/p", ErrorKind::MissingHost);
    rejected("https://:443/p", ErrorKind::MissingHost);
    rejected("https://a@b@h.example/", ErrorKind::InvalidUserinfo);
    rejected("https://u s@h.example/", ErrorKind::InvalidUserinfo);
    rejected("https://u%2@h.example/", ErrorKind::InvalidPercentEncoding);
    rejected("https://h.example:0/", ErrorKind::InvalidPort);
    rejected("https://h.example:0000/", ErrorKind::InvalidPort);
    rejected("https://h.example:065536/", ErrorKind::InvalidPort);
    rejected("https://h.example:65536/", ErrorKind::InvalidPort);
    rejected("https://h.example:8a/", ErrorKind::InvalidPort);
    rejected("https://h.example:-1/", ErrorKind::InvalidPort);
}

/// RFC 3986 allows leading zeros in a port and both official SDKs read the
/// number: the port is canonicalized by value on every path (producer,
/// received URL, `Host` / `:authority`), so `:0443` is the https default.
#[test]
fn leading_zero_ports_are_canonicalized_by_number() {
    ok("https://seller.example.com:0443/p", "https://seller.example.com/p");
    ok(
        "https://seller.example.com:08443/p",
        "https://seller.example.com:8443/p",
    );
    ok("http://h.example:00080/", "http://h.example/");
    ok("https://[::1]:0443/", "https://[::1]/");
    ok("https://h.example:0065535/", "https://h.example:65535/");
    ok("https://bücher.example:08443/", "https://xn--bcher-kva.example:8443/");
    let url = canonicalize_received("https://h.example:08443/").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(url.port(), Some(8443));
    assert_eq!(url.authority(), "h.example:8443");

    let h = |v: &str| canonicalize_authority_header(v.as_bytes(), "https");
    assert_eq!(h("seller.example.com:0443").as_deref(), Ok("seller.example.com"));
    assert_eq!(h("seller.example.com:08443").as_deref(), Ok("seller.example.com:8443"));
    assert_eq!(h("[::1]:08443").as_deref(), Ok("[::1]:8443"));
    assert_eq!(
        h("seller.example.com:00").map_err(|e| e.kind()),
        Err(ErrorKind::InvalidPort)
    );

    let target = canonicalize_received("https://seller.example.com:0443/p").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        derive_authority(&target, None, Some(b"seller.example.com")),
        Ok("seller.example.com")
    );
    assert_eq!(
        derive_authority(
            &target,
            Some(b"seller.example.com:443"),
            Some(b"seller.example.com:0443")
        ),
        Ok("seller.example.com")
    );
    let target = canonicalize_received("https://seller.example.com:8443/p").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        derive_authority(&target, None, Some(b"seller.example.com:08443")),
        Ok("seller.example.com:8443")
    );
}

#[test]
fn scheme_and_shape_rejections() {
    rejected("", ErrorKind::Empty);
    rejected("example.com/p", ErrorKind::MissingScheme);
    rejected("//example.com/p", ErrorKind::MissingScheme);
    rejected("//example.com:1/p", ErrorKind::InvalidScheme);
    rejected("1https://example.com/", ErrorKind::InvalidScheme);
    rejected("ht tp://example.com/", ErrorKind::InvalidScheme);
    rejected(" https://example.com/", ErrorKind::InvalidScheme);
    rejected("https:example.com/p", ErrorKind::MissingAuthority);
    rejected("mailto:a@example.com", ErrorKind::MissingAuthority);
    rejected("https://h/p q", ErrorKind::InvalidCharacter);
    rejected("https://h/p\t", ErrorKind::InvalidCharacter);
    rejected("https://h/p?x=\n", ErrorKind::InvalidCharacter);
    rejected("https://h/p\u{7f}", ErrorKind::InvalidCharacter);
    rejected("https://h/a\\b", ErrorKind::Backslash);
    rejected("https://h/%", ErrorKind::InvalidPercentEncoding);
    rejected("https://h/%2", ErrorKind::InvalidPercentEncoding);
    rejected("https://h/%zz", ErrorKind::InvalidPercentEncoding);
    rejected("https://h/p?%2%41", ErrorKind::InvalidPercentEncoding);
    ok("Https+X-1.a://h/", "https+x-1.a://h/");
    let long = format!("https://h/{}", "a".repeat(MAX_INPUT_LEN));
    rejected(&long, ErrorKind::TooLong);
}

#[test]
fn accessors() {
    let url = canonicalize("HTTPS://Sub.Example.com:8443/a/b?x=1#f").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(url.scheme(), "https");
    assert_eq!(url.host(), "sub.example.com");
    assert_eq!(url.port(), Some(8443));
    assert_eq!(url.port_or_default(), Some(8443));
    assert_eq!(url.authority(), "sub.example.com:8443");
    assert_eq!(url.origin(), "https://sub.example.com:8443");
    assert_eq!(url.path(), "/a/b");
    assert_eq!(url.query(), Some("x=1"));
    assert_eq!(url.path_and_query(), "/a/b?x=1");
    assert_eq!(url.to_string(), "https://sub.example.com:8443/a/b?x=1");
    let url = canonicalize("https://h").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (url.path(), url.query(), url.port(), url.port_or_default()),
        ("/", None, None, Some(443))
    );
    let url = canonicalize("https://h?").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((url.path(), url.query()), ("/", Some("")));
}

#[test]
fn errors_name_the_offending_part_and_are_log_safe() {
    let err = canonicalize("https://exa\u{202e}mple.com/").expect_err("bidi override");
    assert_eq!(err.component(), Component::Host);
    let msg = err.to_string();
    assert!(msg.contains("host"), "{msg}");
    assert!(!msg.contains('\u{202e}'), "raw bidi control leaked into: {msg}");
    let err = canonicalize("https://h.example:99999/").expect_err("port");
    assert_eq!(err.component(), Component::Port);
    assert!(err.to_string().contains("99999"), "{err}");
    assert_eq!(err.offset(), 18);
    let err = canonicalize_received("https://h/a\nb").expect_err("newline");
    assert!(!err.to_string().contains('\n'));
}

#[test]
fn authority_header_canonicalization() {
    let h = |v: &str| canonicalize_authority_header(v.as_bytes(), "https");
    assert_eq!(h("Seller.Example.COM").as_deref(), Ok("seller.example.com"));
    assert_eq!(h("seller.example.com.:443").as_deref(), Ok("seller.example.com"));
    assert_eq!(h("seller.example.com:8443").as_deref(), Ok("seller.example.com:8443"));
    assert_eq!(h("[2001:DB8::1]").as_deref(), Ok("[2001:db8::1]"));
    assert_eq!(
        canonicalize_authority_header(b"h.example:80", "HTTP").as_deref(),
        Ok("h.example")
    );
    for bad in [
        "",
        ":443",
        "user@h.example",
        "h.example/p",
        "b\u{fc}cher.example",
        "h..example",
        "fe80::1",
    ] {
        assert!(h(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn authority_derivation() {
    let target = canonicalize_received("https://buyer.example.com:8443/hook").unwrap_or_else(|e| panic!("{e}"));
    let d = |a: Option<&str>, h: Option<&str>| {
        derive_authority(&target, a.map(str::as_bytes), h.map(str::as_bytes)).map_err(|e| e.kind())
    };
    assert_eq!(d(None, Some("buyer.example.com:8443")), Ok("buyer.example.com:8443"));
    assert_eq!(d(Some("BUYER.example.com.:8443"), None), Ok("buyer.example.com:8443"));
    assert_eq!(
        d(Some("buyer.example.com:8443"), Some("Buyer.Example.com:8443")),
        Ok("buyer.example.com:8443")
    );
    assert_eq!(
        d(Some("buyer.example.com:8443"), Some("other.example.com:8443")),
        Err(ErrorKind::AuthorityHeadersDisagree)
    );
    assert_eq!(d(None, Some("buyer.example.com")), Err(ErrorKind::AuthorityMismatch));
    assert_eq!(d(Some("evil.example:8443"), None), Err(ErrorKind::AuthorityMismatch));
    assert_eq!(d(None, None), Err(ErrorKind::MissingAuthorityHeader));
    assert_eq!(d(None, Some("bad host")), Err(ErrorKind::InvalidHostCharacter));
}

#[test]
fn origin_canonicalization() {
    let o = |v: &str| canonicalize_origin(v);
    assert_eq!(o("Example.COM").as_deref(), Ok("example.com"));
    assert_eq!(o("example.com.").as_deref(), Ok("example.com"));
    assert_eq!(o("B\u{fc}cher.example").as_deref(), Ok("xn--bcher-kva.example"));
    assert_eq!(o("xn--bcher-kva.example").as_deref(), Ok("xn--bcher-kva.example"));
    assert_eq!(o("keys.example.com:8443").as_deref(), Ok("keys.example.com"));
    assert_eq!(
        o("https://Keys.Example.com:8443/.well-known/jwks.json").as_deref(),
        Ok("keys.example.com")
    );
    assert_eq!(o("[::1]").as_deref(), Ok("[::1]"));
    assert!(o("").is_err());
    assert!(o("exa mple.com").is_err());
    assert!(o("https:///x").is_err());
}
