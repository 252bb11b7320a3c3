//! `GatewayConfig`: every TOML key, relative paths, the environment
//! overlay and its precedence, the typed errors of invalid values, the
//! serialized form (what `adcp-sig gateway` lays its flags over) and the
//! flags' entries read as a table.

use crate::support::TempDir;
use adcp_gateway::{ConfigError, GatewayConfig, StoreLocation};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

const SELLER: &str = "https://seller.example/mcp";

/// A variable lookup over `vars` only.
fn vars(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
    let map: HashMap<String, OsString> = vars.iter().map(|(k, v)| ((*k).to_owned(), OsString::from(v))).collect();
    move |name| map.get(name).cloned()
}

#[test]
fn every_toml_key_parses_into_its_type() {
    let config = GatewayConfig::from_toml_str(
        r#"
        listen = "0.0.0.0:9000"
        upstream = "http://127.0.0.1:8080/events"
        agents = ["https://seller.example/mcp", "https://other.example/mcp"]
        adopt_jwks_uri_changes = true
        store = "postgres://adcp:hunter2@db:5432/adcp"
        store_namespace = "fleet"
        public_url = "https://buyer.example"
        accept_hosts = ["hooks.buyer.example"]
        subscriptions = "subs.json"
        hmac_secret_file = "hmac.secret"
        hmac_sender = "https://seller.example/mcp"
        upstream_timeout = 7
        max_body_bytes = 4096
        store_timeout = 2
        claim_lease = 30
        dedup_window = 172800
        header_timeout = 3
        body_timeout = 4
        max_concurrency = 64

        [sellers]
        "https://static.example/mcp" = "static-jwks.json"

        [revocation_lists]
        "https://seller.example/mcp" = "https://seller.example/revocations.json"

        [jwks_uri_pins]
        "https://other.example/mcp" = "https://keys.other.example/jwks.json"
        "#,
    )
    .unwrap();
    assert_eq!(config.listen, "0.0.0.0:9000".parse().unwrap());
    assert_eq!(
        config.upstream.as_ref().map(url::Url::as_str),
        Some("http://127.0.0.1:8080/events")
    );
    assert_eq!(config.agents, [SELLER, "https://other.example/mcp"]);
    assert!(config.adopt_jwks_uri_changes);
    assert_eq!(
        config.store.to_string(),
        "postgres://***@db:5432/adcp",
        "printed redacted"
    );
    assert!(matches!(config.store.url(), adcp_store::StoreUrl::Postgres(url) if url.contains("hunter2")));
    assert_eq!(config.store_namespace, "fleet");
    assert_eq!(
        config.public_url.as_ref().map(url::Url::as_str),
        Some("https://buyer.example/")
    );
    assert_eq!(config.accept_hosts, ["hooks.buyer.example"]);
    assert_eq!(
        config.subscriptions,
        Some(PathBuf::from("subs.json")),
        "as written: no file"
    );
    assert_eq!(config.hmac_secret_file, Some(PathBuf::from("hmac.secret")));
    assert_eq!(config.hmac_sender.as_deref(), Some(SELLER));
    assert_eq!(config.upstream_timeout, Duration::from_secs(7));
    assert_eq!(config.max_body_bytes, 4096);
    assert_eq!(config.store_timeout, Duration::from_secs(2));
    assert_eq!(config.claim_lease, Duration::from_secs(30));
    assert_eq!(config.dedup_window, Duration::from_secs(172_800));
    assert_eq!(config.header_timeout, Duration::from_secs(3));
    assert_eq!(config.body_timeout, Duration::from_secs(4));
    assert_eq!(config.max_concurrency, 64);
    assert_eq!(
        config.sellers.get("https://static.example/mcp"),
        Some(&PathBuf::from("static-jwks.json"))
    );
    assert_eq!(
        config.revocation_lists,
        [(SELLER.to_owned(), "https://seller.example/revocations.json".to_owned())]
    );
    assert_eq!(
        config.jwks_uri_pins,
        [(
            "https://other.example/mcp".to_owned(),
            "https://keys.other.example/jwks.json".to_owned()
        )]
    );
    assert!(
        !format!("{config:?}").contains("hunter2"),
        "Debug hides the store's password"
    );
}

