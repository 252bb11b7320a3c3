//! Command-line grammar (clap derive).

use adcp_canon::Profile;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

/// Sign, verify and debug AdCP RFC 9421 webhooks and requests.
#[derive(Debug, Parser)]
#[command(name = "adcp-sig", version, about, propagate_version = true)]
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Canonicalize URLs as AdCP identifiers (`@target-uri` and `@authority`).
    Canon(CanonArgs),
    /// Compare two URNs for RFC 8141 equivalence (exit 0 equivalent, 1 not, 2 malformed).
    UrnEq(UrnEqArgs),
    /// Normalize URLs for deduplication (lossy; never for identity or signing).
    Normalize(NormalizeArgs),
    /// Print the RFC 9421 signature base computed for a request.
    Base(BaseArgs),
    /// Verify a signed request or webhook (or one conformance vector).
    Verify(VerifyArgs),
    /// Run the whole AdCP conformance suite (request, webhook and governance vectors); ends with
    /// `N passed, M failed (X request/webhook, Y governance)`.
    Conformance(ConformanceArgs),
    /// Generate an Ed25519 or ES256 signing key: a private JWK and a public JWKS.
    Keygen(KeygenArgs),
    /// Sign a webhook or request; prints `{"method","url","headers","body"}` for `adcp-sig verify --request`
    /// (`--count N`: N requests, one per line, for `verify-batch`).
    Sign(SignArgs),
    /// Prove a subscriber controls its webhook URL: send a signed activation challenge and check the echo
    /// (exit 0 activated, 1 not activated, 2 usage).
    Activate(ActivateArgs),
    /// Send one AdCP call signed as the counterparty's `request_signing` capability asks; prints the
    /// status, the body and the signing decision (exit 0 on a 2xx, 1 otherwise, 2 usage).
    Call(CallArgs),
    /// Discover an agent's signing keys; prints the per-step trace and the JWKS, or the spec error code.
    Resolve(crate::commands::resolve::ResolveArgs),
    /// Explain a verdict: the failing checklist step, what it expected and what it found (bases, digest, key).
    Explain(crate::commands::explain::ExplainArgs),
    /// Verify one request per line of a JSONL file with one verifier; ends with `N verified, M rejected` and the rate.
    VerifyBatch(crate::commands::verify_batch::VerifyBatchArgs),
    /// Governance tokens (AdCP JWS profile): `gov verify` runs the 15-step checklist (exit 0 accepted,
    /// 1 rejected, 2 usage), `gov sign` issues one.
    Gov(crate::commands::gov::GovArgs),
    /// Grade a live endpoint against the conformance suite: `request-signing URL`, `receiver URL`, `signer`,
    /// `sender --listen ADDR`; ends with `N passed, M failed, K skipped` (exit 0 all passed, 1 a failure, 2 usage).
    Grade(crate::commands::grade::GradeArgs),
    /// Run the seller's relay: durable, signed webhook delivery behind an HTTP API (`POST /v1/events`);
    /// prints `listening on http://ADDR` when ready, drains on SIGTERM.
    Relay(Box<adcp_sig::relay::RelayArgs>),
    /// Operate a relay's outbox: `outbox list|show|redrive|purge --store URL` (exit 0 done, 1 missing or
    /// not redrivable, 2 usage or store unreachable).
    Outbox(crate::commands::outbox::OutboxArgs),
    /// Run the verifying gateway: verify, deduplicate and forward webhooks to an upstream app.
    Gateway(Box<adcp_sig::gateway::GatewayArgs>),
    /// Run a gateway against signed, duplicated, replayed, tampered and expired webhooks; print what happened.
    Demo(adcp_sig::demo::DemoArgs),
}

/// The signing profile whose error codes are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    /// `webhook_*` codes (tag `adcp/webhook-signing/v1`).
    Webhook,
    /// `request_*` codes (tag `adcp/request-signing/v1`).
    Request,
}

impl From<ProfileArg> for Profile {
    fn from(p: ProfileArg) -> Self {
        match p {
            ProfileArg::Webhook => Profile::Webhook,
            ProfileArg::Request => Profile::Request,
        }
    }
}

