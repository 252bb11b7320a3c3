//! The idempotency keys: their pattern, and whether they look predictable
//! (the heuristics of `sender::keys`).

use super::{case, skipped, Faults, Seen};
use crate::report::CaseResult;
use crate::sender::journal::shorten;
use crate::sender::keys;
use serde_json::Value;

/// The most distinct keys compared pairwise for sequences.
const MAX_KEYS_COMPARED: usize = 200;

pub(super) fn idempotency_key(seen: &[Seen<'_>]) -> CaseResult {
    let mut faults = Faults::default();
    let mut checked = 0;
    for s in seen.iter().filter(|s| s.d.bytes().is_some()) {
        checked += 1;
        match s.value.as_ref().map(|v| v.get("idempotency_key")) {
            None => faults.push(format!("#{}: the body is not strict JSON", s.d.seq)),
            Some(None) => faults.push(format!("#{}: no idempotency_key", s.d.seq)),
            Some(Some(Value::String(key))) if adcp_webhook::payload::is_valid_idempotency_key(key) => {}
            Some(Some(Value::String(key))) => faults.push(format!("#{}: {:?} does not match", s.d.seq, shorten(key))),
            Some(Some(_)) => faults.push(format!("#{}: idempotency_key is not a string", s.d.seq)),
        }
    }
    if checked == 0 {
        return skipped(case("sender/idempotency-key"), "no body was read (over the size limit)");
    }
    faults.grade(
        case("sender/idempotency-key"),
        format!("{checked} valid"),
        "invalid keys",
        "",
    )
}

/// The distinct valid keys, in first-seen order, with their first arrival.
fn distinct_keys<'a>(seen: &'a [Seen<'_>]) -> Vec<(&'a str, i64)> {
    let mut out: Vec<(&str, i64)> = Vec::new();
    for s in seen {
        if let Some(key) = s.d.key.as_deref() {
            if adcp_webhook::payload::is_valid_idempotency_key(key) && !out.iter().any(|(k, _)| *k == key) {
                out.push((key, s.d.unix));
            }
        }
    }
    out
}

pub(super) fn unpredictable(seen: &[Seen<'_>]) -> CaseResult {
    let keys = distinct_keys(seen);
    let case = case("sender/unpredictable-key");
    if keys.is_empty() {
        return skipped(case, "no valid idempotency_key arrived");
    }
    let mut faults = Faults::default();
    for (key, at) in &keys {
        if let Some(why) = keys::time_derived(key, *at) {
            faults.push(format!("{} {why}", shorten(key)));
        }
    }
    let compared = &keys[..keys.len().min(MAX_KEYS_COMPARED)];
    for (i, (a, _)) in compared.iter().enumerate() {
        for (b, _) in &compared[i + 1..] {
            if let Some(step) = keys::sequential(a, b) {
                faults.push(format!(
                    "{} and {} differ by {step} in one counter",
                    shorten(a),
                    shorten(b)
                ));
            }
        }
    }
    let note = if keys.len() < 2 {
        "one key: its time was checked, sequences need two events"
    } else {
        ""
    };
    faults.grade(
        case,
        format!("{} keys, none predictable", keys.len()),
        "predictable keys",
        note,
    )
}
