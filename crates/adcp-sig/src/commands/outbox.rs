//! `adcp-sig outbox`: an operator's view of a relay's outbox (the same
//! `--store` URL the relay runs on).
//!
//! - `outbox list [--state S] [--limit N] [--before ID] [--json]`: newest first.
//! - `outbox show ID`: one event as JSON, with its activity records.
//! - `outbox redrive ID`: a refused or expired event pending again (same key
//!   and bytes), if its horizon has not passed.
//! - `outbox purge [--retention-days N]`: deletes what the retention no
//!   longer keeps (the relay also does it on a timer).
//!
//! Exit 0 on success, 1 when the event is missing or cannot be redriven, 2
//! for usage errors or an unreachable store.

use adcp_outbox::{
    open_store, ActivityQuery, ActivitySelector, BreakerPolicy, EventId, EventState, ListFilter, Outbox, OutboxConfig,
    OutboxError, DEFAULT_TABLE_PREFIX, MIN_RETENTION,
};
use clap::{Args, Subcommand};
use std::time::Duration;

use crate::exit::Exit;

/// Arguments of `adcp-sig outbox`.
#[derive(Debug, Args)]
pub struct OutboxArgs {
    /// The outbox store: `sqlite:PATH`, `postgres://…` or `postgresql://…`.
    #[arg(long, value_name = "URL", env = "ADCP_RELAY_STORE", global = true)]
    pub store: Option<String>,
    /// The outbox tables' prefix.
    #[arg(long, value_name = "PREFIX", default_value = DEFAULT_TABLE_PREFIX, env = "ADCP_RELAY_TABLE_PREFIX", global = true)]
    pub table_prefix: String,
    /// What to do.
    #[command(subcommand)]
    pub command: OutboxCommand,
}

/// The `outbox` subcommands.
#[derive(Debug, Subcommand)]
pub enum OutboxCommand {
    /// Events, newest first.
    List {
        /// Only this state: pending, in_flight, delivered, refused, expired, superseded.
        #[arg(long)]
        state: Option<String>,
        /// Most events (1-1000).
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Only events older than this id (paging).
        #[arg(long, value_name = "ID")]
        before: Option<String>,
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One event, with its activity records.
    Show {
        /// The event id (`evt_…`).
        id: String,
    },
    /// Sends a refused or expired event again, inside its horizon.
    Redrive {
        /// The event id (`evt_…`).
        id: String,
    },
    /// Deletes terminal events and activity records older than the retention.
    Purge {
        /// Keep this many days (at least 30).
        #[arg(long, default_value_t = 30)]
        retention_days: u64,
    },
}

/// Runs `adcp-sig outbox`.
#[must_use]
pub fn run(args: &OutboxArgs) -> Exit {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: tokio runtime: {e}");
            return Exit::Usage;
        }
    };
    runtime.block_on(run_async(args))
}

async fn run_async(args: &OutboxArgs) -> Exit {
    let Some(url) = &args.store else {
        eprintln!("error: --store URL (or ADCP_RELAY_STORE) is required");
        return Exit::Usage;
    };
    let mut config = OutboxConfig::default();
    if let OutboxCommand::Purge { retention_days } = &args.command {
        config.retention = Duration::from_secs(retention_days.saturating_mul(86_400));
        if config.retention < MIN_RETENTION {
            eprintln!("error: --retention-days must be at least 30 (the webhook_activity window)");
            return Exit::Usage;
        }
    }
    let store = match open_store(url, &args.table_prefix, BreakerPolicy::default()).await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("error: --store: {e}");
            return Exit::Usage;
        }
    };
    let outbox = match Outbox::new(store, config) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::Usage;
        }
    };
    match command(&outbox, &args.command).await {
        Ok(exit) => exit,
        Err(e) => {
            eprintln!("error: {e}");
            match e {
                OutboxError::NotFound(_) | OutboxError::NotRedrivable(_) => Exit::Rejected,
                _ => Exit::Usage,
            }
        }
    }
}

fn id(s: &str) -> Result<EventId, OutboxError> {
    EventId::parse(s).ok_or_else(|| OutboxError::NotFound(s.to_owned()))
}

async fn command(outbox: &Outbox, command: &OutboxCommand) -> Result<Exit, OutboxError> {
    match command {
        OutboxCommand::List {
            state,
            limit,
            before,
            json,
        } => {
            let state = match state.as_deref() {
                None => None,
                Some(s) => {
                    Some(EventState::parse(s).ok_or_else(|| OutboxError::Config(format!("unknown state {s:?}")))?)
                }
            };
            let before = before.as_deref().map(id).transpose()?;
            let events = outbox
                .list(&ListFilter {
                    state,
                    before,
                    limit: (*limit).clamp(1, 1000),
                })
                .await?;
            for e in &events {
                if *json {
                    println!("{}", e.to_json());
                } else {
                    println!(
                        "{}  {:<10}  {:>3}  {:<28}  {}{}",
                        e.id,
                        e.state.as_str(),
                        e.attempts,
                        e.notification_type.as_deref().unwrap_or("-"),
                        e.url,
                        e.reason.as_deref().map(|r| format!("  ({r})")).unwrap_or_default()
                    );
                }
            }
            Ok(Exit::Ok)
        }
        OutboxCommand::Show { id: raw } => {
            let event_id = id(raw)?;
            let Some(view) = outbox.get(&event_id).await? else {
                return Err(OutboxError::NotFound(raw.clone()));
            };
            let mut json = view.to_json();
            if let Some(principal) = &view.principal {
                let records = outbox
                    .activity(&ActivityQuery {
                        selector: ActivitySelector::Principal {
                            principal: principal.clone(),
                            resource: None,
                        },
                        limit: 200,
                    })
                    .await?;
                let mine: Vec<_> = records
                    .iter()
                    .filter(|r| r.idempotency_key == view.idempotency_key)
                    .map(adcp_outbox::ActivityRecord::to_json)
                    .collect();
                json["webhook_activity"] = mine.into();
            }
            println!("{}", serde_json::to_string_pretty(&json).unwrap_or_default());
            Ok(Exit::Ok)
        }
        OutboxCommand::Redrive { id: raw } => {
            let view = outbox.redrive(&id(raw)?).await?;
            println!("{} pending again (attempts so far: {})", view.id, view.attempts);
            Ok(Exit::Ok)
        }
        OutboxCommand::Purge { .. } => {
            let n = outbox.purge().await?;
            println!("purged {n} row(s)");
            Ok(Exit::Ok)
        }
    }
}