#[test]
fn defaults_are_the_documented_ones() {
    let config = GatewayConfig::from_toml_str("").unwrap();
    assert_eq!(config.listen, "127.0.0.1:8790".parse().unwrap());
    assert_eq!(config.upstream, None);
    assert_eq!(config.jwks_agent, "jwks-file");
    assert_eq!(config.store.to_string(), "sqlite:adcp-gateway.sqlite");
    assert_eq!(config.store_namespace, "adcp");
    assert_eq!(config.upstream_timeout, Duration::from_secs(10));
    assert_eq!(config.max_body_bytes, 1024 * 1024);
    assert_eq!(config.store_timeout, Duration::from_secs(5));
    assert_eq!(config.claim_lease, Duration::from_secs(60));
    assert_eq!(config.dedup_window, Duration::from_secs(86_400));
    assert_eq!(config.header_timeout, Duration::from_secs(10));
    assert_eq!(config.body_timeout, Duration::from_secs(30));
    assert_eq!(config.max_concurrency, 512);
    assert!(config.access_log);
    assert!(!config.adopt_jwks_uri_changes);
}

#[test]
fn a_files_relative_paths_are_relative_to_it() {
    let dir = TempDir::new("relative");
    let file = dir.0.join("gateway.toml");
    std::fs::write(
        &file,
        "jwks = \"k.json\"\nsubscriptions = \"subs.json\"\nhmac_secret_file = \"/run/secrets/hmac\"\n\n[sellers]\n\"https://b.example/mcp\" = \"b.json\"\n",
    )
    .unwrap();
    let config = GatewayConfig::from_toml_file(&file).unwrap();
    assert_eq!(config.jwks, Some(dir.0.join("k.json")));
    assert_eq!(config.subscriptions, Some(dir.0.join("subs.json")));
    assert_eq!(
        config.hmac_secret_file,
        Some(PathBuf::from("/run/secrets/hmac")),
        "absolute: kept"
    );
    assert_eq!(config.sellers.get("https://b.example/mcp"), Some(&dir.0.join("b.json")));
}

#[test]
fn toml_errors_are_typed() {
    // Unknown keys (a secret among them: never a TOML key).
    for text in ["lissen = \"127.0.0.1:1\"", "hmac_secret = \"s3cret\"", "quiet = true"] {
        let e = GatewayConfig::from_toml_str(text).unwrap_err();
        assert!(matches!(e, ConfigError::Toml { path: None, .. }), "{text}: {e:?}");
    }
    for text in [
        "listen = \"not an address\"",
        "upstream = \"not a url\"",
        "upstream_timeout = \"10s\"",
        "upstream_timeout = -1",
        "store = \"mysql://db\"",
    ] {
        let e = GatewayConfig::from_toml_str(text).unwrap_err();
        assert!(matches!(e, ConfigError::Toml { .. }), "{text}: {e:?}");
    }
    let dir = TempDir::new("toml-errors");
    let missing = dir.0.join("missing.toml");
    match GatewayConfig::from_toml_file(&missing) {
        Err(ConfigError::ReadFile { path, .. }) => assert_eq!(path, missing),
        other => panic!("{other:?}"),
    }
    let bad = dir.0.join("bad.toml");
    std::fs::write(&bad, "listen = 1\n").unwrap();
    let e = GatewayConfig::from_toml_file(&bad).unwrap_err();
    assert!(
        matches!(&e, ConfigError::Toml { path: Some(p), .. } if *p == bad),
        "{e:?}"
    );
    assert!(
        e.to_string().starts_with(&format!("--config {}: ", bad.display())),
        "{e}"
    );
}

