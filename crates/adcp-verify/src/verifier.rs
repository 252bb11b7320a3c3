//! The checklist: one implementation, the profile as data.

use crate::admission::AdmissionMonitor;
use crate::batcher::SignatureBatcher;
use crate::clock::Clock;
use crate::error::{CodePrefix, ErrorCode, Step, VerifyError};
use crate::keys::{KeyCandidates, KeyResolver, ResolveError, ResolvedKey, RevocationStatus, MAX_KEY_CANDIDATES};
use crate::profile::{DigestCoverage, Profile};
use crate::replay::{CapKey, Durability, InsertOutcome, ReplayKey, ReplayStore};
use adcp_canon::CanonicalUrl;
use adcp_sigbase::crypto::{Algorithm, VerifyingKey};
use adcp_sigbase::digest::{ContentDigest, DigestErrorKind, DigestPolicy};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::SignatureBase;
use adcp_sigbase::{signature_base, BaseOptions, ComponentId, Message, SignatureInput, SignatureParams, Signatures};

/// Clock skew tolerated on `created` / `expires` (seconds).
pub const CLOCK_SKEW: i64 = 60;
/// Longest signature validity accepted (`expires - created`, seconds).
pub const MAX_VALIDITY: i64 = 300;
/// Shortest nonce accepted, in decoded bytes.
pub const MIN_NONCE_BYTES: usize = 16;
/// The label AdCP verifiers process; other labels are ignored.
pub const LABEL: &str = "sig1";

/// What a successful verification established, for dedup and audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedSigner {
    /// The signature's `keyid`.
    pub keyid: String,
    /// Sender identity: the `agents[]` entry URL the key resolved to. Dedup
    /// on this, not on `keyid`, so key rotation keeps one keyspace.
    pub agent_url: String,
    /// The verified algorithm.
    pub algorithm: Algorithm,
    /// `created`.
    pub created: i64,
    /// `expires`.
    pub expires: i64,
    /// The decoded nonce.
    pub nonce: Vec<u8>,
    /// The covered component identifiers, in signed order (`Display`
    /// serializes one).
    pub components: Vec<ComponentId>,
    /// The canonical `@target-uri` that was verified.
    pub target_uri: String,
}

/// The AdCP verifier for one endpoint profile.
///
/// Runs the checklist in order, short-circuiting on the first failure:
/// header pair and parse, parameters, tag, algorithm, window, components,
/// key resolution, key purpose, revocation, per-keyid cap, canonical target
/// and authority, signature, content digest, replay check, replay insert,
/// body well-formedness.
#[derive(Debug)]
pub struct Verifier<K, S, C> {
    profile: Profile,
    keys: K,
    replay: S,
    clock: C,
    scope_replay_by_target: bool,
    admission: Option<AdmissionMonitor>,
    max_body_bytes: usize,
    batcher: Option<SignatureBatcher>,
}

impl<K: KeyResolver, S: ReplayStore, C: Clock> Verifier<K, S, C> {
    /// A verifier for `profile` with its key source, replay store and clock.
    pub fn new(profile: Profile, keys: K, replay: S, clock: C) -> Self {
        Self {
            profile,
            keys,
            replay,
            clock,
            scope_replay_by_target: false,
            admission: None,
            max_body_bytes: adcp_strict_json::DEFAULT_MAX_LEN,
            batcher: None,
        }
    }

    /// The largest body accepted, in bytes (default 1 MiB, the spec's
    /// recommended limit). One limit governs everything: a longer body is
    /// refused with `*_body_malformed` before any header is parsed, any key
    /// is resolved or any nonce is burned, and step 14's strict JSON check
    /// accepts bodies up to exactly this length. Receivers answer `413` on
    /// the same limit before calling the verifier.
    #[must_use]
    pub fn with_max_body_bytes(mut self, max_body_bytes: usize) -> Self {
        self.max_body_bytes = max_body_bytes;
        self
    }