/// Arguments of `adcp-sig canon`.
#[derive(Debug, Args)]
pub struct CanonArgs {
    /// Treat the URLs as received off the wire: raw non-ASCII is rejected
    /// instead of converted.
    #[arg(long)]
    pub received: bool,
    /// Profile whose error codes to report.
    #[arg(long, value_enum, default_value = "webhook")]
    pub profile: ProfileArg,
    /// One JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// URLs to canonicalize.
    #[arg(required = true, value_name = "URL")]
    pub urls: Vec<OsString>,
}

/// Arguments of `adcp-sig urn-eq`.
#[derive(Debug, Args)]
pub struct UrnEqArgs {
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// First URN.
    pub a: String,
    /// Second URN.
    pub b: String,
}

/// Arguments of `adcp-sig normalize`.
#[derive(Debug, Args)]
pub struct NormalizeArgs {
    /// Site-rules file (JSON or TOML, chosen by extension).
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Sort query parameters by name, then value, for every host (rule 10).
    #[arg(long)]
    pub sort_query: bool,
    /// Remove query parameters whose name matches GLOB (`utm_*`), for every
    /// host (rule 11). Repeatable.
    #[arg(long, value_name = "GLOB")]
    pub remove_param: Vec<String>,
    /// Remove directory index files (`index.html`, `default.asp`, …) (rule 3).
    #[arg(long)]
    pub directory_index: bool,
    /// Remove a leading `www.` label for every host (rule 9).
    #[arg(long)]
    pub www_alias: bool,
    /// Remove an empty `?` (rule 13).
    #[arg(long)]
    pub drop_empty_query: bool,
    /// One JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// URLs to normalize.
    #[arg(required = true, value_name = "URL")]
    pub urls: Vec<String>,
}

/// Arguments of `adcp-sig base`.
#[derive(Debug, Args)]
pub struct BaseArgs {
    /// Request as JSON: `{"method","url","headers":{name: value | [values]},"body"}`,
    /// or a conformance vector file containing such a `request`.
    #[arg(long, value_name = "FILE")]
    pub request: PathBuf,
    /// Signature label to compute the base for.
    #[arg(long, default_value = "sig1")]
    pub label: String,
    /// Use this `@target-uri` instead of the AdCP canonical form of the URL.
    #[arg(long, value_name = "URI")]
    pub target_uri: Option<String>,
    /// Print `{"signature_base": …}` or `{"error": …}`.
    #[arg(long)]
    pub json: bool,
}

/// The profile a verification runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerifyProfileArg {
    /// Webhook v1 (`adcp/webhook-signing/v1`).
    Webhook,
    /// Request signing, AdCP 3.2 (RFC 8941 Base64, content-digest required).
    Request,
    /// An explicitly configured legacy 3.0/3.1 request endpoint (base64url).
    RequestLegacy,
}

/// `covers_content_digest` for `--profile request-legacy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CoverageArg {
    /// Body-bearing requests must cover `content-digest`.
    Required,
    /// Coverage optional.
    Either,
    /// Coverage rejected.
    Forbidden,
}

/// Arguments of `adcp-sig verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Profile (with `--vector`, defaults to the one the suite directory names).
    #[arg(long, value_enum)]
    pub profile: Option<VerifyProfileArg>,
    /// Legacy endpoint `covers_content_digest` policy.
    #[arg(long, value_enum, default_value = "either")]
    pub covers_content_digest: CoverageArg,
    /// Request as JSON (the vectors' `request` shape, or a vector file).
    #[arg(long, value_name = "FILE", conflicts_with = "vector", requires = "jwks")]
    pub request: Option<PathBuf>,
    /// JWKS (`{"keys": [...]}`) the signer's keys come from.
    #[arg(long, value_name = "FILE")]
    pub jwks: Option<PathBuf>,
    /// Run one conformance vector file (keys, clock and harness state from the suite).
    #[arg(long, value_name = "FILE")]
    pub vector: Option<PathBuf>,
    /// Verify as of this Unix time instead of now.
    #[arg(long, value_name = "UNIX")]
    pub now: Option<i64>,
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `adcp-sig conformance`.
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// The suite directory (default: `$ADCP_VECTORS_DIR`, the workplace copy, or `test-vectors/adcp`).
    #[arg(long, value_name = "DIR")]
    pub vectors: Option<PathBuf>,
    /// Print every outcome, not only failures.
    #[arg(long)]
    pub verbose: bool,
}

