//! The message abstraction: order and duplicates preserved, RFC 9110
//! combination, the `http::Request` adapter.

use adcp_sigbase::{Error, Message, SignatureHeader, SignatureInput};

#[test]
fn http_request_adapter_keeps_duplicates_in_order() {
    let req = http::Request::builder()
        .method("POST")
        .uri("https://buyer.example.com/hook?x=1")
        .header("Content-Type", "application/json")
        .header("X-Multi", "a")
        .header("x-multi", "b ")
        .header("X-Multi", " c")
        .body(b"{}".to_vec())
        .unwrap();
    let msg = Message::from_http(&req);
    assert_eq!(msg.method(), "POST");
    assert_eq!(msg.target_uri(), "https://buyer.example.com/hook?x=1");
    assert_eq!(msg.body(), Some(&b"{}"[..]));
    let lines: Vec<&[u8]> = msg.field_lines("X-MULTI").collect();
    assert_eq!(lines, vec![&b"a"[..], b"b ", b" c"]);
    assert_eq!(msg.combined_field("x-multi").unwrap().as_deref(), Some(&b"a, b, c"[..]));
    assert_eq!(msg.combined_field("absent").unwrap(), None);
}

#[test]
fn origin_form_requests_take_an_explicit_target() {
    let req = http::Request::builder()
        .uri("/hook?x=1")
        .header("Host", "buyer.example.com")
        .body(Vec::new())
        .unwrap();
    let msg = Message::from_http(&req);
    assert_eq!(msg.target_uri(), "/hook?x=1");
    let msg = msg.with_target_uri("https://buyer.example.com/hook?x=1");
    assert_eq!(msg.target_uri(), "https://buyer.example.com/hook?x=1");
}

#[test]
fn a_label_repeated_on_a_second_line_is_a_duplicate() {
    let msg = Message::request("POST", "https://h.example/")
        .with_header("Signature-Input", r#"sig1=("@method");created=1"#)
        .with_header("Signature-Input", r#"sig1=("@authority");created=2"#);
    assert_eq!(
        SignatureInput::from_message(&msg),
        Err(Error::DuplicateLabel {
            header: SignatureHeader::SignatureInput,
            label: "sig1".into()
        })
    );
    let msg = Message::request("POST", "https://h.example/")
        .with_header("Signature-Input", r#"sig1=("@method");created=1"#)
        .with_header("Signature-Input", r#"sig2=("@authority");created=2"#);
    let input = SignatureInput::from_message(&msg).unwrap().unwrap();
    assert_eq!(input.iter().map(|p| p.label()).collect::<Vec<_>>(), ["sig1", "sig2"]);
}

#[test]
fn singleton_fields() {
    let one = Message::request("POST", "https://h.example/").with_header("Content-Type", " application/json ");
    assert_eq!(
        one.single_field("content-type").unwrap(),
        Some(&b"application/json"[..])
    );
    let two_lines = one.clone().with_header("content-type", "text/plain");
    assert!(matches!(
        two_lines.single_field("Content-Type"),
        Err(Error::MultiValuedField { .. })
    ));
    let quoted =
        Message::request("POST", "https://h.example/").with_header("Content-Type", "multipart/mixed; boundary=\"a,b\"");
    assert!(quoted.single_field("content-type").is_ok());
    let injected = Message::request("POST", "https://h.example/").with_header("X-A", "a\r\nb");
    assert!(matches!(
        injected.combined_field("x-a"),
        Err(Error::InvalidFieldValue { .. })
    ));
}
