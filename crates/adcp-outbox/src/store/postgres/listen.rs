//! The `LISTEN` connection: every notification on the outbox's channel
//! wakes the dispatcher. It reconnects with backoff when lost (and wakes
//! once then: notifications sent meanwhile are lost); the dispatcher polls
//! as well, so a lost listener only costs latency.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::{AsyncMessage, Client, Connection, NoTls, Socket};

/// How often a quiet listening connection is checked: a ping still
/// unanswered at the next tick ends it (a peer gone without a reset).
const PING_EVERY: Duration = Duration::from_secs(10);
/// The first wait before reconnecting, doubled per failure up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait before reconnecting.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// A connection listening on its channel.
pub(super) struct Listening {
    client: Client,
    connection: Connection<Socket, NoTlsStream>,
}

type Ping<'a> = Pin<Box<dyn Future<Output = Result<(), tokio_postgres::Error>> + Send + 'a>>;

/// The next message of `connection` (driving the requests of its client).
async fn next_message(
    connection: &mut Connection<Socket, NoTlsStream>,
) -> Option<Result<AsyncMessage, tokio_postgres::Error>> {
    std::future::poll_fn(|cx| connection.poll_message(cx)).await
}

/// Connects to `url` and listens on `channel`, within `timeout`.
pub(super) async fn open(url: &str, channel: &str, timeout: Duration, wake: &Notify) -> Result<Listening, String> {
    let work = async {
        let (client, mut connection) = tokio_postgres::connect(url, NoTls).await.map_err(|e| e.to_string())?;
        let statement = format!("LISTEN {channel}");
        {
            let mut listen = std::pin::pin!(client.batch_execute(&statement));
            loop {
                tokio::select! {
                    done = &mut listen => {
                        done.map_err(|e| e.to_string())?;
                        break;
                    }
                    message = next_message(&mut connection) => match message {
                        Some(Ok(AsyncMessage::Notification(_))) => wake.notify_one(),
                        Some(Ok(_)) => {}
                        Some(Err(e)) => return Err(e.to_string()),
                        None => return Err("connection closed".to_owned()),
                    },
                }
            }
        }
        Ok(Listening { client, connection })
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(format!("timed out after {timeout:?}")),
    }
}

/// Wakes `wake` on every notification of `listening` until it is lost;
/// returns why.
async fn serve(listening: Listening, wake: &Notify) -> String {
    let Listening { client, mut connection } = listening;
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + PING_EVERY, PING_EVERY);
    let mut ping: Option<Ping<'_>> = None;
    loop {
        tokio::select! {
            message = next_message(&mut connection) => match message {
                Some(Ok(AsyncMessage::Notification(_))) => wake.notify_one(),
                Some(Ok(_)) => {}
                Some(Err(e)) => return e.to_string(),
                None => return "connection closed".to_owned(),
            },
            _ = tick.tick() => {
                if ping.is_some() {
                    return format!("no answer to a ping within {PING_EVERY:?}");
                }
                ping = Some(Box::pin(client.batch_execute("SELECT 1")));
            }
            answered = async {
                match ping.as_mut() {
                    Some(p) => p.await,
                    None => std::future::pending().await,
                }
            } => {
                ping = None;
                if let Err(e) = answered {
                    return e.to_string();
                }
            }
        }
    }
}

/// Serves `first`, then reconnects for ever (the task is aborted when the
/// store is dropped).
pub(super) async fn run(first: Listening, url: String, channel: String, timeout: Duration, wake: Arc<Notify>) {
    let mut listening = first;
    loop {
        let why = serve(listening, &wake).await;
        tracing::warn!(error = %why, channel = %channel, "outbox LISTEN connection lost; reconnecting");
        let mut backoff = FIRST_BACKOFF;
        listening = loop {
            tokio::time::sleep(backoff).await;
            match open(&url, &channel, timeout, &wake).await {
                Ok(listening) => break listening,
                Err(e) => {
                    tracing::debug!(error = %e, channel = %channel, "outbox LISTEN reconnect failed");
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        };
        tracing::info!(channel = %channel, "outbox LISTEN connection re-established");
        // Whatever was notified while it was down is lost: look now.
        wake.notify_one();
    }
}
