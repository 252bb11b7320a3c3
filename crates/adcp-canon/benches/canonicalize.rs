//! AdCP canonicalization against `url::Url::parse` on the same corpus, in
//! the same run. Prints the ratio (ours / baseline) after the benchmarks:
//! the target is a ratio at or below 1.0.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use criterion::{black_box, BenchmarkId, Criterion, Throughput};
use std::path::Path;

mod corpus;

const CORPUS_SIZE: usize = 2_000;
const GROUP: &str = "canonicalize_corpus";

fn benches(c: &mut Criterion) -> Vec<(&'static str, usize)> {
    let all = corpus::webhook_urls(CORPUS_SIZE);
    let ascii: Vec<String> = all.iter().filter(|u| u.is_ascii()).cloned().collect();
    for url in &all {
        if let Err(e) = adcp_canon::canonicalize(url) {
            panic!("corpus URL rejected: {url}: {e}");
        }
    }

    let mut group = c.benchmark_group(GROUP);
    for (name, corpus) in [("all", &all), ("ascii", &ascii)] {
        group.throughput(Throughput::Elements(corpus.len() as u64));
        group.bench_with_input(BenchmarkId::new("url_parse", name), corpus, |b, corpus| {
            b.iter(|| {
                for u in corpus {
                    black_box(url::Url::parse(black_box(u)).is_ok());
                }
            })
        });
        group.bench_with_input(BenchmarkId::new("adcp_canonicalize", name), corpus, |b, corpus| {
            b.iter(|| {
                for u in corpus {
                    black_box(adcp_canon::canonicalize(black_box(u)).is_ok());
                }
            })
        });
    }
    group.bench_with_input(
        BenchmarkId::new("adcp_canonicalize_received", "ascii"),
        &ascii,
        |b, corpus| {
            b.iter(|| {
                for u in corpus {
                    black_box(adcp_canon::canonicalize_received(black_box(u.as_bytes())).is_ok());
                }
            })
        },
    );
    group.finish();
    vec![("all", all.len()), ("ascii", ascii.len())]
}

/// Mean time per iteration of one benchmark of this run, in nanoseconds.
fn mean_ns(function: &str, input: &str) -> Option<f64> {
    adcp_test_support::criterion_mean_ns(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &format!("{GROUP}/{function}/{input}"),
    )
}

fn report_ratios(sizes: &[(&str, usize)]) {
    println!("\nratios (ours / url::Url::parse, same run; target <= 1.00):");
    for (ours, input) in [
        ("adcp_canonicalize", "all"),
        ("adcp_canonicalize", "ascii"),
        ("adcp_canonicalize_received", "ascii"),
    ] {
        let n = sizes.iter().find(|(name, _)| *name == input).map_or(1, |(_, n)| *n) as f64;
        if let (Some(a), Some(b)) = (mean_ns(ours, input), mean_ns("url_parse", input)) {
            println!(
                "  {ours}/{input}: {:.3}  ({:.0} ns vs {:.0} ns per URL, {n} URLs)",
                a / b,
                a / n,
                b / n
            );
        }
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let sizes = benches(&mut c);
    c.final_summary();
    report_ratios(&sizes);
}