/// The algorithm of a generated key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KeyAlgArg {
    /// Ed25519 (JWK `alg` `EdDSA`, signature `alg` `ed25519`).
    Ed25519,
    /// ECDSA P-256 with SHA-256 (JWK `alg` `ES256`, signature `alg` `ecdsa-p256-sha256`).
    Es256,
}

/// The `adcp_use` a generated key is published with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KeyPurposeArg {
    /// `request-signing`: signs requests and webhooks (what AdCP 3.2 asks new signers to publish).
    RequestSigning,
    /// `webhook-signing`: deprecated, webhooks only; still accepted by every conformant webhook verifier.
    WebhookSigning,
}

/// Arguments of `adcp-sig keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Key algorithm.
    #[arg(long, value_enum)]
    pub alg: KeyAlgArg,
    /// The key's `adcp_use`. `webhook-signing` is deprecated (a note is
    /// printed on stderr) but still accepted by webhook verifiers.
    #[arg(long, value_enum, default_value = "request-signing")]
    pub purpose: KeyPurposeArg,
    /// Key ID (`kid`), the `keyid` of every signature made with the key.
    #[arg(long)]
    pub kid: String,
    /// Write the private JWK here (created, mode 0600; never overwritten).
    /// Without it the private JWK is printed on stdout.
    #[arg(long, value_name = "FILE")]
    pub out_private: Option<PathBuf>,
    /// Write the public JWKS (`{"keys":[…]}`) here (never overwritten).
    /// Without it the JWKS is printed on stdout (after the private JWK, if
    /// that is printed too: one JSON document per line).
    #[arg(long, value_name = "FILE")]
    pub out_jwks: Option<PathBuf>,
}

/// The profile a signature is made under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SignProfileArg {
    /// Webhook v1 (`adcp/webhook-signing/v1`; `Signature` in unpadded base64url).
    Webhook,
    /// Request signing, AdCP 3.2 (RFC 8941 Base64).
    Request,
    /// An explicitly configured legacy 3.0/3.1 request endpoint (unpadded base64url).
    RequestLegacy,
}

/// Arguments of `adcp-sig sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// Profile.
    #[arg(long, value_enum)]
    pub profile: SignProfileArg,
    /// The URL the request is sent to (it is canonicalized; the output's `url` is the canonical form).
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// The JSON body, verbatim (checked strictly; duplicate keys are refused).
    #[arg(long, value_name = "STRING", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Read the JSON body from FILE, verbatim.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// Largest body signed, in bytes: the limit of the receivers it is for
    /// (the gateway's `--max-body-bytes`). Default 1 MiB, the spec's
    /// recommended limit.
    #[arg(long, value_name = "N", default_value_t = adcp_strict_json::DEFAULT_MAX_LEN)]
    pub max_body_bytes: usize,
    /// Private JWK file (with `d`) of the signing key.
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// `Content-Type` of the body.
    #[arg(long, value_name = "T", default_value = "application/json")]
    pub content_type: String,
    /// Method (requests without a body: `--profile request` only).
    #[arg(long, default_value = "POST")]
    pub method: String,
    /// `created` (Unix seconds) instead of now.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub created: Option<i64>,
    /// `expires` (Unix seconds) instead of created + 300; at most created + 300.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub expires: Option<i64>,
    /// `nonce` (unpadded base64url, at least 16 bytes) instead of a fresh random one.
    #[arg(long, value_name = "S")]
    pub nonce: Option<String>,
    /// Sign the request N times, each with a fresh nonce, one JSON object
    /// per line: a JSONL file for `adcp-sig verify-batch --requests`.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "nonce")]
    pub count: u64,
    /// With `--profile request-legacy`: the endpoint's `covers_content_digest`
    /// (`forbidden` leaves content-digest out; the default covers it).
    #[arg(long, value_enum)]
    pub covers_content_digest: Option<CoverageArg>,
}