    /// The body limit ([`Self::with_max_body_bytes`]).
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// Tracks new-keyid admission pressure on every replay-cache admission
    /// (spec "Webhook replay dedup sizing"); alarms go to `tracing` and are
    /// available from the monitor. Required on webhook receivers.
    pub fn with_admission_monitor(mut self, monitor: AdmissionMonitor) -> Self {
        self.admission = Some(monitor);
        self
    }

    /// Checks the Ed25519 signatures of [`Self::verify`] and
    /// [`Self::verify_early`] on `batcher`'s threads, together with those
    /// of concurrent calls (opt-in, for servers under load; see
    /// [`SignatureBatcher`] for how its answers relate to single
    /// verification). A request whose `keyid` denotes several keys, and
    /// other algorithms, are checked as without it.
    #[must_use]
    pub fn with_signature_batcher(mut self, batcher: SignatureBatcher) -> Self {
        self.batcher = Some(batcher);
        self
    }

    /// The admission monitor, if configured.
    pub fn admission_monitor(&self) -> Option<&AdmissionMonitor> {
        self.admission.as_ref()
    }

    /// Scope replay keys by the canonical destination URL (spec option 2)
    /// for deployments whose endpoints cannot share one replay cache.
    pub fn with_replay_scoped_by_target(mut self, scoped: bool) -> Self {
        self.scope_replay_by_target = scoped;
        self
    }

    /// The profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The key source.
    pub fn keys(&self) -> &K {
        &self.keys
    }

    /// The replay store.
    pub fn replay_store(&self) -> &S {
        &self.replay
    }

    fn fail(&self, code: ErrorCode, step: Step, detail: impl Into<String>) -> VerifyError {
        VerifyError::new(code, self.profile.prefix(), step, detail)
    }

    /// Verifies a received request. `msg` carries the method, the absolute
    /// target URI as received (scheme from the listener, authority and
    /// request target from the request line / `Host`), every header line
    /// (including `Host` and, for HTTP/2, `:authority`) and the raw body.
    pub async fn verify(&self, msg: &Message<'_>) -> Result<VerifiedSigner, VerifyError> {
        let (signer, durability) = self.verify_early(msg).await?;
        self.durable(durability).await?;
        Ok(signer)
    }

    /// [`Self::verify`], answered before the replay entry it inserted
    /// (step 13) is durable when the store answers early
    /// ([`ReplayStore::insert_early`]): the caller runs its own next store
    /// operation meanwhile (a claim on the same group-committing store then
    /// shares the entry's commit instead of waiting for one more), and
    /// must [`Durability::wait`] before it accepts the request. A failed
    /// wait means the entry was lost: answer as for `*_store_unavailable`
    /// (retryable).
    ///
    /// # Errors
    ///
    /// As [`Self::verify`], except a lost entry, which only the wait reports.
    pub async fn verify_early(&self, msg: &Message<'_>) -> Result<(VerifiedSigner, Durability), VerifyError> {
        let now = self.clock.now();
        let mut prepared = self.prepare(msg, now).await?;
        self.check_signature_batched(&mut prepared).await?;
        self.complete(msg, prepared, now).await
    }

    /// Step 10 through the batcher when there is one and the request has
    /// a single Ed25519 candidate key; [`Self::check_signature`] otherwise.
    async fn check_signature_batched(&self, p: &mut Prepared) -> Result<(), VerifyError> {
        let batcher = self.batcher.as_ref().filter(|_| p.algorithm == Algorithm::Ed25519);
        if let (Some(batcher), Some(key)) = (batcher, p.verifying_key()) {
            if let Some(verified) = batcher.verify(key, p.base.as_bytes(), p.signature.clone()).await {
                return if verified { Ok(()) } else { Err(self.unverified(p)) };
            }
        }
        self.check_signature(p)
    }

    /// Waits for an early replay entry; a lost one is step 13's store error.
    async fn durable(&self, durability: Durability) -> Result<(), VerifyError> {
        durability
            .wait()
            .await
            .map_err(|e| self.fail(ErrorCode::StoreUnavailable, Step::new(13), e.to_string()))
    }