#[test]
fn the_environment_overlays_the_file() {
    let mut config = GatewayConfig::from_toml_str(
        "listen = \"127.0.0.1:1\"\nupstream = \"http://127.0.0.1:1/a\"\nagents = [\"https://a.example/mcp\"]\nstore_namespace = \"file\"\nheader_timeout = 3\n",
    )
    .unwrap();
    config
        .apply_env_vars(vars(&[
            ("ADCP_GATEWAY_LISTEN", "127.0.0.1:0"),
            ("ADCP_GATEWAY_AGENTS", "https://b.example/mcp,https://c.example/mcp"),
            (
                "ADCP_GATEWAY_REVOCATION_LISTS",
                "https://b.example/mcp=https://b.example/r.json?format=jws",
            ),
            (
                "ADCP_GATEWAY_JWKS_URI_PINS",
                "https://c.example/mcp=https://keys.c.example/jwks.json",
            ),
            ("ADCP_GATEWAY_SELLERS", "https://d.example/mcp=/keys/d.json"),
            ("ADCP_GATEWAY_ADOPT_JWKS_URI_CHANGES", "true"),
            ("ADCP_GATEWAY_STORE", "memory:"),
            ("ADCP_GATEWAY_ACCEPT_HOSTS", "one.example,two.example:8443"),
            ("ADCP_GATEWAY_UPSTREAM_TIMEOUT", "4"),
            ("ADCP_GATEWAY_MAX_CONCURRENCY", "9"),
            ("ADCP_GATEWAY_HMAC_SECRET", "s3cret-from-the-environment"),
            ("ADCP_GATEWAY_QUIET", "true"),
        ]))
        .unwrap();
    assert_eq!(config.listen.port(), 0, "the variable wins over the file");
    assert_eq!(
        config.upstream.as_ref().map(url::Url::as_str),
        Some("http://127.0.0.1:1/a"),
        "unset: the file's"
    );
    assert_eq!(
        config.agents,
        ["https://b.example/mcp", "https://c.example/mcp"],
        "replaced, not merged"
    );
    assert_eq!(
        config.revocation_lists,
        [(
            "https://b.example/mcp".to_owned(),
            "https://b.example/r.json?format=jws".to_owned()
        )],
        "split at the first ="
    );
    assert_eq!(config.jwks_uri_pins.len(), 1);
    assert_eq!(
        config.sellers.get("https://d.example/mcp"),
        Some(&PathBuf::from("/keys/d.json"))
    );
    assert!(config.adopt_jwks_uri_changes);
    assert_eq!(config.store.url(), &adcp_store::StoreUrl::Memory);
    assert_eq!(config.store_namespace, "file");
    assert_eq!(config.accept_hosts, ["one.example", "two.example:8443"]);
    assert_eq!(config.upstream_timeout, Duration::from_secs(4));
    assert_eq!(config.header_timeout, Duration::from_secs(3));
    assert_eq!(config.max_concurrency, 9);
    assert_eq!(config.hmac_secret.as_deref(), Some(&b"s3cret-from-the-environment"[..]));
    assert!(!format!("{config:?}").contains("s3cret"), "Debug hides the secret");
    assert!(!config.access_log);
    config.validate().unwrap();

    // `false` switches change nothing.
    let mut quiet_off = GatewayConfig::default();
    quiet_off
        .apply_env_vars(vars(&[
            ("ADCP_GATEWAY_QUIET", "false"),
            ("ADCP_GATEWAY_ADOPT_JWKS_URI_CHANGES", "false"),
        ]))
        .unwrap();
    assert!(quiet_off.access_log);
    assert!(!quiet_off.adopt_jwks_uri_changes);
}

#[test]
fn from_env_reads_the_file_the_environment_names_then_the_rest() {
    let dir = TempDir::new("from-env");
    let file = dir.0.join("gateway.toml");
    std::fs::write(
        &file,
        "upstream = \"http://127.0.0.1:1/a\"\njwks = \"k.json\"\nbody_timeout = 7\n",
    )
    .unwrap();
    let config = GatewayConfig::from_env_vars(vars(&[
        ("ADCP_GATEWAY_CONFIG", file.to_str().unwrap()),
        ("ADCP_GATEWAY_BODY_TIMEOUT", "8"),
        ("ADCP_GATEWAY_JWKS_AGENT", SELLER),
    ]))
    .unwrap();
    assert_eq!(config.jwks, Some(dir.0.join("k.json")));
    assert_eq!(config.jwks_agent, SELLER);
    assert_eq!(config.body_timeout, Duration::from_secs(8));
    let none = GatewayConfig::from_env_vars(vars(&[])).unwrap();
    assert_eq!(none.upstream, None);
}

