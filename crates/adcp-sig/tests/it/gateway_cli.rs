//! `adcp-sig gateway` as a process: settings from a TOML file, the
//! environment and flags, each winning over the one before; serves,
//! forwards, exits 0 on SIGTERM after draining; usage errors (a bad
//! setting named by its key or flag) exit 2; secrets never printed.

use crate::support::gateway as common;
use common::{event, Seller, TempDir, Upstream, AGENT, PATH};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_process_serves_forwards_and_stops_on_sigterm() {
    let dir = TempDir::new("cli");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    std::fs::write(dir.0.join("seller-jwks.json"), seller.jwks.to_string()).unwrap();
    std::fs::write(
        dir.0.join("gateway.toml"),
        format!(
            "upstream = \"{}\"\njwks = \"seller-jwks.json\"\njwks_agent = \"{AGENT}\"\nlisten = \"127.0.0.1:1\"\n",
            upstream.url()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .args(["gateway", "--config"])
        .arg(dir.0.join("gateway.toml"))
        .arg("--store")
        .arg(dir.sqlite())
        // The environment wins over the file's listen address.
        .env("ADCP_GATEWAY_LISTEN", "127.0.0.1:0")
        .env("ADCP_GATEWAY_STORE_NAMESPACE", "ignored_by_sqlite")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (line, addr) = common::listening(&mut stderr);
    assert!(line.contains("RFC 9421"), "{line}");

    let signed = seller
        .signer
        .sign_webhook(&format!("http://{addr}{PATH}"), &event("a"))
        .await
        .unwrap();
    let client = common::http_client(Duration::from_secs(10)).unwrap();
    let status = common::signed_post(&client, format!("http://{addr}{PATH}"), &signed)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
    assert_eq!(upstream.applied_keys().len(), 1);
    let metrics = client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("adcp_gateway_forwarded_total 1\n"), "{metrics}");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    for l in stderr.lines() {
        rest.push_str(&l.unwrap());
        rest.push('\n');
    }
    assert_eq!(status.code(), Some(0), "{rest}");
    assert!(rest.contains("draining"), "{rest}");
    // The access log: status, outcome, verified identity; never the body.
    assert!(rest.contains("webhook 200 forwarded "), "{rest}");
    assert!(
        rest.contains(&format!("sender={AGENT:?} keyid=\"gw-test-key\"")),
        "{rest}"
    );
    assert!(!rest.contains("mb_a"), "{rest}");
}

#[test]
fn usage_errors_exit_2_and_secrets_stay_out_of_the_output() {
    let dir = TempDir::new("cli-usage");
    let run = |args: &[&str], envs: &[(&str, &str)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_adcp-sig"));
        command.arg("gateway").args(args).current_dir(&dir.0);
        for (k, v) in envs {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    // No keys.
    let (code, out) = run(&["--upstream", "http://127.0.0.1:9/events"], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--jwks"), "{out}");
    // No upstream.
    let (code, out) = run(&["--jwks", "missing.json"], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--upstream"), "{out}");
    // A store that cannot be opened: the password is not printed.
    std::fs::write(dir.0.join("k.json"), r#"{"keys":[]}"#).unwrap();
    let (code, out) = run(
        &[
            "--upstream",
            "http://127.0.0.1:9/events",
            "--jwks",
            "k.json",
            "--store",
            "postgres://adcp:hunter2-secret@127.0.0.1:1/db",
        ],
        &[("ADCP_GATEWAY_HMAC_SECRET", "hmac-secret-value")],
    );
    assert_eq!(code, Some(2), "{out}");
    assert!(!out.contains("hunter2-secret"), "{out}");
    assert!(!out.contains("hmac-secret-value"), "{out}");
    assert!(out.contains("***@127.0.0.1:1"), "{out}");
}

/// Each setting from its flag, else its variable, else the `--config`
/// file, else the default, as the listening line shows them: `--upstream`
/// given all three ways, `ADCP_GATEWAY_STORE` and the list
/// `ADCP_GATEWAY_REVOKED_KIDS` over the file's, the file's replay cap over
/// the default, the default `--jwks-agent`.
#[test]
fn a_flag_beats_its_variable_which_beats_the_file_which_beats_the_default() {
    let dir = TempDir::new("cli-precedence");
    let seller = Seller::new();
    std::fs::write(dir.0.join("seller-jwks.json"), seller.jwks.to_string()).unwrap();
    let file_store = format!("sqlite:{}", dir.0.join("file.sqlite").display());
    let env_store = format!("sqlite:{}", dir.0.join("env.sqlite").display());
    std::fs::write(
        dir.0.join("gateway.toml"),
        format!(
            "upstream = \"http://127.0.0.1:1/file\"\nlisten = \"127.0.0.1:1\"\njwks = \"seller-jwks.json\"\nstore = \"{file_store}\"\nrevoked_kids = [\"file-kid\"]\nreplay_cap_per_keyid = 50\n"
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .args(["gateway", "--config"])
        .arg(dir.0.join("gateway.toml"))
        .args(["--upstream", "http://127.0.0.1:3/flag", "--listen", "127.0.0.1:0"])
        .env("ADCP_GATEWAY_UPSTREAM", "http://127.0.0.1:2/env")
        .env("ADCP_GATEWAY_LISTEN", "127.0.0.1:1")
        .env("ADCP_GATEWAY_STORE", &env_store)
        .env("ADCP_GATEWAY_REVOKED_KIDS", "env-kid-1,env-kid-2")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (line, addr) = common::listening(&mut stderr);
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let status = child.wait().unwrap();
    assert_ne!(addr, "127.0.0.1:1", "the flag's listen address: {line}");
    assert!(
        line.contains("; upstream http://127.0.0.1:3/flag"),
        "flag > variable > file: {line}"
    );
    assert!(
        line.contains(&format!("; store {env_store};")),
        "variable > file: {line}"
    );
    assert!(
        line.contains("; revoked kids env-kid-1, env-kid-2"),
        "a list replaced: {line}"
    );
    assert!(line.contains("; replay cap 50 per keyid"), "file > default: {line}");
    assert!(line.contains("seller-jwks.json for jwks-file;"), "the default: {line}");
    assert_eq!(status.code(), Some(0));
}

/// An unknown TOML key, a value of the wrong type in the file, in a
/// variable or in a flag: exit 2 with a message naming the key (and its
/// line), the flag or the variable's flag.
#[test]
fn bad_settings_exit_2_naming_the_key_or_the_flag() {
    let dir = TempDir::new("cli-bad-settings");
    std::fs::write(dir.0.join("k.json"), r#"{"keys":[]}"#).unwrap();
    let run = |toml: &str, args: &[&str], envs: &[(&str, &str)]| {
        std::fs::write(
            dir.0.join("gateway.toml"),
            format!("upstream = \"http://127.0.0.1:9/\"\njwks = \"k.json\"\nstore = \"memory:\"\n{toml}"),
        )
        .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_adcp-sig"));
        command
            .args(["gateway", "--config", "gateway.toml"])
            .args(args)
            .current_dir(&dir.0);
        for (k, v) in envs {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, out) = run("lissen = \"127.0.0.1:0\"\n", &[], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("--config gateway.toml: ") && out.contains("unknown field `lissen`"),
        "{out}"
    );
    let (code, out) = run("upstream_timeout = \"10s\"\n", &[], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("upstream_timeout = \"10s\"") && out.contains("expected u64"),
        "{out}"
    );
    let (code, out) = run("", &[], &[("ADCP_GATEWAY_UPSTREAM_TIMEOUT", "10s")]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("invalid value '10s' for '--upstream-timeout <SECS>'"),
        "{out}"
    );
    let (code, out) = run("", &["--profile", "both"], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("--profile must be webhook or request, not \"both\""),
        "{out}"
    );
    let (code, out) = run("", &["--revoked-kid", "k", "--seller", "https://s.example/mcp"], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("--seller \"https://s.example/mcp\": expected SELLER_URL=JWKS_FILE"),
        "{out}"
    );
}