    /// Verifies many requests, checking their Ed25519 signatures together
    /// (one random linear combination of their equations, see
    /// `adcp_sigbase::crypto::verify_ed25519_batch`) — opt-in, for queue consumers
    /// and gateways under load. Results are in input order.
    ///
    /// Each request goes through the same checklist as [`Self::verify`],
    /// in three passes: every check before the signature (steps 1–10 up
    /// to the base) per request, then the signatures — Ed25519 ones as one
    /// batch, others one by one, and when a batch fails, each of its
    /// signatures alone so the failure is attributed to the right request
    /// — then the checks after the signature (steps 11–14) in input order,
    /// so a nonce repeated within the batch is accepted once and reported
    /// as a replay after that, as sequential calls would. One clock reading
    /// serves the whole batch. Outcomes and error codes equal those of
    /// sequential [`Self::verify`] calls, with two documented exceptions:
    /// a per-keyid cap filled by earlier requests of the same batch is
    /// reported by the replay insert (step 13) instead of step 9a, with the
    /// same code; and a signature deliberately crafted by its own key
    /// holder with small-order components may be judged differently by the
    /// batch equation (see `adcp_sigbase::crypto::verify_ed25519_batch`).
    pub async fn verify_batch(&self, msgs: &[Message<'_>]) -> Vec<Result<VerifiedSigner, VerifyError>> {
        use adcp_sigbase::crypto::{verify_ed25519_batch, Ed25519BatchItem};
        let now = self.clock.now();
        let mut prepared = Vec::with_capacity(msgs.len());
        for msg in msgs {
            prepared.push(self.prepare(msg, now).await);
        }
        // Signatures: Ed25519 together, the rest (and a failed batch) alone.
        let batchable: Vec<usize> = prepared
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p, Ok(p) if p.algorithm == Algorithm::Ed25519 && p.keys.len() == 1))
            .map(|(i, _)| i)
            .collect();
        let items: Vec<Ed25519BatchItem<'_>> = batchable
            .iter()
            .filter_map(|&i| {
                let p = prepared[i].as_ref().ok()?;
                Some(Ed25519BatchItem {
                    key: p.verifying_key()?,
                    message: p.base.as_bytes(),
                    signature: &p.signature,
                })
            })
            .collect();
        let batch_ok = items.len() == batchable.len() && items.len() > 1 && verify_ed25519_batch(&items).is_ok();
        drop(items);
        let mut signed: Vec<Result<Prepared, VerifyError>> = Vec::with_capacity(msgs.len());
        for (i, p) in prepared.into_iter().enumerate() {
            signed.push(p.and_then(|mut p| {
                if batch_ok && batchable.binary_search(&i).is_ok() {
                    Ok(p)
                } else {
                    self.check_signature(&mut p).map(|()| p)
                }
            }));
        }
        let mut out = Vec::with_capacity(msgs.len());
        for (msg, p) in msgs.iter().zip(signed) {
            out.push(match p {
                Ok(p) => match self.complete(msg, p, now).await {
                    Ok((signer, durability)) => self.durable(durability).await.map(|()| signer),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            });
        }
        out
    }