/// The delivery auth mode an activation challenge binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeliveryAuthArg {
    /// RFC 9421 webhook profile (no `authentication` block; the default).
    #[value(name = "rfc9421")]
    Rfc9421,
    /// Deprecated `Authorization: Bearer`.
    #[value(name = "Bearer")]
    Bearer,
    /// Deprecated HMAC-SHA256 over the body.
    #[value(name = "HMAC-SHA256")]
    HmacSha256,
}

/// The `--scope` of an activation challenge without an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChallengeScopeArg {
    /// Agent-level subscriber (`scope: "agent"`).
    Agent,
}

/// Arguments of `adcp-sig activate`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["account_id", "scope"])))]
pub struct ActivateArgs {
    /// The subscriber's webhook URL (`notification_configs[].url`).
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// Private JWK file (with `d`) of the seller's webhook signing key.
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// The seller agent URL the challenge names (`seller_agent_url`), exactly as the buyer configured it.
    #[arg(long, value_name = "URL")]
    pub seller_agent_url: String,
    /// The subscriber registration (`subscriber_id`).
    #[arg(long, value_name = "ID")]
    pub subscriber_id: String,
    /// Account-level challenge for this seller account (`account_id`).
    #[arg(long, value_name = "ID")]
    pub account_id: Option<String>,
    /// Agent-level challenge (`scope: "agent"`) instead of an account.
    #[arg(long, value_enum)]
    pub scope: Option<ChallengeScopeArg>,
    /// Comma-separated event types; sent as a sorted, deduplicated set.
    #[arg(long, value_name = "T1,T2", value_delimiter = ',', required = true)]
    pub event_types: Vec<String>,
    /// How later deliveries will authenticate (the challenge itself is always RFC 9421-signed).
    #[arg(long, value_enum, default_value = "rfc9421")]
    pub delivery_auth: DeliveryAuthArg,
    /// File holding the legacy credential (Bearer / HMAC-SHA256 only): its
    /// content minus one trailing newline. Only its SHA-256 fingerprint is sent.
    #[arg(long, value_name = "FILE")]
    pub credential_file: Option<PathBuf>,
    /// Development only: allow plain `http://` and loopback targets (every other SSRF rule stays).
    #[arg(long)]
    pub allow_http: bool,
    /// Seconds to wait for the answer (at most 60).
    #[arg(long, value_name = "S", default_value_t = 10)]
    pub timeout: u64,
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The `--transport` of `adcp-sig call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    /// MCP: JSON-RPC `tools/call`, `params.name` = operation, `params.arguments` = body.
    Mcp,
    /// A2A: JSON-RPC `SendMessage` with one DataPart `{"skill": operation, "input": body}`.
    A2a,
    /// `POST <URL>/<operation>` with the body as is.
    Raw,
}

/// Arguments of `adcp-sig call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The counterparty's agent URL (the MCP or A2A endpoint; the base URL for `--transport raw`).
    #[arg(value_name = "URL")]
    pub url: String,
    /// The AdCP operation (`create_media_buy`, `get_products`, ...).
    #[arg(long, value_name = "NAME")]
    pub operation: String,
    /// JSON file with the operation's arguments (strict JSON: duplicate keys refused).
    #[arg(long, value_name = "FILE")]
    pub body: PathBuf,
    /// Private JWK file (with `d`) of the buyer's request-signing key.
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// A `get_adcp_capabilities` response, or just its `request_signing` object, to use instead of
    /// priming the capability from URL.
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
    /// How the call is carried.
    #[arg(long, value_enum, default_value = "mcp")]
    pub transport: TransportArg,
    /// The counterparty runs AdCP 3.0/3.1: legacy unpadded base64url encodings (never guessed).
    #[arg(long)]
    pub legacy: bool,
    /// Development only: allow plain `http://` and loopback targets (every other SSRF rule stays).
    #[arg(long)]
    pub allow_http: bool,
    /// Seconds to wait for each answer (1..=120).
    #[arg(long, value_name = "S", default_value_t = 30)]
    pub timeout: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}
