//! The cost of the strict check on top of parsing: `check` +
//! `serde_json::from_slice::<Value>` against `serde_json::from_slice::<Value>`
//! alone, on a 1 KiB and a 64 KiB webhook-like body. Prints the ratios
//! (checked / plain, and check alone / plain) after the benchmarks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code: failing loudly is the point

use adcp_strict_json::{check, Limits};
use criterion::{black_box, BenchmarkId, Criterion, Throughput};
use serde_json::Value;
use std::path::Path;

const GROUP: &str = "strict_json";

/// A media-buy webhook notification padded with packages to about `target` bytes.
fn webhook(target: usize) -> Vec<u8> {
    let mut packages = Vec::new();
    let mut i = 0;
    loop {
        let doc = render(&packages);
        if doc.len() >= target {
            return doc;
        }
        packages.push(format!(
            r#"{{"package_id":"pkg_{i:05}","status":"active","budget":{{"amount":{}.{:02},"currency":"USD"}},"pacing":"even","impressions":{},"creative_assignments":[{{"creative_id":"cr_{i}_a","weight":60}},{{"creative_id":"cr_{i}_b","weight":40}}],"targeting_overlay":{{"geo_country_any_of":["US","CA"],"axe_include_segment":"caf\u00e9_lovers"}}}}"#,
            1000 + i * 37,
            i % 100,
            i * 1234
        ));
        i += 1;
    }
}

fn render(packages: &[String]) -> Vec<u8> {
    format!(
        r#"{{"idempotency_key":"whk_01HZX3K9Q8W2M4N6P7R5T3V1Y0","task_id":"task_456","operation_id":"op_789","task_type":"media_buy_delivery","status":"completed","timestamp":"2026-04-18T12:00:00Z","result":{{"media_buy_id":"mb_001","buyer_ref":"campaign-2026-q2","status":"active","notes":"Delivery on track \u2014 see report","packages":[{}]}}}}"#,
        packages.join(",")
    )
    .into_bytes()
}

fn benches(c: &mut Criterion) -> Vec<(&'static str, usize)> {
    let docs = [("1KiB", webhook(1024)), ("64KiB", webhook(64 * 1024))];
    let limits = Limits::default();
    let mut group = c.benchmark_group(GROUP);
    for (name, doc) in &docs {
        check(doc, &limits).unwrap();
        serde_json::from_slice::<Value>(doc).unwrap();
        group.throughput(Throughput::Bytes(doc.len() as u64));
        group.bench_with_input(BenchmarkId::new("serde_json", name), doc, |b, doc| {
            b.iter(|| black_box(serde_json::from_slice::<Value>(black_box(doc)).unwrap()))
        });
        group.bench_with_input(BenchmarkId::new("check_then_serde_json", name), doc, |b, doc| {
            b.iter(|| {
                check(black_box(doc), &limits).unwrap();
                black_box(serde_json::from_slice::<Value>(black_box(doc)).unwrap())
            })
        });
        group.bench_with_input(BenchmarkId::new("check", name), doc, |b, doc| {
            b.iter(|| black_box(check(black_box(doc), &limits).is_ok()))
        });
    }
    group.finish();
    docs.iter().map(|(name, doc)| (*name, doc.len())).collect()
}

/// Mean time per iteration of one benchmark of this run, in nanoseconds.
fn mean_ns(function: &str, input: &str) -> Option<f64> {
    adcp_test_support::criterion_mean_ns(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &format!("{GROUP}/{function}/{input}"),
    )
}

fn report_ratios(sizes: &[(&str, usize)]) {
    println!("\nratios against serde_json::from_slice::<Value> alone (same run):");
    for (input, len) in sizes {
        let (Some(plain), Some(checked), Some(alone)) = (
            mean_ns("serde_json", input),
            mean_ns("check_then_serde_json", input),
            mean_ns("check", input),
        ) else {
            continue;
        };
        let mib_s = |ns: f64| *len as f64 / ns * 1e9 / (1024.0 * 1024.0);
        println!(
            "  {input} ({len} B): check+serde / serde = {:.2}, check / serde = {:.2}  \
             (serde {plain:.0} ns = {:.0} MiB/s; check+serde {checked:.0} ns; check {alone:.0} ns = {:.0} MiB/s)",
            checked / plain,
            alone / plain,
            mib_s(plain),
            mib_s(alone),
        );
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let sizes = benches(&mut c);
    c.final_summary();
    report_ratios(&sizes);
}