    /// Steps 1–10 up to the signature base: everything before the
    /// cryptography.
    async fn prepare(&self, msg: &Message<'_>, now: i64) -> Result<Prepared, VerifyError> {
        use ErrorCode as E;
        // Before the checklist: a body over the limit costs no parsing, no
        // key lookup, no cryptography and no replay-cache entry.
        let body_len = msg.body().map_or(0, <[u8]>::len);
        if body_len > self.max_body_bytes {
            return Err(self.fail(
                E::BodyMalformed,
                Step::new(0),
                format!("{body_len} body bytes exceed the limit of {}", self.max_body_bytes),
            ));
        }
        let step1 = Step::new(1);
        // Step 1: the header pair, parsed strictly under the profile.
        let input =
            SignatureInput::from_message(msg).map_err(|e| self.fail(E::HeaderMalformed, step1, e.to_string()))?;
        let sigs = Signatures::from_message(msg).map_err(|e| self.fail(E::HeaderMalformed, step1, e.to_string()))?;
        let (input, sigs) = match (input, sigs) {
            (Some(i), Some(s)) => (i, s),
            (None, None) => return Err(self.fail(E::HeaderMalformed, step1, "request is not signed")),
            _ => {
                return Err(self.fail(
                    E::HeaderMalformed,
                    step1,
                    "Signature and Signature-Input must come together",
                ))
            }
        };
        let owned_params = input
            .into_signature(LABEL)
            .ok_or_else(|| self.fail(E::HeaderMalformed, step1, "no `sig1` in Signature-Input"))?;
        let params = &owned_params;
        let signature = sigs
            .decode(LABEL, self.profile.signature_encoding())
            .map_err(|e| self.fail(E::HeaderMalformed, step1, e.to_string()))?;
        msg.single_field("content-type")
            .map_err(|e| self.fail(E::HeaderMalformed, step1, e.to_string()))?;
        let digest = match msg
            .combined_field("content-digest")
            .map_err(|e| self.fail(E::HeaderMalformed, step1, e.to_string()))?
        {
            Some(value) => Some(
                ContentDigest::parse(&*value, self.profile.digest_decoding())
                    .map_err(|e| self.fail(E::HeaderMalformed, step1, e.to_string()))?,
            ),
            None => None,
        };

        // Step 2: required parameters.
        let required = Required::from(params).ok_or_else(|| {
            self.fail(
                E::ParamsIncomplete,
                Step::new(2),
                "created, expires, nonce, keyid, alg and tag are all required",
            )
        })?;
        // Unpadded base64url, lenient only about the last symbol's unused
        // bits, as both official SDKs are: the nonce string is covered by
        // the signature, so this opens no replay. The replay key is the
        // decoded bytes, so two spellings of the same bytes are one nonce
        // (the second is a replay), the conservative reading.
        let nonce = BinaryEncoding::Base64UrlUnpadded
            .decode_ignoring_trailing_bits(required.nonce)
            .ok()
            .filter(|n| n.len() >= MIN_NONCE_BYTES)
            .ok_or_else(|| {
                self.fail(
                    E::HeaderMalformed,
                    step1,
                    "nonce must be unpadded base64url of at least 16 bytes",
                )
            })?;

        // Step 3: tag, byte for byte.
        if required.tag != self.profile.tag() {
            return Err(self.fail(E::TagInvalid, Step::new(3), format!("tag {:?}", required.tag)));
        }

        // Step 4: our allowlist, not the library's.
        let algorithm = required
            .alg
            .parse::<Algorithm>()
            .ok()
            .filter(|a| self.profile.algorithms().contains(a))
            .ok_or_else(|| self.fail(E::AlgNotAllowed, Step::new(4), format!("alg {:?}", required.alg)))?;

        // Step 5: window.
        let (created, expires) = (required.created, required.expires);
        if expires <= created
            || created > now.saturating_add(CLOCK_SKEW)
            || expires < now.saturating_sub(CLOCK_SKEW)
            || expires.saturating_sub(created) > MAX_VALIDITY
        {
            return Err(self.fail(
                E::WindowInvalid,
                Step::new(5),
                format!("created {created}, expires {expires}, now {now}"),
            ));
        }

        // Step 6: covered components.
        self.check_components(params, msg)?;

        // Steps 7–9: the key(s) the keyid denotes, of the right purpose and
        // not revoked. One in the common case; several only when sellers
        // served by this verifier share a kid (the signature decides).
        let (keys, dropped) = self.candidate_keys(required.keyid, algorithm, now).await?;

        // Step 9a: per-keyid cap, before any cryptography. The cap is the
        // signer's: counted per (agent, keyid), so a seller sharing a kid
        // cannot exhaust another's. With several candidates, refuse only
        // when every candidate seller is at its cap (the insert at step 13
        // enforces the verifying seller's cap atomically anyway).
        let mut capped = 0;
        for key in &keys {
            let cap = CapKey {
                agent: Some(key.agent_url()),
                keyid: required.keyid,
            };
            let reached = match self.replay.keyid_cap_reached_now(cap, now) {
                Some(answer) => answer,
                None => self.replay.keyid_cap_reached(cap, now).await,
            };
            match reached {
                Ok(false) => {}
                Ok(true) => capped += 1,
                Err(e) => return Err(self.fail(E::StoreUnavailable, Step::sub(9, 'a'), e.to_string())),
            }
        }
        if capped == keys.len() {
            return Err(self.fail(E::RateAbuse, Step::sub(9, 'a'), "per-keyid replay cap reached"));
        }

        // Step 10: canonical target and authority, then the signature.
        let step10 = Step::new(10);
        let target = adcp_canon::canonicalize_received(msg.target_uri())
            .map_err(|e| self.fail(E::TargetUriMalformed, step10, e.to_string()))?;
        let h2_authority = first_line(msg, ":authority");
        let host = first_line(msg, "host");
        if msg.field_lines(":authority").nth(1).is_some() || msg.field_lines("host").nth(1).is_some() {
            return Err(self.fail(E::TargetUriMalformed, step10, "repeated Host or :authority"));
        }
        let authority = match (h2_authority, host) {
            // No authority header at all (an embedding caller that built the
            // target URI itself): the URL is the only source.
            (None, None) => target.authority(),
            (a, h) => adcp_canon::derive_authority(&target, a, h)
                .map_err(|e| self.fail(E::TargetUriMalformed, step10, e.to_string()))?,
        };
        let opts = BaseOptions {
            target_uri: Some(target.as_str()),
            authority: Some(authority),
            ..BaseOptions::default()
        };
        let base =
            signature_base(msg, params, &opts).map_err(|e| self.fail(E::SignatureInvalid, step10, e.to_string()))?;
        Ok(Prepared {
            params: owned_params,
            signature,
            digest,
            nonce,
            keys,
            dropped,
            algorithm,
            created,
            expires,
            target,
            base,
        })
    }

