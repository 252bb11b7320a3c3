//! `adcp-sig conformance`: the whole AdCP conformance suite.

use crate::cli::ConformanceArgs;
use crate::exit::Exit;
use adcp_verify::conformance::{run_suite_observed, RunMode};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

pub fn run(args: &ConformanceArgs) -> Exit {
    let Some(suite) = args.vectors.clone().or_else(adcp_vectors::dir) else {
        eprintln!("adcp-sig: conformance vectors not found (use --vectors DIR or set ADCP_VECTORS_DIR)");
        return Exit::Usage;
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("adcp-sig: {e}");
            return Exit::Usage;
        }
    };
    // Progress on a terminal only; piped output stays clean.
    let bar = if std::io::stderr().is_terminal() && std::io::stdout().is_terminal() {
        ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} vectors {msg}") {
        bar.set_style(style);
    }
    let mut failed = 0usize;
    let report = runtime.block_on(run_suite_observed(
        &suite,
        RunMode::Single,
        &mut |outcome, done, total| {
            failed += usize::from(!outcome.passed);
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(if failed == 0 {
                String::new()
            } else {
                format!("({failed} failed)")
            });
        },
    ));
    bar.finish_and_clear();
    for problem in &report.manifest_problems {
        println!("MANIFEST {problem}");
    }
    for o in &report.outcomes {
        if args.verbose || !o.passed {
            let got = match &o.got {
                Ok(keyid) => format!("accepted ({keyid})"),
                Err((code, step)) => format!("{code} at step {step}"),
            };
            println!(
                "{} {}: expected {:?}, got {got} {}",
                if o.passed { "PASS" } else { "FAIL" },
                o.relative,
                o.expected,
                o.detail
            );
        }
    }
    // The governance file (AdCP JWS profile) runs after the RFC 9421
    // vectors; the closing line counts both, and each family apart.
    let governance = runtime
        .block_on(crate::commands::gov::run_vectors(&suite))
        .unwrap_or_default();
    for o in &governance {
        if args.verbose || !o.passed {
            println!("{} {}: {}", if o.passed { "PASS" } else { "FAIL" }, o.name, o.detail);
        }
    }
    let gov_failed = governance.iter().filter(|o| !o.passed).count();
    let (passed, failed) = (
        report.passed() + governance.len() - gov_failed,
        report.failed() + gov_failed,
    );
    println!(
        "{passed} passed, {failed} failed ({} request/webhook, {} governance)",
        report.outcomes.len(),
        governance.len()
    );
    if failed == 0 {
        Exit::Ok
    } else {
        Exit::Rejected
    }
}
