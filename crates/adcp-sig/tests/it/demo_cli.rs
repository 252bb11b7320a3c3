//! `adcp-sig demo`: every scenario has its expected outcome and the
//! upstream applies each event exactly once; on the seller's side, the
//! outbox keeps a pending retry and the events enqueued while its
//! dispatcher is stopped, and the second upstream applies each once.

use std::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_library_reports_the_expected_counts() {
    let report = adcp_sig::demo::run_demo(false).await.unwrap();
    let table = report.render();
    assert!(report.passed(), "{table}");
    assert_eq!(report.scenarios.len(), 12, "{table}");
    assert_eq!(report.applied.len(), 5, "{table}");
    assert_eq!(report.distinct_applied(), 5, "{table}");
    assert_eq!(report.accepted, 5);
    assert_eq!(report.duplicates, 1);
    assert_eq!(report.rejected, 4);
    assert_eq!(report.upstream_failures, 1);
    let seller = &report.seller;
    assert!(seller.passed(), "{table}");
    assert_eq!(seller.enqueued, adcp_sig::demo::SELLER_EVENTS, "{table}");
    assert!(seller.duplicate_enqueue_same_id, "{table}");
    assert_eq!(seller.delivered_before_restart, 3, "{table}");
    assert_eq!(seller.retries_across_restart, 1, "{table}");
    assert_eq!(seller.delivered, adcp_sig::demo::SELLER_EVENTS, "{table}");
    let distinct: std::collections::BTreeSet<_> = seller.applied.iter().collect();
    assert_eq!(seller.applied.len(), adcp_sig::demo::SELLER_EVENTS, "{table}");
    assert_eq!(distinct.len(), adcp_sig::demo::SELLER_EVENTS, "{table}");
    assert!(seller.attempts > adcp_sig::demo::SELLER_EVENTS as u64, "{table}");
    let outcomes: Vec<(u16, &str)> = report
        .scenarios
        .iter()
        .map(|s| (s.status, s.outcome.as_str()))
        .collect();
    assert_eq!(
        outcomes,
        [
            (200, "forwarded"),
            (200, "forwarded"),
            (200, "duplicate, not forwarded"),
            (401, "webhook_signature_replayed"),
            (401, "webhook_signature_digest_mismatch"),
            (401, "webhook_signature_window_invalid"),
            (401, "webhook_signature_key_unknown"),
            (503, "upstream failed, claim released"),
            (200, "forwarded"),
            (200, "challenge answered, not forwarded"),
            (200, "forwarded"),
            (200, "forwarded, marked as a re-emission"),
        ]
    );
}

#[test]
fn the_demo_binary_prints_the_table_and_exits_0() {
    let out = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .arg("demo")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("webhook_signature_digest_mismatch"), "{stdout}");
    assert!(stdout.contains("upstream applied 5 events (5 distinct"), "{stdout}");
    assert!(stdout.contains("all 12 scenarios had the expected outcome"), "{stdout}");
    assert!(stdout.contains("nothing lost, nothing applied twice"), "{stdout}");
    // Piped: no progress bar drawn.
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains('['),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let json = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .args(["demo", "--json"])
        .output()
        .unwrap();
    assert_eq!(json.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["upstream_applied"], 5);
    assert_eq!(report["duplicates"], 1);
    assert_eq!(report["seller"]["upstream_distinct"], 8);
    assert_eq!(report["seller"]["retries_across_restart"], 1);
    assert_eq!(report["seller"]["passed"], true);
    assert_eq!(report["passed"], true);
}