    /// Step 10, the cryptography: the signature over the base, under the
    /// one candidate key, or under each of several (sellers sharing a
    /// kid): exactly one must verify, and it becomes the signer's key.
    fn check_signature(&self, p: &mut Prepared) -> Result<(), VerifyError> {
        let step10 = Step::new(10);
        let verifies = |key: &ResolvedKey| {
            key.key()
                .is_ok_and(|(key, _)| key.verify(p.algorithm, p.base.as_bytes(), &p.signature).is_ok())
        };
        let mut verified = p
            .keys
            .iter()
            .enumerate()
            .filter(|(_, key)| verifies(key))
            .map(|(i, _)| i);
        match (verified.next(), verified.next()) {
            (Some(i), None) => {
                if p.keys.len() > 1 {
                    p.keys.swap(0, i);
                    p.keys.truncate(1);
                }
                Ok(())
            }
            (None, _) => Err(self.unverified(p)),
            // Two sellers publish one public key under one kid: attribution
            // is impossible, so nobody is the signer. Terminal, like any
            // untrustworthy key publication.
            (Some(_), Some(_)) => Err(self.fail(
                ErrorCode::JwksUntrusted,
                step10,
                format!(
                    "signature verifies under the keys of several sellers ({} candidates): ambiguous signer",
                    p.keys.len()
                ),
            )),
        }
    }

    /// Step 10's refusal when no candidate key verifies. A refused
    /// candidate (wrong purpose, revoked) may have been the signer's: its
    /// refusal explains the failure better.
    fn unverified(&self, p: &mut Prepared) -> VerifyError {
        p.dropped
            .take()
            .unwrap_or_else(|| self.fail(ErrorCode::SignatureInvalid, Step::new(10), "signature does not verify"))
    }

