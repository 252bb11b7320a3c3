//! Opening a store from the one-flag URL the relay and the operator
//! commands take.

use super::OutboxStore;
use crate::breaker::BreakerPolicy;
use crate::error::OutboxError;
use std::sync::Arc;

/// Opens the outbox store `url` names: `sqlite:PATH` (the embedded
/// default), or `postgres://…` / `postgresql://…` (feature `postgres`),
/// with tables named after `table_prefix`.
///
/// # Errors
///
/// [`OutboxError::Config`] for any other URL (or a backend not built in);
/// the backend's errors when it cannot be opened.
pub async fn open_store(
    url: &str,
    table_prefix: &str,
    breaker: BreakerPolicy,
) -> Result<Arc<dyn OutboxStore>, OutboxError> {
    if let Some(path) = url.strip_prefix("sqlite:") {
        #[cfg(feature = "sqlite")]
        {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(OutboxError::Config(
                    "sqlite: needs a file path (sqlite:PATH)".to_owned(),
                ));
            }
            let options = super::sqlite::SqliteOutboxOptions {
                table_prefix: table_prefix.to_owned(),
                breaker,
                ..Default::default()
            };
            let path = path.to_owned();
            let store = tokio::task::spawn_blocking(move || super::sqlite::SqliteOutbox::open(path, options))
                .await
                .map_err(|e| OutboxError::Unavailable(e.to_string()))??;
            return Ok(Arc::new(store));
        }
        #[cfg(not(feature = "sqlite"))]
        {
            let _ = (path, breaker);
            return Err(OutboxError::Config("this build has no SQLite outbox".to_owned()));
        }
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        #[cfg(feature = "postgres")]
        {
            let options = super::postgres::PostgresOutboxOptions {
                table_prefix: table_prefix.to_owned(),
                breaker,
                ..Default::default()
            };
            return Ok(Arc::new(super::postgres::PostgresOutbox::connect(url, options).await?));
        }
        #[cfg(not(feature = "postgres"))]
        {
            return Err(OutboxError::Config("this build has no PostgreSQL outbox".to_owned()));
        }
    }
    let _ = (table_prefix, breaker);
    Err(OutboxError::Config(
        "unsupported store URL: use sqlite:PATH, postgres://… or postgresql://…".to_owned(),
    ))
}
