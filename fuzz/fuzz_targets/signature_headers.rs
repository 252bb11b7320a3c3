//! `Signature-Input` and `Signature` parsing, and base construction over a
//! fixed message: no panics; every accepted `Signature-Input` re-serializes
//! to a value that parses to the same thing.
#![no_main]
#![forbid(unsafe_code)]

use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput, Signatures};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(input) = SignatureInput::parse(data) {
        let serialized = input.serialize();
        let again = SignatureInput::parse(serialized.as_bytes()).expect("serialization must parse");
        assert_eq!(again, input, "round trip changed the value");
        let msg = Message::request("POST", "https://buyer.example.com/hook?a=1&b=2")
            .with_header("Content-Type", "application/json")
            .with_header(
                "Content-Digest",
                "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:",
            )
            .with_body(&b"{\"hello\": \"world\"}\n"[..]);
        for params in input.iter() {
            let _ = signature_base(&msg, params, &BaseOptions::default());
        }
    }
    if let Ok(sigs) = Signatures::parse(data) {
        let labels: Vec<String> = sigs.labels().map(str::to_owned).collect();
        for label in labels {
            let _ = sigs.decode(&label, BinaryEncoding::Base64Padded);
            let _ = sigs.decode(&label, BinaryEncoding::Base64UrlUnpadded);
        }
    }
});