    /// Steps 7–9 for every key `keyid` may denote: resolution, purpose,
    /// revocation. A candidate refused at step 8 or 9 is dropped (its
    /// error kept for the report if no other verifies); with one
    /// candidate, as with none left, the refusal is the answer at once.
    /// Key-source failures are never skipped: the verifier fails closed.
    async fn candidate_keys(
        &self,
        keyid: &str,
        algorithm: Algorithm,
        now: i64,
    ) -> Result<(KeyCandidates, Option<VerifyError>), VerifyError> {
        let resolved = match self.keys.resolve_candidates_cached(keyid) {
            Some(answer) => answer,
            None => self.keys.resolve_candidates(keyid).await,
        };
        let mut candidates = match resolved {
            Ok(found) if found.is_empty() => {
                return Err(self.fail(ErrorCode::KeyUnknown, Step::new(7), format!("keyid {keyid:?}")))
            }
            Ok(found) => found,
            Err(e) => return Err(self.resolve_failure(e, Step::new(7))),
        };
        candidates.truncate(MAX_KEY_CANDIDATES);
        if candidates.len() == 1 {
            let key = &candidates[0];
            self.check_purpose(key, algorithm)?;
            self.check_revocation(key, now).await?;
            return Ok((candidates, None));
        }
        let mut kept = KeyCandidates::new();
        let mut dropped = None;
        for key in candidates {
            let checked = match self.check_purpose(&key, algorithm) {
                Ok(_) => self.check_revocation(&key, now).await,
                Err(e) => Err(e),
            };
            match checked {
                Ok(()) => kept.push(key),
                Err(e) if e.is_retryable() => return Err(e),
                Err(e) => {
                    dropped.get_or_insert(e);
                }
            }
        }
        match dropped {
            Some(e) if kept.is_empty() => Err(e),
            dropped => Ok((kept, dropped)),
        }
    }

    /// Step 9: the key's revocation status.
    async fn check_revocation(&self, key: &ResolvedKey, now: i64) -> Result<(), VerifyError> {
        use ErrorCode as E;
        let status = match self.keys.revocation_status_cached(key, now) {
            Some(answer) => answer,
            None => self.keys.revocation_status(key, now).await,
        };
        match status {
            Ok(RevocationStatus::Current) => Ok(()),
            Ok(RevocationStatus::Revoked) => Err(self.fail(E::KeyRevoked, Step::new(9), "keyid is revoked")),
            Ok(RevocationStatus::Stale) => Err(self.fail(
                E::RevocationStale,
                Step::new(9),
                "revocation list not refreshed within grace",
            )),
            Err(e) => Err(self.resolve_failure(e, Step::new(9))),
        }
    }

    /// Steps 11–14, after the signature verified.
    async fn complete(
        &self,
        msg: &Message<'_>,
        p: Prepared,
        now: i64,
    ) -> Result<(VerifiedSigner, Durability), VerifyError> {
        use ErrorCode as E;
        let Prepared {
            params,
            digest,
            nonce,
            keys,
            algorithm,
            created,
            expires,
            target,
            ..
        } = p;
        let owned_params = params;
        let params = &owned_params;
        let keyid = params.keyid().unwrap_or_default();
        // Step 11: content digest over the raw body bytes.
        if params.covers("content-digest") {
            let step11 = Step::new(11);
            let digest =
                digest.ok_or_else(|| self.fail(E::DigestMismatch, step11, "Content-Digest is covered but absent"))?;
            digest
                .verify(msg.body().unwrap_or_default(), &DigestPolicy::default())
                .map_err(|e| {
                    let code = match e.kind() {
                        DigestErrorKind::Malformed => E::HeaderMalformed,
                        _ => E::DigestMismatch,
                    };
                    self.fail(code, step11, e.to_string())
                })?;
        }

        // Steps 12-13: the replay check and the insert are one atomic store
        // operation, so two concurrent deliveries of one nonce cannot both
        // pass step 12 (and it costs one store round trip, not two).
        // Uniqueness is (keyid, nonce) whoever the seller; the agent only
        // partitions the cap.
        let agent_url = keys.first().map(|key| key.agent_url()).unwrap_or_default();
        let replay_key = ReplayKey {
            agent: Some(agent_url),
            keyid,
            nonce: &nonce,
            scope: self.scope_replay_by_target.then_some(target.as_str()),
        };
        let expires_at = expires.saturating_add(CLOCK_SKEW);
        let inserted = match self.replay.insert_now(replay_key, expires_at, now) {
            Some(answer) => answer.map(|outcome| (outcome, Durability::durable())),
            None => self.replay.insert_early(replay_key, expires_at, now).await,
        };
        let durability = match inserted {
            Ok((InsertOutcome::Inserted, durability)) => {
                if let Some(monitor) = &self.admission {
                    // Events are logged by the monitor itself.
                    let _ = monitor.record_admission(keyid, now);
                }
                durability
            }
            Ok((InsertOutcome::Replayed, _)) => {
                return Err(self.fail(E::Replayed, Step::new(12), "nonce already seen"))
            }
            Ok((InsertOutcome::KeyidCapReached | InsertOutcome::AggregateCapReached, _)) => {
                return Err(self.fail(E::RateAbuse, Step::new(13), "replay cache cap reached"))
            }
            Err(e) => return Err(self.fail(E::StoreUnavailable, Step::new(13), e.to_string())),
        };

        // Step 14: body well-formedness, after the nonce is burned.
        self.check_body(msg, keyid, params.nonce().unwrap_or_default())?;

        let keyid = keyid.to_owned();
        let signer = VerifiedSigner {
            keyid,
            agent_url: agent_url.to_owned(),
            algorithm,
            created,
            expires,
            nonce,
            components: owned_params.into_components(),
            target_uri: target.into_string(),
        };
        Ok((signer, durability))
    }

