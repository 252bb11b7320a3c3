//! Acceptance: a sender delivers 1,000 events over loopback; 10 % are
//! deliberately re-sent to the same receiver and 5 % to a second receiver
//! instance sharing the same store. The handler's side-effect counter must
//! be exactly 1,000 and every duplicate must be answered 2xx — for the
//! in-memory store and for every durable backend (SQLite; Redis and
//! PostgreSQL with their features, reading `REDIS_URL` / `DATABASE_URL`, else
//! private servers: `adcp_test_support::{redis_url, database_url}`).

use crate::common::*;
use adcp_sign::Algorithm;
use adcp_store::IdempotencyStore;
use adcp_verify::ReplayStore;
use adcp_webhook::{outcome, Receiver};
use adcp_webhook::{DeliveryOutcome, Destination};
use adcp_webhook::{McpWebhook, TaskStatus};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const EVENTS: usize = 1_000;
const CONCURRENCY: usize = 8;

/// One receiver instance's view of the shared backend.
struct Instance {
    replay: Arc<dyn ReplayStore>,
    idempotency: Arc<dyn IdempotencyStore>,
}

async fn run(first: Instance, second: Instance) {
    let (signer, jwks) = seller(Algorithm::EcdsaP256Sha256, "seller-e2e-2026");
    let effects = Arc::new(crate::common::Effects::default());
    let build = |i: Instance| {
        Receiver::builder(keys_for(&jwks), i.replay, i.idempotency)
            .config(http_config())
            .build()
            .unwrap()
    };
    let (receiver_a, receiver_b) = (build(first), build(second));
    let addr_a = serve(receiver_a.clone(), Arc::clone(&effects)).await;
    let addr_b = serve(receiver_b.clone(), Arc::clone(&effects)).await;
    let sender = loopback_sender(signer, fast_retries());

    let duplicates_acknowledged = Arc::new(AtomicUsize::new(0));
    let semaphore = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..EVENTS {
        let permit = Arc::clone(&semaphore).acquire_owned().await.unwrap();
        let sender = sender.clone();
        let acked = Arc::clone(&duplicates_acknowledged);
        tasks.spawn(async move {
            let _permit = permit;
            let op = format!("op_{i:04}");
            let event = McpWebhook::new(
                format!("task_{i:04}"),
                "create_media_buy",
                TaskStatus::Completed,
                "2026-04-18T12:00:00Z",
            )
            .operation_id(op.as_str())
            .context(serde_json::json!({"trace_id": format!("trace-{i}")}))
            .result(serde_json::json!({"media_buy_id": format!("mb_{i}"), "n": i}))
            .into_event()
            .unwrap();
            let to_a = Destination::new(url(addr_a, &format!("/webhooks/{op}"))).with_operation_id(op.as_str());
            let report = sender.deliver(&to_a, &event).await;
            assert_eq!(
                report.outcome,
                DeliveryOutcome::Delivered { status: 200 },
                "event {i}: {report:?}"
            );
            let mut resend = Vec::new();
            if i % 10 == 0 {
                resend.push(to_a.clone());
            }
            if i % 20 == 1 {
                resend.push(Destination::new(url(addr_b, &format!("/webhooks/{op}"))).with_operation_id(op.as_str()));
            }
            for destination in resend {
                // A fresh signature (new nonce) over the same bytes: it
                // passes the replay cache and must be caught by the
                // idempotency keyspace, with a 2xx.
                let again = sender.deliver(&destination, &event).await;
                assert_eq!(again.attempts.len(), 1, "event {i}: {again:?}");
                assert!(
                    matches!(again.outcome, DeliveryOutcome::Delivered { status } if (200..300).contains(&status)),
                    "duplicate of event {i} not acknowledged: {again:?}"
                );
                acked.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.unwrap();
    }

    assert_eq!(effects.count(), EVENTS, "handler side effects");
    let keys = effects.keys.lock().unwrap();
    assert_eq!(keys.len(), EVENTS);
    assert!(keys.values().all(|n| *n == 1));
    let expected_duplicates = EVENTS / 10 + EVENTS / 20;
    assert_eq!(duplicates_acknowledged.load(Ordering::SeqCst), expected_duplicates);
    let (ma, mb) = (receiver_a.metrics(), receiver_b.metrics());
    assert_eq!(ma.get(outcome::ACCEPTED), EVENTS as u64);
    assert_eq!(mb.get(outcome::ACCEPTED), 0);
    assert_eq!(ma.get(outcome::DUPLICATE), (EVENTS / 10) as u64);
    assert_eq!(mb.get(outcome::DUPLICATE), (EVENTS / 20) as u64);
    // Nothing else happened: no rejection of any kind.
    assert_eq!(ma.snapshot().len(), 2, "{:?}", ma.snapshot());
    assert_eq!(mb.snapshot().len(), 1, "{:?}", mb.snapshot());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store() {
    let replay = memory_replay();
    let idempotency = memory_idempotency();
    let a = Instance {
        replay: Arc::clone(&replay),
        idempotency: idempotency.clone(),
    };
    let b = Instance { replay, idempotency };
    run(a, b).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store() {
    use adcp_store::{SqliteOptions, SqliteStore};
    let dir = std::env::temp_dir().join(format!("adcp-webhook-e2e-{}-{}", std::process::id(), line!()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dedup.sqlite");
    // Two connections to one database file: two receiver processes.
    let a = Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
    let b = Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
    run(
        Instance {
            replay: a.clone(),
            idempotency: a,
        },
        Instance {
            replay: b.clone(),
            idempotency: b,
        },
    )
    .await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_store() {
    use adcp_store::{RedisOptions, RedisStore};
    let url = adcp_test_support::redis_url();
    let options = RedisOptions {
        key_prefix: format!("adcp-webhook-test:{}:{}", std::process::id(), unique()),
        ..RedisOptions::default()
    };
    let a = Arc::new(RedisStore::connect(&url, options.clone()).await.unwrap());
    let b = Arc::new(RedisStore::connect(&url, options).await.unwrap());
    run(
        Instance {
            replay: a.clone(),
            idempotency: a.clone(),
        },
        Instance {
            replay: b.clone(),
            idempotency: b,
        },
    )
    .await;
    a.delete_all().await.unwrap();
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store() {
    use adcp_store::{PostgresOptions, PostgresStore};
    let url = adcp_test_support::database_url();
    let options = PostgresOptions {
        schema: format!("adcp_webhook_test_{}_{}", std::process::id(), unique()),
        pool_size: 4,
        ..PostgresOptions::default()
    };
    let a = Arc::new(PostgresStore::connect(&url, options.clone()).await.unwrap());
    let b = Arc::new(PostgresStore::connect(&url, options).await.unwrap());
    run(
        Instance {
            replay: a.clone(),
            idempotency: a.clone(),
        },
        Instance {
            replay: b.clone(),
            idempotency: b,
        },
    )
    .await;
    a.drop_schema().await.unwrap();
}

#[allow(dead_code)]
fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

// ---------------------------------------------------------------------
// The whole 3.2 lifecycle on each backend: every payload kind delivered,
// deduplicated and refused on conflict; notification identity
// (re-emissions); activation challenges and registration checks.
// ---------------------------------------------------------------------

use adcp_sign::{Body, HttpSigner, SignOptions, SoftwareSigner, UnsignedRequest};
use adcp_webhook::payload::PayloadKind;
use adcp_webhook::{DeliveryAuthMode, Registration, StaticSubscriptions, SubscriptionScope, Webhook};
use bytes::Bytes;
use std::collections::BTreeSet;
use std::sync::Mutex;

const BUYER: &str = "https://buyer.example";

/// `body` signed under the webhook profile for `url` (any JSON body,
/// challenges included: they carry no idempotency key).
async fn signed(signer: &HttpSigner<SoftwareSigner>, url: &str, body: &serde_json::Value) -> http::Request<Bytes> {
    let body = Body::from_json_bytes(body.to_string()).unwrap();
    let request = UnsignedRequest::new("POST", url)
        .with_body(&body)
        .with_content_type("application/json");
    let signed = signer.sign_with(&request, &SignOptions::new()).await.unwrap();
    signed.to_http().unwrap().map(Bytes::from)
}

/// Sends `request`; returns the status, the JSON body (if any) and what the
/// handler saw (if it ran).
async fn deliver(receiver: &Receiver, request: http::Request<Bytes>) -> (u16, serde_json::Value, Option<Webhook>) {
    let seen = Mutex::new(None);
    let response = receiver
        .handle(request, |w| {
            *seen.lock().unwrap() = Some(w);
            async { Ok::<(), std::convert::Infallible>(()) }
        })
        .await;
    let body = serde_json::from_slice(response.body()).unwrap_or(serde_json::Value::Null);
    (response.status().as_u16(), body, seen.into_inner().unwrap())
}

fn registration(path: &str, scope: SubscriptionScope, auth: DeliveryAuthMode, active: bool) -> Registration {
    Registration {
        url: format!("{BUYER}{path}"),
        seller_agent_url: AGENT_URL.to_owned(),
        subscriber_id: "desk-1".to_owned(),
        scope,
        delivery_auth: auth,
        event_types: ["creative.status_changed", "account.status_changed"]
            .into_iter()
            .map(str::to_owned)
            .collect::<BTreeSet<_>>(),
        active,
    }
}

fn challenge(value: &str, path_scope: &SubscriptionScope) -> serde_json::Value {
    let mut body = serde_json::json!({
        "type": "webhook.challenge",
        "challenge": value,
        "subscriber_id": "desk-1",
        "seller_agent_url": AGENT_URL,
        "delivery_auth": {"mode": "rfc9421"},
        "event_types": ["account.status_changed", "creative.status_changed"],
    });
    match path_scope {
        SubscriptionScope::Account(account) => body["account_id"] = serde_json::json!(account),
        SubscriptionScope::Agent => {
            body["scope"] = serde_json::json!("agent");
            body["event_types"] = serde_json::json!(["capabilities.changed"]);
        }
    }
    body
}

const HMAC_FINGERPRINT: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

async fn lifecycle(instance: Instance) {
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-lifecycle");
    let (other, other_jwks) = seller(Algorithm::Ed25519, "other-seller");
    let keys: Arc<dyn adcp_verify::KeyResolver> = Arc::new(
        adcp_verify::StaticKeyResolver::new()
            .with_jwks(&jwks, AGENT_URL)
            .with_jwks(&other_jwks, "https://other-seller.example/mcp"),
    );
    let account = SubscriptionScope::Account("acct_1".to_owned());
    let mut agent_reg = registration(
        "/agent-hooks",
        SubscriptionScope::Agent,
        DeliveryAuthMode::Rfc9421,
        true,
    );
    agent_reg.event_types = ["capabilities.changed".to_owned()].into_iter().collect();
    let subscriptions = StaticSubscriptions::new()
        .with(registration("/hooks", account.clone(), DeliveryAuthMode::Rfc9421, true))
        .unwrap()
        .with(registration(
            "/paused",
            account.clone(),
            DeliveryAuthMode::Rfc9421,
            false,
        ))
        .unwrap()
        .with(registration(
            "/legacy",
            account.clone(),
            DeliveryAuthMode::HmacSha256 {
                credential_fingerprint: HMAC_FINGERPRINT.to_owned(),
            },
            true,
        ))
        .unwrap()
        .with(agent_reg)
        .unwrap();
    let receiver = Receiver::builder(keys, Arc::clone(&instance.replay), Arc::clone(&instance.idempotency))
        .subscriptions(Arc::new(subscriptions))
        .build()
        .unwrap();

    // Every kind (but A2A, deduplicated on its fingerprint elsewhere, and
    // the challenges below) at an unregistered URL: delivered once, a
    // retry is a duplicate, the same key with another payload a conflict.
    let url = format!("{BUYER}/events");
    for kind in PayloadKind::ALL {
        if matches!(
            kind,
            PayloadKind::A2aTask | PayloadKind::AccountChallenge | PayloadKind::AgentChallenge
        ) {
            continue;
        }
        let body = fixture(kind);
        let (status, _, seen) = deliver(&receiver, signed(&signer, &url, &body).await).await;
        assert_eq!(status, 200, "{kind:?}");
        let webhook = seen.unwrap_or_else(|| panic!("{kind:?} not delivered"));
        assert_eq!(webhook.kind(), kind);
        assert_eq!(webhook.sender(), AGENT_URL);
        assert_eq!(webhook.idempotency_key(), body["idempotency_key"].as_str().unwrap());
        assert_eq!(webhook.reemission_of(), None);
        let (status, _, seen) = deliver(&receiver, signed(&signer, &url, &body).await).await;
        assert_eq!((status, seen.is_none()), (200, true), "{kind:?} retry");
        let mut changed = body.clone();
        changed["x_changed"] = serde_json::json!(true);
        let (status, error, seen) = deliver(&receiver, signed(&signer, &url, &changed).await).await;
        assert_eq!((status, seen.is_none()), (409, true), "{kind:?} conflict");
        assert_eq!(error["error"], outcome::IDEMPOTENCY_CONFLICT);
    }

    // Re-emission: a new idempotency_key with a known notification_id is
    // delivered and marked with the first key.
    let first = fixture(PayloadKind::CreativeStatusChanged);
    let mut again = first.clone();
    again["idempotency_key"] = serde_json::json!("reemit-0000000000000000001");
    let (status, _, seen) = deliver(&receiver, signed(&signer, &url, &again).await).await;
    assert_eq!(status, 200);
    let seen = seen.expect("a re-emission of a notification is delivered");
    assert_eq!(seen.reemission_of(), first["idempotency_key"].as_str());
    // …but a terminal task result is never republished.
    let mut task = fixture(PayloadKind::McpTask);
    task["status"] = serde_json::json!("completed");
    task["notification_id"] = serde_json::json!("task-terminal-1");
    task["idempotency_key"] = serde_json::json!("terminal-00000000000000001");
    let (status, _, seen) = deliver(&receiver, signed(&signer, &url, &task).await).await;
    assert_eq!((status, seen.is_some()), (200, true));
    task["idempotency_key"] = serde_json::json!("terminal-00000000000000002");
    let (status, _, seen) = deliver(&receiver, signed(&signer, &url, &task).await).await;
    assert_eq!(
        (status, seen.is_none()),
        (200, true),
        "terminal re-emission not delivered"
    );
    assert_eq!(receiver.metrics().get(outcome::REEMISSION_SUPPRESSED), 1);

    // Activation challenges: answered only when every binding holds.
    let hooks = format!("{BUYER}/hooks");
    let value = "c".repeat(40);
    let body = challenge(&value, &account);
    let (status, echo, seen) = deliver(&receiver, signed(&signer, &hooks, &body).await).await;
    assert_eq!((status, seen.is_none()), (200, true), "{echo}");
    assert_eq!(echo, serde_json::json!({ "challenge": value }));
    // The value is single-use, even freshly signed.
    let (status, error, _) = deliver(&receiver, signed(&signer, &hooks, &body).await).await;
    assert_eq!(
        (status, error["error"].as_str()),
        (403, Some(outcome::CHALLENGE_REFUSED))
    );
    assert!(!error.to_string().contains(&value));
    // Agent scope.
    let agent_value = "a".repeat(32);
    let (status, echo, _) = deliver(
        &receiver,
        signed(
            &signer,
            &format!("{BUYER}/agent-hooks"),
            &challenge(&agent_value, &SubscriptionScope::Agent),
        )
        .await,
    )
    .await;
    assert_eq!((status, echo), (200, serde_json::json!({ "challenge": agent_value })));
    // An HMAC registration: the challenge is RFC 9421-signed and binds the
    // credential's fingerprint.
    let mut legacy = challenge(&"h".repeat(48), &account);
    legacy["delivery_auth"] = serde_json::json!({"mode": "HMAC-SHA256", "credential_fingerprint": HMAC_FINGERPRINT});
    let (status, _, _) = deliver(&receiver, signed(&signer, &format!("{BUYER}/legacy"), &legacy).await).await;
    assert_eq!(status, 200);

    // Each binding wrong: refused, never echoed.
    let n = AtomicUsize::new(0);
    let fresh = || format!("v{:0>40}", n.fetch_add(1, Ordering::Relaxed));
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let wrong: Vec<(&str, Edit, &str)> = vec![
        (
            "account",
            Box::new(|b| b["account_id"] = serde_json::json!("acct_2")),
            "/hooks",
        ),
        (
            "subscriber",
            Box::new(|b| b["subscriber_id"] = serde_json::json!("desk-2")),
            "/hooks",
        ),
        (
            "seller_agent_url",
            Box::new(|b| b["seller_agent_url"] = serde_json::json!("https://other.example/mcp")),
            "/hooks",
        ),
        (
            "delivery_auth",
            Box::new(|b| {
                b["delivery_auth"] = serde_json::json!({"mode": "Bearer", "credential_fingerprint": HMAC_FINGERPRINT})
            }),
            "/hooks",
        ),
        (
            "event_types",
            Box::new(|b| b["event_types"] = serde_json::json!(["account.status_changed"])),
            "/hooks",
        ),
        ("unregistered URL", Box::new(|_| {}), "/not-registered"),
        ("HMAC fingerprint", Box::new(|_| {}), "/legacy"),
    ];
    for (what, edit, path) in &wrong {
        let value = fresh();
        let mut body = challenge(&value, &account);
        edit(&mut body);
        let (status, error, seen) = deliver(&receiver, signed(&signer, &format!("{BUYER}{path}"), &body).await).await;
        assert_eq!((status, seen.is_none()), (403, true), "{what}: {error}");
        assert!(!error.to_string().contains(&value), "{what}");
    }
    // Signed by another seller's key.
    let value = fresh();
    let (status, _, _) = deliver(&receiver, signed(&other, &hooks, &challenge(&value, &account)).await).await;
    assert_eq!(status, 403);
    // Unsigned: the checklist refuses it.
    let mut unsigned = signed(&signer, &hooks, &challenge(&fresh(), &account)).await;
    unsigned.headers_mut().remove("signature");
    unsigned.headers_mut().remove("signature-input");
    assert_eq!(deliver(&receiver, unsigned).await.0, 401);
    // Schema violations: 400, no echo.
    for edit in [
        |b: &mut serde_json::Value| b["challenge"] = serde_json::json!("short"),
        |b: &mut serde_json::Value| b["extra"] = serde_json::json!(1),
        |b: &mut serde_json::Value| {
            b.as_object_mut().unwrap().remove("subscriber_id");
        },
    ] {
        let mut body = challenge(&fresh(), &account);
        edit(&mut body);
        let (status, error, _) = deliver(&receiver, signed(&signer, &hooks, &body).await).await;
        assert_eq!(status, 400, "{error}");
        assert!(error.get("challenge").is_none());
    }

    // Notifications to registered URLs are held to their registration.
    let mut note = fixture(PayloadKind::CreativeStatusChanged);
    note["subscriber_id"] = serde_json::json!("desk-1");
    note["account_id"] = serde_json::json!("acct_1");
    note["idempotency_key"] = serde_json::json!("registered-000000000000001");
    note["notification_id"] = serde_json::json!("note-registered-1");
    let (status, _, seen) = deliver(&receiver, signed(&signer, &hooks, &note).await).await;
    assert_eq!((status, seen.is_some()), (200, true));
    let mut purged = fixture(PayloadKind::CreativePurged);
    purged["subscriber_id"] = serde_json::json!("desk-1");
    purged["account_id"] = serde_json::json!("acct_1");
    for (what, path, mut body, edit) in [
        (
            "other account",
            "/hooks",
            note.clone(),
            ("account_id", serde_json::json!("acct_9")),
        ),
        (
            "other subscriber",
            "/hooks",
            note.clone(),
            ("subscriber_id", serde_json::json!("desk-9")),
        ),
        // creative.purged is not among the registered event types.
        (
            "unregistered type",
            "/hooks",
            purged,
            ("subscriber_id", serde_json::json!("desk-1")),
        ),
        (
            "paused",
            "/paused",
            note.clone(),
            ("subscriber_id", serde_json::json!("desk-1")),
        ),
    ] {
        body[edit.0] = edit.1;
        body["idempotency_key"] = serde_json::json!(format!("mismatch-{:0>20}", n.fetch_add(1, Ordering::Relaxed)));
        let (status, error, seen) = deliver(&receiver, signed(&signer, &format!("{BUYER}{path}"), &body).await).await;
        assert_eq!((status, seen.is_none()), (403, true), "{what}: {error}");
        assert_eq!(error["error"], outcome::SUBSCRIPTION_MISMATCH);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_bind_the_seller_and_invalid_notification_ids_are_not_tracked() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-lifecycle");
    let (other, other_jwks) = seller(Algorithm::Ed25519, "other-seller");
    let keys: Arc<dyn adcp_verify::KeyResolver> = Arc::new(
        adcp_verify::StaticKeyResolver::new()
            .with_jwks(&jwks, AGENT_URL)
            .with_jwks(&other_jwks, "https://other-seller.example/mcp"),
    );
    let account = SubscriptionScope::Account("acct_1".to_owned());
    let subscriptions = StaticSubscriptions::new()
        .with(registration("/hooks", account, DeliveryAuthMode::Rfc9421, true))
        .unwrap();
    let receiver = Receiver::builder(keys, memory_replay(), memory_idempotency())
        .subscriptions(Arc::new(subscriptions))
        .build()
        .unwrap();
    let mut note = fixture(PayloadKind::CreativeStatusChanged);
    note["subscriber_id"] = serde_json::json!("desk-1");
    note["account_id"] = serde_json::json!("acct_1");
    // Another seller, whose own signature verifies, at this registration's URL.
    let (status, error, seen) = deliver(&receiver, signed(&other, &format!("{BUYER}/hooks"), &note).await).await;
    assert_eq!((status, seen.is_none()), (403, true), "{error}");
    assert_eq!(error["error"], outcome::SUBSCRIPTION_MISMATCH);
    // The registration's seller: delivered.
    let (status, _, seen) = deliver(&receiver, signed(&signer, &format!("{BUYER}/hooks"), &note).await).await;
    assert_eq!((status, seen.is_some()), (200, true));
    // A generic payload whose notification_id is not a valid one: delivered,
    // without identity tracking (never a retryable store error).
    let mut generic = fixture(PayloadKind::Generic);
    generic["notification_id"] = serde_json::json!("x".repeat(300));
    let (status, _, seen) = deliver(&receiver, signed(&signer, &format!("{BUYER}/events"), &generic).await).await;
    assert_eq!(status, 200);
    assert_eq!(seen.unwrap().notification_id(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_memory_store() {
    lifecycle(Instance {
        replay: memory_replay(),
        idempotency: memory_idempotency(),
    })
    .await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_sqlite_store() {
    use adcp_store::{SqliteOptions, SqliteStore};
    let dir = std::env::temp_dir().join(format!("adcp-webhook-lifecycle-{}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(SqliteStore::open(dir.join("dedup.sqlite"), SqliteOptions::default()).unwrap());
    lifecycle(Instance {
        replay: store.clone(),
        idempotency: store,
    })
    .await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_redis_store() {
    use adcp_store::{RedisOptions, RedisStore};
    let url = adcp_test_support::redis_url();
    let options = RedisOptions {
        key_prefix: format!("adcp-webhook-lifecycle:{}:{}", std::process::id(), unique()),
        ..RedisOptions::default()
    };
    let store = Arc::new(RedisStore::connect(&url, options).await.unwrap());
    lifecycle(Instance {
        replay: store.clone(),
        idempotency: store.clone(),
    })
    .await;
    store.delete_all().await.unwrap();
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_postgres_store() {
    use adcp_store::{PostgresOptions, PostgresStore};
    let url = adcp_test_support::database_url();
    let options = PostgresOptions {
        schema: format!("adcp_webhook_lifecycle_{}_{}", std::process::id(), unique()),
        pool_size: 2,
        ..PostgresOptions::default()
    };
    let store = Arc::new(PostgresStore::connect(&url, options).await.unwrap());
    lifecycle(Instance {
        replay: store.clone(),
        idempotency: store.clone(),
    })
    .await;
    store.drop_schema().await.unwrap();
}