#[test]
fn invalid_variables_are_typed_errors() {
    for (var, value) in [
        ("ADCP_GATEWAY_LISTEN", "localhost"),
        ("ADCP_GATEWAY_UPSTREAM", "not a url"),
        ("ADCP_GATEWAY_PUBLIC_URL", "/relative"),
        ("ADCP_GATEWAY_UPSTREAM_TIMEOUT", "10s"),
        ("ADCP_GATEWAY_DEDUP_WINDOW", "-1"),
        ("ADCP_GATEWAY_MAX_BODY_BYTES", "1MiB"),
        ("ADCP_GATEWAY_QUIET", "1"),
        ("ADCP_GATEWAY_ADOPT_JWKS_URI_CHANGES", "yes"),
        ("ADCP_GATEWAY_JWKS", ""),
    ] {
        let e = GatewayConfig::default()
            .apply_env_vars(vars(&[(var, value)]))
            .unwrap_err();
        match &e {
            ConfigError::Env {
                var: named,
                value: given,
                ..
            } => {
                assert_eq!((*named, given.as_str()), (var, value));
            }
            other => panic!("{var}={value}: {other:?}"),
        }
        assert!(e.to_string().starts_with(&format!("{var}=")), "{e}");
    }
    let e = GatewayConfig::default()
        .apply_env_vars(vars(&[("ADCP_GATEWAY_STORE", "mysql://user:pw@db")]))
        .unwrap_err();
    assert!(
        matches!(&e, ConfigError::Store { store, .. } if store == "mysql://***@db"),
        "{e:?}"
    );
    let e = GatewayConfig::default()
        .apply_env_vars(vars(&[("ADCP_GATEWAY_SELLERS", "https://a.example/mcp")]))
        .unwrap_err();
    assert!(
        matches!(
            &e,
            ConfigError::MalformedEntry {
                setting: "--seller",
                expected: "JWKS_FILE",
                ..
            }
        ),
        "{e:?}"
    );
    // Two lists for one seller: each checked in order, then refused.
    let mut twice = GatewayConfig::new("http://127.0.0.1:1/events".parse().unwrap());
    twice
        .apply_env_vars(vars(&[
            ("ADCP_GATEWAY_AGENTS", "https://a.example/mcp"),
            (
                "ADCP_GATEWAY_REVOCATION_LISTS",
                "https://a.example/mcp=https://a.example/1,https://a.example/mcp=https://a.example/2",
            ),
        ]))
        .unwrap();
    let e = twice.validate().unwrap_err();
    assert!(matches!(&e, ConfigError::GivenTwice { what: "list", .. }), "{e:?}");
}

