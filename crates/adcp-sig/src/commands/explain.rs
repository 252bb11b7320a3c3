//! `adcp-sig explain`: why does this signature not verify?
//!
//! The verdict and the failing checklist step always come from the real
//! [`Verifier`] (the same one `adcp-sig verify` runs). This command then
//! recomputes, with the public building blocks (`SignatureInput`,
//! `signature_base`, `canonicalize_received`, `derive_authority`,
//! `ContentDigest`), the facts a human needs to see what was expected and
//! what was found at that step: the canonical `@target-uri` and
//! `@authority`, the signature window against the clock, the digest of the
//! received body beside the `Content-Digest` header, the key the `keyid`
//! resolved to, and the signature base the verifier computed beside the
//! sender's (a line diff when `--expected-base` supplies the sender's).
//! Those facts never decide anything: if they seem to disagree with the
//! verdict, the verdict wins and is printed first.
//!
//! Exit codes: 0 verified, 1 rejected (explained), 2 usage or I/O errors.

use crate::cli::{CoverageArg, VerifyProfileArg};
use crate::exit::Exit;
use adcp_sigbase::digest::{ContentDigest, DigestAlgorithm};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::jwk::Jwk;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput, SignatureParams};
use adcp_vectors::VectorRequest;
use adcp_verify::MemoryReplayStore;
use adcp_verify::Profile;
use adcp_verify::Verifier;
use adcp_verify::VerifyError;
use adcp_verify::{Clock, FixedClock, SystemClock};
use adcp_verify::{KeyResolver, ResolvedKey, StaticKeyResolver};
use clap::Args;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Arguments of `adcp-sig explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Request as JSON (the vectors' `request` shape, or a vector file).
    #[arg(long, value_name = "FILE")]
    pub request: PathBuf,
    /// JWKS (`{"keys": [...]}`) the signer's keys come from.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "agent",
        conflicts_with = "agent"
    )]
    pub jwks: Option<PathBuf>,
    /// Discover the signer's keys from this agent URL (brand.json at the
    /// agent's host → byte-equal `agents[]` → `jwks_uri`), over HTTPS.
    #[arg(long, value_name = "URL")]
    pub agent: Option<String>,
    /// Verify as of this Unix time instead of now.
    #[arg(long, value_name = "UNIX")]
    pub now: Option<i64>,
    /// Profile the request is verified under.
    #[arg(long, value_enum, default_value = "webhook")]
    pub profile: VerifyProfileArg,
    /// Legacy endpoint `covers_content_digest` policy (`--profile request-legacy`).
    #[arg(long, value_enum, default_value = "either")]
    pub covers_content_digest: CoverageArg,
    /// The signature base the sender computed (a file, as `adcp-sig base`
    /// prints it); the explanation then shows a line diff against the
    /// verifier's base.
    #[arg(long, value_name = "FILE")]
    pub expected_base: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Test-only network overrides for `--agent` (hidden flags).
    #[command(flatten)]
    pub test_network: crate::commands::resolve::TestNetworkArgs,
}

/// The signature label explained (the one the verifier checks).
const LABEL: &str = "sig1";

/// Runs the command.
pub fn run(args: &ExplainArgs) -> Exit {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("adcp-sig: cannot start the runtime: {e}");
            return Exit::Usage;
        }
    };
    match runtime.block_on(explain(args)) {
        Ok(report) => {
            if args.json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.to_text());
            }
            if report.verdict.is_ok() {
                Exit::Ok
            } else {
                Exit::Rejected
            }
        }
        Err(e) => {
            eprintln!("adcp-sig: {e}");
            Exit::Usage
        }
    }
}

fn read_text(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_json(path: &Path) -> Result<Value, String> {
    serde_json::from_str(&read_text(path)?).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads a request file: a bare request object, or a vector holding one.
pub(crate) fn load_request(path: &Path) -> Result<VectorRequest, String> {
    let doc = read_json(path)?;
    VectorRequest::from_json(doc.get("request").unwrap_or(&doc)).map_err(|e| format!("{}: {e}", path.display()))
}

/// A message over a loaded request.
pub(crate) fn message(req: &VectorRequest) -> Message<'_> {
    let mut msg = Message::request(req.method.as_str(), req.url.as_str());
    for (name, value) in &req.headers {
        msg.push_header(name.as_str(), value.as_str());
    }
    if let Some(body) = &req.body {
        msg = msg.with_body(body.as_bytes());
    }
    msg
}

/// A resolved key and its RFC 7638 thumbprint (known for a JWKS file).
type KeyFacts = (Arc<ResolvedKey>, Option<String>);

/// Everything the explanation prints.
struct Report {
    profile: Profile,
    now: i64,
    verdict: Result<String, VerifyError>,
    method: String,
    url: String,
    /// Canonical `@target-uri`, or why the URL has none.
    target_uri: Result<String, String>,
    /// `@authority` and where it came from, or why it could not be derived.
    authority: Result<(String, &'static str), String>,
    /// The parsed `sig1` parameters, or why they could not be parsed.
    params: Result<SignatureParams, String>,
    /// `Content-Digest` header as received.
    digest_header: Option<String>,
    /// The digest of the received body, in the header's algorithms.
    digest_body: Option<String>,
    /// The key `keyid` resolved to, with its thumbprint when known.
    key: Result<Option<KeyFacts>, String>,
    /// The kids the key source holds (JWKS file only).
    known_kids: Vec<String>,
    /// The base the verifier computes.
    base: Result<String, String>,
    /// The sender's base: `--expected-base`, else the base over the URL
    /// exactly as sent (when it differs from the canonical one).
    sender_base: Option<(String, &'static str)>,
}

async fn explain(args: &ExplainArgs) -> Result<Report, String> {
    let req = load_request(&args.request)?;
    let profile = crate::commands::verify::profile(args.profile, args.covers_content_digest);
    let (resolver, jwks): (Arc<dyn KeyResolver>, Option<Value>) = match (&args.jwks, &args.agent) {
        (Some(path), _) => {
            let jwks = read_json(path)?;
            (
                Arc::new(StaticKeyResolver::new().with_jwks(&jwks, "jwks-file")),
                Some(jwks),
            )
        }
        (None, Some(agent)) => {
            let surface = if profile.is_webhook() {
                adcp_jwks::SigningSurface::Webhook
            } else {
                adcp_jwks::SigningSurface::Request
            };
            let pinned = args.now;
            let mut builder = adcp_jwks::HttpsKeyResolver::builder(agent.clone())
                .surface(surface)
                .fetch_config(args.test_network.fetch_config()?);
            if let Some(now) = pinned {
                builder = builder.clock(Arc::new(FixedClock(now)));
            }
            let resolver = builder.build().map_err(|e| format!("--agent {agent}: {e}"))?;
            (Arc::new(resolver), None)
        }
        (None, None) => return Err("explain needs --jwks FILE or --agent URL".into()),
    };
    let expected_base = args.expected_base.as_deref().map(read_text).transpose()?;
    let now = args.now.unwrap_or_else(|| SystemClock.now());
    let msg = message(&req);

    // The verdict: the real verifier, nothing else.
    let store = if profile.is_webhook() {
        MemoryReplayStore::webhook()
    } else {
        MemoryReplayStore::request()
    };
    let verifier = Verifier::new(profile.clone(), resolver.clone(), store, FixedClock(now));
    let verdict = verifier.verify(&msg).await.map(|signer| signer.keyid);

    // The facts, recomputed with the public building blocks.
    let canonical = adcp_canon::canonicalize_received(req.url.as_str()).map_err(|e| e.to_string());
    fn first<'m>(msg: &'m Message<'_>, name: &'static str) -> Option<&'m [u8]> {
        msg.field_lines(name).next()
    }
    let authority = canonical.as_ref().map_err(Clone::clone).and_then(|target| {
        match (first(&msg, ":authority"), first(&msg, "host")) {
            (None, None) => Ok((target.authority().to_owned(), "the URL; no Host or :authority header")),
            (a, h) => adcp_canon::derive_authority(target, a, h)
                .map(|s| (s.to_owned(), if a.is_some() { ":authority" } else { "Host" }))
                .map_err(|e| e.to_string()),
        }
    });
    let params = SignatureInput::from_message(&msg)
        .map_err(|e| e.to_string())
        .and_then(|input| input.ok_or_else(|| "no Signature-Input header".to_owned()))
        .and_then(|input| {
            input
                .into_signature(LABEL)
                .ok_or_else(|| format!("no `{LABEL}` signature"))
        });

    let digest_header = first(&msg, "content-digest").map(|v| String::from_utf8_lossy(v).into_owned());
    let digest_body = msg.body().map(|body| {
        let algorithms = digest_algorithms(digest_header.as_deref());
        ContentDigest::compute(body, &algorithms, BinaryEncoding::Base64Padded)
    });

    let keyid = params.as_ref().ok().and_then(|p| p.keyid().map(str::to_owned));
    let key = match &keyid {
        None => Ok(None),
        Some(kid) => match resolver.resolve(kid).await {
            Ok(Some(key)) => {
                let thumbprint = jwks
                    .as_ref()
                    .and_then(|j| j["keys"].as_array())
                    .and_then(|keys| keys.iter().find(|k| k["kid"].as_str() == Some(kid)))
                    .and_then(|jwk| Jwk::from_json_value(jwk).ok())
                    .map(|jwk| jwk.thumbprint());
                Ok(Some((key, thumbprint)))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(e.to_string()),
        },
    };
    let known_kids = jwks
        .as_ref()
        .and_then(|j| j["keys"].as_array())
        .map(|keys| {
            keys.iter()
                .filter_map(|k| k["kid"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();

    let base = match (&params, &canonical, &authority) {
        (Ok(p), Ok(target), Ok((authority, _))) => {
            let opts = BaseOptions {
                target_uri: Some(target.as_str()),
                authority: Some(authority),
                ..BaseOptions::default()
            };
            signature_base(&msg, p, &opts)
                .map(|b| b.to_str_lossy().into_owned())
                .map_err(|e| e.to_string())
        }
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Err(e.clone()),
    };
    let sender_base = match expected_base {
        Some(text) => Some((text.trim_end_matches(['\r', '\n']).to_owned(), "--expected-base")),
        None => as_sent_base(&msg, &req.url, params.as_ref().ok())
            .filter(|b| base.as_ref().is_ok_and(|ours| ours != b))
            .map(|b| (b, "the URL exactly as sent, not canonicalized")),
    };

    Ok(Report {
        profile,
        now,
        verdict,
        method: req.method.clone(),
        url: req.url.clone(),
        target_uri: canonical.map(|c| c.as_str().to_owned()),
        authority,
        params,
        digest_header,
        digest_body,
        key,
        known_kids,
        base,
        sender_base,
    })
}

/// The digest algorithms named in a `Content-Digest` header (SHA-256 when
/// there is none or it names no known one).
fn digest_algorithms(header: Option<&str>) -> Vec<DigestAlgorithm> {
    let mut algorithms = Vec::new();
    for member in header.unwrap_or_default().split(',') {
        match member.trim().split('=').next() {
            Some("sha-256") => algorithms.push(DigestAlgorithm::Sha256),
            Some("sha-512") => algorithms.push(DigestAlgorithm::Sha512),
            _ => {}
        }
    }
    if algorithms.is_empty() {
        algorithms.push(DigestAlgorithm::Sha256);
    }
    algorithms
}

/// The base a sender that skipped canonicalization would have signed: the
/// URL exactly as sent, its authority as written.
fn as_sent_base(msg: &Message<'_>, url: &str, params: Option<&SignatureParams>) -> Option<String> {
    let params = params?;
    let authority = url.split_once("://")?.1.split(['/', '?', '#']).next()?;
    let opts = BaseOptions {
        target_uri: Some(url),
        authority: Some(authority),
        ..BaseOptions::default()
    };
    signature_base(msg, params, &opts)
        .ok()
        .map(|b| b.to_str_lossy().into_owned())
}

/// One line of a diff: `' '` same, `'-'` sender only, `'+'` verifier only.
type DiffLine<'a> = (char, &'a str);

/// A line diff (longest common subsequence) from `old` to `new`.
fn line_diff<'a>(old: &'a str, new: &'a str) -> Vec<DiffLine<'a>> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(('-', a[i]));
            i += 1;
        } else {
            out.push(('+', b[j]));
            j += 1;
        }
    }
    out
}

/// The name of a checklist step.
fn step_name(number: u8, sub: Option<char>) -> &'static str {
    match (number, sub) {
        (0, _) => "before the checklist (signature presence / auth mode)",
        (1, _) => "Signature / Signature-Input parsing",
        (2, _) => "required signature parameters",
        (3, _) => "tag",
        (4, _) => "algorithm allowlist",
        (5, _) => "signature window",
        (6, _) => "covered components",
        (7, _) => "key resolution (keyid)",
        (8, _) => "key purpose",
        (9, Some('a')) => "per-keyid replay-cache cap",
        (9, _) => "revocation",
        (10, _) => "target URI, authority and signature",
        (11, _) => "content-digest",
        (12, _) => "replay",
        (13, _) => "replay-cache insert",
        (14, _) => "body well-formedness",
        _ => "unknown step",
    }
}

/// Maximum clock skew and signature validity the profile allows (seconds).
const SKEW: i64 = 60;
const MAX_VALIDITY: i64 = 300;

impl Report {
    fn keyid(&self) -> Option<&str> {
        self.params.as_ref().ok().and_then(|p| p.keyid())
    }

    /// Which window conditions fail at `now`, in spec wording.
    fn window_failures(&self) -> Vec<String> {
        let Ok(p) = &self.params else { return Vec::new() };
        let (Some(c), Some(e)) = (p.created(), p.expires()) else {
            return Vec::new();
        };
        let now = self.now;
        let mut out = Vec::new();
        if e <= c {
            out.push(format!("expires ({e}) <= created ({c})"));
        }
        if c > now + SKEW {
            out.push(format!("created ({c}) > now + {SKEW} ({})", now + SKEW));
        }
        if e < now - SKEW {
            out.push(format!("expires ({e}) < now - {SKEW} ({})", now - SKEW));
        }
        if e - c > MAX_VALIDITY {
            out.push(format!("expires - created ({}) > {MAX_VALIDITY}", e - c));
        }
        out
    }

    /// The base diff (sender → verifier), when both bases are known.
    fn diff(&self) -> Option<Vec<DiffLine<'_>>> {
        match (&self.sender_base, &self.base) {
            (Some((sender, _)), Ok(ours)) => Some(line_diff(sender, ours)),
            _ => None,
        }
    }

    /// What the failing step expected and what it found.
    fn expected_found(&self, e: &VerifyError) -> (String, String) {
        let p = self.params.as_ref().ok();
        let step = e.step();
        match step.number {
            1 => (
                "a Signature and a Signature-Input header, well-formed, with the same label".into(),
                e.detail().to_owned(),
            ),
            2 => (
                "created, expires, nonce, keyid, alg and tag all present".into(),
                match p {
                    Some(p) => format!(
                        "parameters: {}",
                        ["created", "expires", "nonce", "keyid", "alg", "tag"]
                            .into_iter()
                            .filter(|n| p.params().get(n).is_some())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    None => e.detail().to_owned(),
                },
            ),
            3 => (
                format!("tag=\"{}\"", self.profile.tag()),
                format!("tag=\"{}\"", p.and_then(|p| p.tag()).unwrap_or("")),
            ),
            4 => (
                format!(
                    "alg in [{}]",
                    self.profile
                        .algorithms()
                        .iter()
                        .map(|a| a.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                format!("alg=\"{}\"", p.and_then(|p| p.alg()).unwrap_or("")),
            ),
            5 => (
                format!(
                    "created < expires, created <= now + {SKEW}, expires >= now - {SKEW}, \
                     expires - created <= {MAX_VALIDITY} (now = {})",
                    self.now
                ),
                {
                    let failures = self.window_failures();
                    if failures.is_empty() {
                        e.detail().to_owned()
                    } else {
                        failures.join("; ")
                    }
                },
            ),
            6 => (
                if self.profile.is_webhook() {
                    "covered: \"@method\" \"@target-uri\" \"@authority\" \"content-type\" \"content-digest\"".into()
                } else {
                    "covered: \"@method\" \"@target-uri\" \"@authority\", plus \"content-type\" and \
                     \"content-digest\" when the request has a body (per the profile's digest policy)"
                        .into()
                },
                match p {
                    Some(p) => format!(
                        "covered: {}",
                        p.components()
                            .iter()
                            .map(|c| c.to_string())
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                    None => e.detail().to_owned(),
                },
            ),
            7 => (
                format!("a key with kid \"{}\"", self.keyid().unwrap_or("")),
                if self.known_kids.is_empty() {
                    e.detail().to_owned()
                } else {
                    format!("key source holds kids: {}", self.known_kids.join(", "))
                },
            ),
            8 => (
                format!(
                    "use \"sig\", key_ops containing \"verify\", adcp_use in [{}], alg/crv consistent",
                    self.profile.key_purposes().join(", ")
                ),
                match &self.key {
                    Ok(Some((k, _))) => format!(
                        "use {:?}, key_ops {:?}, adcp_use {:?}{}",
                        k.use_(),
                        k.key_ops(),
                        k.adcp_use(),
                        k.key()
                            .err()
                            .map(|e| format!(", key unusable: {e}"))
                            .unwrap_or_default()
                    ),
                    _ => e.detail().to_owned(),
                },
            ),
            10 if e.code_str().ends_with("target_uri_malformed") => (
                "a canonical @target-uri whose authority equals the Host / :authority header".into(),
                format!(
                    "url {}; canonical {}; authority {}",
                    self.url,
                    self.target_uri.as_deref().unwrap_or_else(|e| e),
                    match &self.authority {
                        Ok((a, from)) => format!("{a} (from {from})"),
                        Err(e) => e.clone(),
                    }
                ),
            ),
            10 => {
                let key = match &self.key {
                    Ok(Some((k, thumb))) => format!(
                        "kid \"{}\"{}",
                        k.kid(),
                        thumb.as_ref().map(|t| format!(" (thumbprint {t})")).unwrap_or_default()
                    ),
                    _ => format!("kid \"{}\"", self.keyid().unwrap_or("")),
                };
                let found = match self.diff() {
                    Some(d) if d.iter().all(|(c, _)| *c == ' ') => format!(
                        "the signature does not verify under {key}, yet the signature base is identical to the \
                         sender's: the sender signed with another key (or the JWKS is stale)"
                    ),
                    Some(d) => format!(
                        "the signature does not verify under {key}; the signature base differs from the \
                         sender's in {} line(s) (diff below)",
                        d.iter().filter(|(c, _)| *c == '+').count()
                    ),
                    None => format!(
                        "the signature does not verify under {key} (pass the sender's base with \
                         --expected-base to see which lines differ)"
                    ),
                };
                (format!("a signature by {key} over the signature base below"), found)
            }
            11 => (
                format!(
                    "Content-Digest (header): {}",
                    self.digest_header.as_deref().unwrap_or("(absent)")
                ),
                format!(
                    "digest of the received body: {}",
                    self.digest_body.as_deref().unwrap_or("(no body)")
                ),
            ),
            12 => (
                format!("a nonce not seen before for keyid \"{}\"", self.keyid().unwrap_or("")),
                e.detail().to_owned(),
            ),
            14 => (
                "a strict JSON body (no duplicate object keys)".into(),
                e.detail().to_owned(),
            ),
            _ => ("(see the verifier's detail)".into(), e.detail().to_owned()),
        }
    }

    fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let o = &mut out;
        match &self.verdict {
            Ok(keyid) => {
                let _ = writeln!(o, "verdict: verified (keyid {keyid}, profile {})", self.profile.name());
            }
            Err(e) => {
                let step = e.step();
                let _ = writeln!(
                    o,
                    "verdict: rejected: {} at step {} ({})",
                    e.code_str(),
                    step,
                    step_name(step.number, step.sub)
                );
                let _ = writeln!(o, "verifier detail: {}", e.detail());
                let (expected, found) = self.expected_found(e);
                let _ = writeln!(o, "\nstep {step}: {}", step_name(step.number, step.sub));
                let _ = writeln!(o, "  expected: {expected}");
                let _ = writeln!(o, "  found:    {found}");
            }
        }
        let _ = writeln!(o, "\nrequest");
        let _ = writeln!(o, "  method:           {}", self.method);
        let _ = writeln!(o, "  url (as sent):    {}", self.url);
        match &self.target_uri {
            Ok(t) => {
                let _ = writeln!(o, "  @target-uri:      {t}");
            }
            Err(e) => {
                let _ = writeln!(o, "  @target-uri:      (none: {e})");
            }
        }
        match &self.authority {
            Ok((a, from)) => {
                let _ = writeln!(o, "  @authority:       {a} (from {from})");
            }
            Err(e) => {
                let _ = writeln!(o, "  @authority:       (none: {e})");
            }
        }
        let _ = writeln!(
            o,
            "  content-digest:   {} (header)",
            self.digest_header.as_deref().unwrap_or("(absent)")
        );
        let _ = writeln!(
            o,
            "  body digest:      {}{}",
            self.digest_body.as_deref().unwrap_or("(no body)"),
            match (&self.digest_header, &self.digest_body) {
                (Some(h), Some(b)) if h == b => " (matches)",
                (Some(_), Some(_)) => " (DIFFERS from the header)",
                _ => "",
            }
        );
        let _ = writeln!(o, "\nsignature {LABEL}");
        match &self.params {
            Ok(p) => {
                let _ = writeln!(o, "  keyid:            {}", p.keyid().unwrap_or("(absent)"));
                let _ = writeln!(o, "  alg:              {}", p.alg().unwrap_or("(absent)"));
                let _ = writeln!(o, "  tag:              {}", p.tag().unwrap_or("(absent)"));
                let _ = writeln!(
                    o,
                    "  created:          {}",
                    p.created().map(|c| c.to_string()).unwrap_or("(absent)".into())
                );
                let _ = writeln!(
                    o,
                    "  expires:          {}",
                    p.expires().map(|c| c.to_string()).unwrap_or("(absent)".into())
                );
                let failures = self.window_failures();
                let _ = writeln!(
                    o,
                    "  now:              {}{}",
                    self.now,
                    if failures.is_empty() {
                        " (window ok)".to_owned()
                    } else {
                        format!(" (window fails: {})", failures.join("; "))
                    }
                );
                let _ = writeln!(o, "  nonce:            {}", p.nonce().unwrap_or("(absent)"));
                let _ = writeln!(
                    o,
                    "  covered:          {}",
                    p.components()
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                );
            }
            Err(e) => {
                let _ = writeln!(o, "  (unparsable: {e})");
            }
        }
        let _ = writeln!(o, "\nkey");
        match &self.key {
            Ok(Some((k, thumb))) => {
                let _ = writeln!(o, "  kid:              {}", k.kid());
                if let Ok((_, alg)) = k.key() {
                    let _ = writeln!(o, "  algorithm:        {}", alg.as_str());
                }
                if let Some(t) = thumb {
                    let _ = writeln!(o, "  thumbprint:       {t}");
                }
                let _ = writeln!(o, "  adcp_use:         {}", k.adcp_use().unwrap_or("(absent)"));
            }
            Ok(None) => {
                let _ = writeln!(o, "  (no key for keyid {:?})", self.keyid().unwrap_or(""));
            }
            Err(e) => {
                let _ = writeln!(o, "  (key source failed: {e})");
            }
        }
        match &self.base {
            Ok(base) => {
                let _ = writeln!(o, "\nsignature base (verifier)");
                for line in base.lines() {
                    let _ = writeln!(o, "  {line}");
                }
            }
            Err(e) => {
                let _ = writeln!(o, "\nsignature base: (not computable: {e})");
            }
        }
        if let (Some((_, source)), Some(diff)) = (&self.sender_base, self.diff()) {
            if diff.iter().all(|(c, _)| *c == ' ') {
                let _ = writeln!(o, "\nsignature base: identical to the sender's ({source})");
            } else {
                let _ = writeln!(o, "\nsignature base diff (- sender: {source}, + verifier)");
                for (c, line) in diff {
                    let _ = writeln!(o, "{c} {line}");
                }
            }
        }
        out
    }

    fn to_json(&self) -> Value {
        let mut v = json!({
            "ok": self.verdict.is_ok(),
            "profile": self.profile.name(),
            "now": self.now,
            "request": {
                "method": self.method,
                "url": self.url,
                "target_uri": self.target_uri.as_ref().ok(),
                "target_uri_error": self.target_uri.as_ref().err(),
                "authority": self.authority.as_ref().ok().map(|(a, _)| a),
                "authority_source": self.authority.as_ref().ok().map(|(_, s)| s),
                "authority_error": self.authority.as_ref().err(),
                "content_digest_header": self.digest_header,
                "body_digest": self.digest_body,
            },
            "signature_base": self.base.as_ref().ok(),
        });
        if let Ok(p) = &self.params {
            v["signature"] = json!({
                "label": LABEL,
                "keyid": p.keyid(),
                "alg": p.alg(),
                "tag": p.tag(),
                "created": p.created(),
                "expires": p.expires(),
                "nonce": p.nonce(),
                "components": p.components().iter().map(|c| c.to_string()).collect::<Vec<_>>(),
                "window_failures": self.window_failures(),
            });
        }
        if let Ok(Some((k, thumb))) = &self.key {
            v["key"] = json!({
                "kid": k.kid(),
                "algorithm": k.key().ok().map(|(_, a)| a.as_str()),
                "thumbprint": thumb,
                "adcp_use": k.adcp_use(),
            });
        }
        if let Some((sender, source)) = &self.sender_base {
            v["sender_base"] = json!({ "source": source, "signature_base": sender });
        }
        if let Some(diff) = self.diff() {
            v["base_diff"] = diff
                .iter()
                .filter(|(c, _)| *c != ' ')
                .map(|(c, line)| json!({"side": if *c == '-' { "sender" } else { "verifier" }, "line": line}))
                .collect();
        }
        match &self.verdict {
            Ok(keyid) => v["keyid"] = json!(keyid),
            Err(e) => {
                let (expected, found) = self.expected_found(e);
                v["error_code"] = json!(e.code_str());
                v["step"] = json!(e.step().to_string());
                v["step_name"] = json!(step_name(e.step().number, e.step().sub));
                v["detail"] = json!(e.detail());
                v["expected"] = json!(expected);
                v["found"] = json!(found);
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::line_diff;

    #[test]
    fn line_diff_marks_changed_lines_only() {
        let d = line_diff("a\nb\nc", "a\nB\nc");
        assert_eq!(d, vec![(' ', "a"), ('-', "b"), ('+', "B"), (' ', "c")]);
        assert!(line_diff("x\ny", "x\ny").iter().all(|(c, _)| *c == ' '));
        assert_eq!(line_diff("a", "a\nb"), vec![(' ', "a"), ('+', "b")]);
    }
}
