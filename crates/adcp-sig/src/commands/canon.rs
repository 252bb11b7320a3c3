//! `adcp-sig canon`: AdCP identity canonicalization of URLs.

use crate::cli::CanonArgs;
use crate::exit::Exit;
use adcp_canon::{canonicalize, canonicalize_received, CanonError, CanonicalUrl, Profile};
use serde::Serialize;
use std::ffi::OsString;
use std::io::Write;

/// `--json` line for an accepted URL.
#[derive(Serialize)]
struct Accepted<'a> {
    input: &'a str,
    target_uri: &'a str,
    authority: &'a str,
}

/// `--json` line for a rejected URL.
#[derive(Serialize)]
struct Rejected<'a> {
    input: &'a str,
    error: &'static str,
    message: String,
}

pub fn run(args: &CanonArgs) -> Exit {
    let profile = Profile::from(args.profile);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut exit = Exit::Ok;
    for raw in &args.urls {
        let (display, result) = canonicalize_arg(raw, args.received);
        if result.is_err() {
            exit = Exit::Rejected;
        }
        let written = if args.json {
            let line = match &result {
                Ok(url) => serde_json::to_string(&Accepted {
                    input: &display,
                    target_uri: url.as_str(),
                    authority: url.authority(),
                }),
                Err(e) => serde_json::to_string(&Rejected {
                    input: &display,
                    error: e.code(profile),
                    message: e.to_string(),
                }),
            };
            match line {
                Ok(line) => writeln!(out, "{line}"),
                Err(e) => Err(std::io::Error::other(e)),
            }
        } else {
            match &result {
                Ok(url) => writeln!(out, "{}\t{}", url.as_str(), url.authority()),
                Err(e) => {
                    eprintln!("adcp-sig: rejected {display:?}: {}: {e}", e.code(profile));
                    Ok(())
                }
            }
        };
        if written.is_err() {
            return Exit::Usage;
        }
    }
    exit
}

/// Canonicalizes one argument; returns it as text for display too. With
/// `--received` the raw bytes are used, so invalid UTF-8 reaches the
/// canonicalizer (and is rejected there) instead of being mangled first.
fn canonicalize_arg(raw: &OsString, received: bool) -> (String, Result<CanonicalUrl, CanonError>) {
    let display = raw.to_string_lossy().into_owned();
    let result = if received {
        canonicalize_received(os_bytes(raw).as_ref())
    } else {
        match raw.to_str() {
            Some(s) => canonicalize(s),
            None => canonicalize_received(os_bytes(raw).as_ref()),
        }
    };
    (display, result)
}

#[cfg(unix)]
fn os_bytes(raw: &OsString) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(raw.as_os_str().as_bytes())
}

#[cfg(not(unix))]
fn os_bytes(raw: &OsString) -> std::borrow::Cow<'_, [u8]> {
    std::borrow::Cow::Owned(raw.to_string_lossy().into_owned().into_bytes())
}