#[test]
fn validation_errors_are_typed() {
    let base = || {
        let mut config = GatewayConfig::new("http://127.0.0.1:1/events".parse().unwrap());
        config.agents = vec![SELLER.to_owned()];
        config
    };
    base().validate().unwrap();
    let check = |edit: &dyn Fn(&mut GatewayConfig), expected: &dyn Fn(&ConfigError) -> bool| {
        let mut config = base();
        edit(&mut config);
        let e = config.validate().unwrap_err();
        assert!(expected(&e), "{e:?}");
    };
    check(&|c| c.upstream = None, &|e| matches!(e, ConfigError::UpstreamMissing));
    check(&|c| c.agents.clear(), &|e| matches!(e, ConfigError::NoKeys));
    check(&|c| c.jwks = Some("k.json".into()), &|e| {
        matches!(e, ConfigError::JwksAndAgents)
    });
    check(
        &|c| {
            c.sellers.insert(SELLER.to_owned(), "k.json".into());
        },
        &|e| matches!(e, ConfigError::AgentAndSeller { seller } if seller == SELLER),
    );
    check(&|c| c.claim_lease = Duration::from_secs(10), &|e| {
        matches!(e, ConfigError::ClaimLeaseTooShort { .. })
            && e.to_string() == "--claim-lease (10 s) must be longer than --upstream-timeout (10 s)"
    });
    check(&|c| c.store_timeout = Duration::ZERO, &|e| {
        matches!(
            e,
            ConfigError::ZeroDuration {
                setting: "store-timeout"
            }
        )
    });
    check(&|c| c.dedup_window = Duration::from_secs(86_399), &|e| {
        matches!(e, ConfigError::DedupWindow { .. })
    });
    check(&|c| c.dedup_window = Duration::from_secs(7 * 86_400 + 1), &|e| {
        matches!(e, ConfigError::DedupWindow { .. })
    });
    check(&|c| c.max_concurrency = 0, &|e| {
        matches!(e, ConfigError::ZeroConcurrency)
    });
    check(
        &|c| {
            c.revocation_lists.push((
                "https://stranger.example/mcp".to_owned(),
                "https://x.example/r".to_owned(),
            ));
        },
        &|e| {
            matches!(
                e,
                ConfigError::NotAnAgent {
                    setting: "--revocation-list",
                    ..
                }
            )
        },
    );
    check(
        &|c| {
            c.jwks_uri_pins
                .push((SELLER.to_owned(), "http://keys.example/jwks.json".to_owned()));
        },
        &|e| {
            matches!(
                e,
                ConfigError::UnsafeUrl {
                    setting: "--pin-jwks-uri",
                    ..
                }
            )
        },
    );
    check(&|c| c.hmac_secret = Some(Vec::new()), &|e| {
        matches!(e, ConfigError::EmptyHmacSecret)
    });
    check(
        &|c| {
            c.agents.clear();
            c.hmac_secret = Some(b"s3cret".to_vec());
        },
        &|e| matches!(e, ConfigError::HmacSenderMissing),
    );
    check(&|c| c.hmac_secret_file = Some("/nonexistent/adcp-hmac".into()), &|e| {
        matches!(e, ConfigError::HmacSecretFile { .. })
    });
}

#[test]
fn store_locations_parse_and_print_without_credentials() {
    let store: StoreLocation = "redis://:pw@cache:6379/0".parse().unwrap();
    assert_eq!(store.to_string(), "redis://***@cache:6379/0");
    assert_eq!(format!("{store:?}"), "\"redis://***@cache:6379/0\"");
    assert!(matches!(
        "sqlite:".parse::<StoreLocation>(),
        Err(ConfigError::Store { .. })
    ));
}