    fn resolve_failure(&self, e: ResolveError, step: Step) -> VerifyError {
        match e {
            ResolveError::Unavailable(d) => self.fail(ErrorCode::JwksUnavailable, step, d),
            ResolveError::Untrusted(d) => self.fail(ErrorCode::JwksUntrusted, step, d),
            // A resolver handing over a non-discovery code keeps its retry
            // class, never its meaning.
            ResolveError::Discovery { code, detail } => {
                let code = match code {
                    c if c.is_key_discovery() => c,
                    c if c.is_retryable() => ErrorCode::JwksUnavailable,
                    _ => ErrorCode::JwksUntrusted,
                };
                self.fail(code, step, detail)
            }
        }
    }

    fn check_components(&self, params: &SignatureParams, msg: &Message<'_>) -> Result<(), VerifyError> {
        let step = Step::new(6);
        let has_body = msg.body().is_some_and(|b| !b.is_empty());
        let webhook = self.profile.is_webhook();
        for required in ["@method", "@target-uri", "@authority"] {
            if !params.covers(required) {
                return Err(self.fail(ErrorCode::ComponentsIncomplete, step, format!("{required} not covered")));
            }
        }
        if (webhook || has_body) && !params.covers("content-type") {
            return Err(self.fail(ErrorCode::ComponentsIncomplete, step, "content-type not covered"));
        }
        let digest_covered = params.covers("content-digest");
        match self.profile.digest_coverage() {
            DigestCoverage::Required if (webhook || has_body) && !digest_covered => {
                Err(self.fail(ErrorCode::ComponentsIncomplete, step, "content-digest not covered"))
            }
            DigestCoverage::Forbidden if digest_covered => Err(self.fail(
                ErrorCode::ComponentsUnexpected,
                step,
                "content-digest covered on a `forbidden` endpoint",
            )),
            _ => Ok(()),
        }
    }

