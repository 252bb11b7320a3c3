//! ASCII inputs allocate only the output: one allocation per call.
//!
//! A binary of its own, not a module of `tests/it`: it installs
//! `CountingAllocator` as the `#[global_allocator]`, which is process-wide
//! (one per binary), so every test sharing the binary would run on it too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use adcp_test_support::{allocations_during, CountingAllocator};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

#[test]
fn ascii_inputs_allocate_only_the_output() {
    let inputs = [
        "https://seller.example.com/adcp/webhooks/delivery",
        "HTTPS://Seller.Example.COM:443/a/./b/../c?x=%7e&y=%2f#frag",
        "https://user:pw@buyer.example.org:8443/hooks//v1/?b=2&a=1",
        "http://10.1.2.3:8080/p?",
        "https://[2001:DB8::1]:8443/x/%41%42",
        "https://example.com./p",
        "https://example.com",
        "https://xn--bcher-kva.example/p",
        "https://XN--BCHER-KVA.example/p",
    ];
    // Warm up lazily initialised state (idna tables) outside the count.
    for input in inputs {
        let _ = adcp_canon::canonicalize_received(input);
    }
    for input in inputs {
        let mut received = None;
        let n = allocations_during(|| received = Some(adcp_canon::canonicalize_received(input)));
        assert!(received.is_some_and(|r| r.is_ok()), "{input}");
        assert_eq!(n, 1, "{input}: {n} allocations");
        let mut produced = None;
        let n = allocations_during(|| produced = Some(adcp_canon::canonicalize(input)));
        assert!(produced.is_some_and(|r| r.is_ok()), "{input}");
        assert_eq!(n, 1, "{input} (producer): {n} allocations");
    }
}