#[test]
fn tls_revoked_kids_and_the_replay_cap_from_the_file_and_the_environment() {
    let dir = TempDir::new("tls-settings");
    let file = dir.0.join("gateway.toml");
    std::fs::write(
        &file,
        "tls_cert = \"tls/cert.pem\"\ntls_key = \"/etc/tls/key.pem\"\nrevoked_kids = [\"test-revoked-2026\"]\nreplay_cap_per_keyid = 100\n",
    )
    .unwrap();
    let mut config = GatewayConfig::from_toml_file(&file).unwrap();
    assert_eq!(
        config.tls_cert,
        Some(dir.0.join("tls/cert.pem")),
        "relative to the file"
    );
    assert_eq!(config.tls_key, Some(PathBuf::from("/etc/tls/key.pem")));
    assert_eq!(config.revoked_kids, ["test-revoked-2026"]);
    assert_eq!(config.replay_cap_per_keyid, Some(100));
    config
        .apply_env_vars(vars(&[
            ("ADCP_GATEWAY_TLS_CERT", "env-cert.pem"),
            ("ADCP_GATEWAY_TLS_KEY", "env-key.pem"),
            ("ADCP_GATEWAY_REVOKED_KIDS", "a,b"),
            ("ADCP_GATEWAY_REPLAY_CAP_PER_KEYID", "7"),
        ]))
        .unwrap();
    assert_eq!(config.tls_cert, Some(PathBuf::from("env-cert.pem")));
    assert_eq!(config.tls_key, Some(PathBuf::from("env-key.pem")));
    assert_eq!(config.revoked_kids, ["a", "b"]);
    assert_eq!(config.replay_cap_per_keyid, Some(7));
    // Defaults: plain HTTP, nothing revoked, the mode's cap.
    let defaults = GatewayConfig::default();
    assert_eq!((defaults.tls_cert, defaults.tls_key), (None, None));
    assert!(defaults.revoked_kids.is_empty());
    assert_eq!(defaults.replay_cap_per_keyid, None);
    // Invalid values.
    let mut config = GatewayConfig::new("http://127.0.0.1:1/events".parse().unwrap());
    let e = config
        .apply_env_vars(vars(&[("ADCP_GATEWAY_REPLAY_CAP_PER_KEYID", "many")]))
        .unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::Env {
                var: "ADCP_GATEWAY_REPLAY_CAP_PER_KEYID",
                ..
            }
        ),
        "{e:?}"
    );
    let e = config
        .apply_env_vars(vars(&[("ADCP_GATEWAY_TLS_CERT", "")]))
        .unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::Env {
                var: "ADCP_GATEWAY_TLS_CERT",
                ..
            }
        ),
        "{e:?}"
    );
    config.agents = vec![SELLER.to_owned()];
    config.replay_cap_per_keyid = Some(0);
    assert!(matches!(config.validate(), Err(ConfigError::ZeroReplayCap)));
    config.replay_cap_per_keyid = Some(1);
    config.revoked_kids = vec![String::new()];
    assert!(matches!(config.validate(), Err(ConfigError::EmptyRevokedKid)));
    config.revoked_kids = vec!["k".to_owned()];
    config.tls_key = Some(PathBuf::from("key.pem"));
    assert!(matches!(config.validate(), Err(ConfigError::TlsFilesIncomplete)));
    config.tls_key = None;
    config.validate().unwrap();
}

#[test]
fn the_purge_interval_from_the_file_and_the_environment() {
    assert_eq!(GatewayConfig::default().purge_interval, Duration::from_secs(300));
    let mut config = GatewayConfig::from_toml_str("purge_interval = 60\n").unwrap();
    assert_eq!(config.purge_interval, Duration::from_secs(60));
    config
        .apply_env_vars(vars(&[("ADCP_GATEWAY_PURGE_INTERVAL", "0")]))
        .unwrap();
    assert_eq!(config.purge_interval, Duration::ZERO, "0 turns the purge off");
    let e = config
        .apply_env_vars(vars(&[("ADCP_GATEWAY_PURGE_INTERVAL", "5m")]))
        .unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::Env {
                var: "ADCP_GATEWAY_PURGE_INTERVAL",
                ..
            }
        ),
        "{e:?}"
    );
    // Zero is valid: it only turns the purge off.
    config.upstream = Some("http://127.0.0.1:1/events".parse().unwrap());
    config.agents = vec![SELLER.to_owned()];
    config.validate().unwrap();
}

