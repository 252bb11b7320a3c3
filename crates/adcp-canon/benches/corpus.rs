//! A deterministic corpus of realistic webhook URLs for benchmarks.
//!
//! Mixed schemes and case, ports (default, non-default, none), IDN hosts
//! (U-labels and A-labels), IPv4 and IPv6 literals, userinfo, dot segments,
//! percent-encoding, queries and fragments, in the proportions a buyer's
//! receiver sees them. Generated from a fixed seed so runs compare.

/// xorshift64*: tiny and deterministic, enough to shuffle a corpus.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const HOSTS: &[&str] = &[
    "buyer.example.com",
    "hooks.dsp.example.net",
    "Webhooks.Agency-Example.COM",
    "api.eu-west-1.buyer.example.io",
    "callbacks.trading-desk.example.co.uk",
    "adcp.media-buyer.example",
    "xn--bcher-kva.example",
    "bücher.example",
    "Müller-Media.example.de",
    "日本.example.jp",
    "пример.example",
    "10.20.30.40",
    "[2001:DB8::1]",
    "buyer.example.com.",
];
const PORTS: &[&str] = &["", "", "", "", ":443", ":8443", ":8080", ":9000"];
const SEGMENTS: &[&str] = &[
    "webhooks",
    "adcp",
    "v1",
    "v2",
    "callbacks",
    "delivery_report",
    "task-status",
    "media-buys",
    "creatives",
    "%7Eaccount",
    "op%2Fid",
    "acct%3A42",
    "a%20b",
    ".",
    "..",
];
const IDS: &[&str] = &[
    "mb_7f3a9c21",
    "task-0042",
    "op_2026-11-30",
    "7c9e6679-7425-40de-944b-e07fc1f90ae7",
];
const QUERIES: &[&str] = &[
    "",
    "token=3f9a7c",
    "account=acme&region=eu",
    "b=2&a=1&c=3",
    "x=a+b&y=%2f",
    "utm_source=adcp&utm_medium=webhook",
    "sig=AbC%3D%3D&ts=1790000000",
];

/// `n` URLs; every one is accepted by the AdCP canonicalizer.
pub fn webhook_urls(n: usize) -> Vec<String> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .map(|_| {
            let scheme = if rng.chance(10) {
                "http"
            } else if rng.chance(5) {
                "HTTPS"
            } else {
                "https"
            };
            let mut url = format!("{scheme}://");
            if rng.chance(3) {
                url.push_str("hook:s3cret@");
            }
            url.push_str(rng.pick(HOSTS));
            url.push_str(rng.pick(PORTS));
            let depth = 1 + rng.next() % 4;
            for _ in 0..depth {
                url.push('/');
                url.push_str(rng.pick(SEGMENTS));
            }
            url.push('/');
            url.push_str(rng.pick(IDS));
            if rng.chance(60) {
                url.push('?');
                url.push_str(rng.pick(QUERIES));
            }
            if rng.chance(5) {
                url.push_str("#section");
            }
            url
        })
        .collect()
}
