//! `adcp-sig`: the command-line tool of the AdCP signed-webhooks SDK.
//!
//! Exit codes are the same for every subcommand: 0 when everything was
//! accepted, 1 when something was rejected or a check failed, 2 for usage
//! or I/O errors.
#![forbid(unsafe_code)]

mod cli;
mod commands;
mod exit;

use clap::Parser;

/// mimalloc rather than the system allocator: the gateway allocates and
/// frees a few dozen small buffers per request on two or more threads,
/// which glibc's malloc served at about a tenth of the CPU per request.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    // The demo and the conformance runner report each rejection (and each
    // legacy path) their inputs provoke on purpose; warnings of those would
    // only repeat them.
    let provoked = matches!(cli.command, cli::Command::Demo(_) | cli::Command::Conformance(_));
    init_logging(if provoked { "error" } else { "warn" });
    let code = match cli.command {
        cli::Command::Canon(args) => commands::canon::run(&args),
        cli::Command::UrnEq(args) => commands::urn_eq::run(&args),
        cli::Command::Normalize(args) => commands::normalize::run(&args),
        cli::Command::Base(args) => commands::base::run(&args),
        cli::Command::Verify(args) => commands::verify::run(&args),
        cli::Command::Conformance(args) => commands::conformance::run(&args),
        cli::Command::Keygen(args) => commands::keygen::run(&args),
        cli::Command::Sign(args) => commands::sign::run(&args),
        cli::Command::Activate(args) => commands::activate::run(&args),
        cli::Command::Call(args) => commands::call::run(&args),
        cli::Command::Resolve(args) => commands::resolve::run(&args),
        cli::Command::Explain(args) => commands::explain::run(&args),
        cli::Command::VerifyBatch(args) => commands::verify_batch::run(&args),
        cli::Command::Gov(args) => commands::gov::run(&args),
        cli::Command::Grade(args) => commands::grade::run(&args),
        cli::Command::Outbox(args) => commands::outbox::run(&args),
        cli::Command::Gateway(args) => return adcp_sig::gateway::run(&args).into(),
        cli::Command::Relay(args) => return adcp_sig::relay::run(&args).into(),
        cli::Command::Demo(args) => return adcp_sig::demo::run(&args).into(),
    };
    code.into()
}

/// Sends the libraries' `tracing` events at `default` and above (`warn`: a
/// store connection lost, a failed purge, a rejected webhook's details) to
/// stderr, one line each; `RUST_LOG` selects other levels or targets
/// (`RUST_LOG=adcp_store=debug`).
fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Fails only if a subscriber is already set, which nothing here does.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