    fn check_purpose<'k>(
        &self,
        key: &'k crate::keys::ResolvedKey,
        algorithm: Algorithm,
    ) -> Result<&'k adcp_sigbase::crypto::VerifyingKey, VerifyError> {
        let step = Step::new(8);
        let bad = |detail: String| self.fail(ErrorCode::KeyPurposeInvalid, step, detail);
        // The spec names no code for a kid several JWKS entries share ("MUST
        // NOT collide ... regardless of adcp_use"): it is a key-publication
        // defect of the same family as a wrong purpose, so the same code.
        if key.kid_collides() {
            return Err(bad("JWK kid is shared by several JWKS entries (kid collision)".into()));
        }
        if key.use_() != Some("sig") {
            return Err(bad(format!("JWK use {:?}", key.use_())));
        }
        if !key.key_ops().is_some_and(|ops| ops.iter().any(|op| op == "verify")) {
            return Err(bad("JWK key_ops lacks \"verify\"".into()));
        }
        if !key.adcp_use().is_some_and(|u| self.profile.key_purposes().contains(&u)) {
            return Err(bad(format!("JWK adcp_use {:?}", key.adcp_use())));
        }
        // `alg` is a MUST of key publication; its consistency with kty/crv
        // was checked when the JWK was parsed (`key()` is Err otherwise).
        if key.alg().is_none() {
            return Err(bad("JWK declares no alg".into()));
        }
        let (verifying_key, key_alg) = key.key().map_err(|e| bad(format!("JWK unusable: {e}")))?;
        if key_alg != algorithm {
            return Err(bad(format!("JWK is a {key_alg} key, signature says {algorithm}")));
        }
        Ok(verifying_key)
    }

    /// Step 14. The rejection names what 14b says to log — keyid, nonce,
    /// byte length and the sanitized duplicate key names — and never the
    /// body. (keyid and nonce passed steps 1–13: an RFC 8941 String that
    /// named a published key, and unpadded base64url.)
    fn check_body(&self, msg: &Message<'_>, keyid: &str, nonce: &str) -> Result<(), VerifyError> {
        let step = Step::new(14);
        let body = msg.body().unwrap_or_default();
        if body.is_empty() {
            if self.profile.is_webhook() {
                return Err(self.fail(ErrorCode::BodyMalformed, step, "webhook body is empty"));
            }
            return Ok(());
        }
        let limits = adcp_strict_json::Limits::new(self.max_body_bytes);
        adcp_strict_json::check(body, &limits).map_err(|e| {
            self.fail(
                ErrorCode::BodyMalformed,
                step,
                format!("{e} (keyid {keyid:?}, nonce {nonce:?}, {} body bytes)", body.len()),
            )
        })
    }
}

/// A request that passed every check before the cryptography.
struct Prepared {
    /// The `sig1` parameters.
    params: SignatureParams,
    /// The decoded signature.
    signature: Vec<u8>,
    /// The parsed `Content-Digest`, if present.
    digest: Option<ContentDigest>,
    /// The decoded nonce.
    nonce: Vec<u8>,
    /// The candidate keys (purpose, algorithm and revocation checked);
    /// after the signature check, exactly the one that verified.
    keys: KeyCandidates,
    /// Why a candidate was refused at step 8 or 9, if one was.
    dropped: Option<VerifyError>,
    algorithm: Algorithm,
    created: i64,
    expires: i64,
    /// The canonical `@target-uri`.
    target: CanonicalUrl,
    /// The signature base.
    base: SignatureBase,
}

impl Prepared {
    /// The key of a single-candidate request (the batchable case).
    fn verifying_key(&self) -> Option<&VerifyingKey> {
        match self.keys.as_slice() {
            [key] => key.key().ok().map(|(key, _)| key),
            _ => None,
        }
    }
}

/// The six parameters step 2 requires, borrowed.
struct Required<'p> {
    created: i64,
    expires: i64,
    nonce: &'p str,
    keyid: &'p str,
    alg: &'p str,
    tag: &'p str,
}

impl<'p> Required<'p> {
    fn from(p: &'p SignatureParams) -> Option<Self> {
        Some(Self {
            created: p.created()?,
            expires: p.expires()?,
            nonce: p.nonce()?,
            keyid: p.keyid()?,
            alg: p.alg()?,
            tag: p.tag()?,
        })
    }
}

fn first_line<'m>(msg: &'m Message<'_>, name: &'m str) -> Option<&'m [u8]> {
    msg.field_lines(name).next()
}

impl CodePrefix {
    /// The prefix's name (`webhook` / `request`).
    pub fn name(self) -> &'static str {
        match self {
            CodePrefix::Webhook => "webhook",
            CodePrefix::Request => "request",
        }
    }
}