/// `Serialize` writes the TOML keys `from_toml_str` reads back, every
/// setting kept (pairs of a table in order, duplicates included, the
/// store's credentials); what is no TOML key is not written.
#[test]
fn every_setting_serializes_to_toml_that_reads_back() {
    let mut config = GatewayConfig::from_toml_str(
        r#"
        profile = "request"
        capabilities = "caps.json"
        binding = "operation-path"
        credential_header = "x-api-key"
        listen = "0.0.0.0:9000"
        upstream = "http://127.0.0.1:8080/events"
        agents = ["https://seller.example/mcp", "https://other.example/mcp"]
        adopt_jwks_uri_changes = true
        store = "postgres://adcp:hunter2@db:5432/adcp"
        store_namespace = "fleet"
        public_url = "https://buyer.example"
        accept_hosts = ["hooks.buyer.example"]
        tls_cert = "cert.pem"
        tls_key = "key.pem"
        revoked_kids = ["k1"]
        replay_cap_per_keyid = 9
        subscriptions = "subs.json"
        hmac_secret_file = "hmac.secret"
        hmac_sender = "https://seller.example/mcp"
        upstream_timeout = 7
        max_body_bytes = 4096
        store_timeout = 2
        claim_lease = 30
        dedup_window = 172800
        purge_interval = 0
        header_timeout = 3
        body_timeout = 4
        max_concurrency = 64

        [sellers]
        "https://static.example/mcp" = "static-jwks.json"

        [jwks_uri_pins]
        "https://other.example/mcp" = "https://keys.other.example/jwks.json"

        [agent_brand_json]
        "https://other.example/mcp" = "https://other.example/brand.json"
        "#,
    )
    .unwrap();
    config.revocation_lists = vec![
        (SELLER.to_owned(), "https://seller.example/2".to_owned()),
        (SELLER.to_owned(), "https://seller.example/1".to_owned()),
    ];
    config.hmac_secret = Some(b"s3cret".to_vec());
    config.access_log = false;
    let text = toml::to_string(&config).unwrap();
    assert!(text.contains("hunter2"), "the store URL as given: {text}");
    assert!(!text.contains("s3cret") && !text.contains("access_log"), "{text}");
    let back = GatewayConfig::from_toml_str(&text).unwrap();
    assert_eq!(back.store.url(), config.store.url());
    config.hmac_secret = None;
    config.access_log = true;
    assert_eq!(format!("{back:#?}"), format!("{config:#?}"));
    let defaults = GatewayConfig::from_toml_str(&toml::to_string(&GatewayConfig::default()).unwrap()).unwrap();
    assert_eq!(format!("{defaults:#?}"), format!("{:#?}", GatewayConfig::default()));
}

/// A table also reads the flags' syntax, a list of `SELLER_URL=VALUE`
/// entries, with the flags' errors; a bad enumerated value names its flag.
#[test]
fn tables_also_read_the_flags_entries() {
    let config = GatewayConfig::from_toml_str(
        r#"
        sellers = ["https://b.example/mcp=b.json", "https://a.example/mcp=/keys/a.json"]
        revocation_lists = ["https://a.example/mcp=https://a.example/r.json?format=jws", "https://a.example/mcp=https://a.example/2"]
        jwks_uri_pins = ["https://a.example/mcp=https://keys.a.example/jwks.json"]
        agent_brand_json = ["https://a.example/mcp=https://a.example/brand.json"]
        "#,
    )
    .unwrap();
    let sellers: Vec<_> = config.sellers.keys().map(String::as_str).collect();
    assert_eq!(sellers, ["https://a.example/mcp", "https://b.example/mcp"]);
    assert_eq!(
        config.revocation_lists,
        [
            (
                "https://a.example/mcp".to_owned(),
                "https://a.example/r.json?format=jws".to_owned()
            ),
            ("https://a.example/mcp".to_owned(), "https://a.example/2".to_owned()),
        ],
        "split at the first =, in order, duplicates kept for validate to refuse"
    );
    assert_eq!(config.jwks_uri_pins.len(), 1);
    assert_eq!(config.agent_brand_json.len(), 1);
    for (text, expected) in [
        (
            "sellers = [\"https://a.example/mcp\"]",
            "--seller \"https://a.example/mcp\": expected SELLER_URL=JWKS_FILE",
        ),
        (
            "sellers = [\"https://a.example/mcp=a.json\", \"https://a.example/mcp=b.json\"]",
            "--seller https://a.example/mcp: given twice",
        ),
        (
            "jwks_uri_pins = [\"=https://keys.example/\"]",
            "--pin-jwks-uri \"=https://keys.example/\": expected SELLER_URL=JWKS_URL",
        ),
        (
            "profile = \"both\"",
            "--profile must be webhook or request, not \"both\"",
        ),
        (
            "binding = \"rest\"",
            "--binding must be jsonrpc, http-json, operation-path or infer",
        ),
    ] {
        let e = GatewayConfig::from_toml_str(text).unwrap_err();
        assert!(
            matches!(e, ConfigError::Toml { .. }) && e.to_string().contains(expected),
            "{text}: {e}"
        );
    }
}
