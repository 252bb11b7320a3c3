//! The retries: after a `503` within 90 s, under the same key, with the
//! same body and a fresh nonce, and none after a `2xx`.

use super::{case, secs, skipped, Faults, Seen, RETRY_WITHIN};
use crate::report::CaseResult;
use crate::sender::journal::shorten;
use adcp_strict_json::jcs;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

/// The deliveries of each key, in arrival order, keys in first-seen order.
fn by_key<'s, 'a>(seen: &'s [Seen<'a>]) -> Vec<(&'s str, Vec<&'s Seen<'a>>)> {
    let mut out: Vec<(&str, Vec<&Seen<'_>>)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for s in seen {
        let Some(key) = s.d.key.as_deref() else { continue };
        match index.get(key) {
            Some(&i) => out[i].1.push(s),
            None => {
                index.insert(key, out.len());
                out.push((key, vec![s]));
            }
        }
    }
    out
}

/// `elapsed`: how long the listener listened.
pub(super) fn retry_after_503(seen: &[Seen<'_>], elapsed: Duration) -> CaseResult {
    let case = case("sender/retry-after-503");
    let groups = by_key(seen);
    let mut faults = Faults::default();
    let mut retried = 0;
    let mut longest = Duration::ZERO;
    let mut total = 0;
    for (_, group) in &groups {
        let Some(first) = group.first().filter(|s| s.d.status == 503) else {
            continue;
        };
        total += 1;
        match group.get(1) {
            Some(retry) => {
                let gap = retry.d.offset.saturating_sub(first.d.offset);
                longest = longest.max(gap);
                if gap <= RETRY_WITHIN {
                    retried += 1;
                } else {
                    faults.push(format!("{}: retried after {}", first.d.label(), secs(gap)));
                }
            }
            None => {
                let left = elapsed.saturating_sub(first.d.offset);
                let window = if left < RETRY_WITHIN {
                    format!(
                        " (the window ended {} after the 503, before 90 s: use a longer --window for a final verdict)",
                        secs(left)
                    )
                } else {
                    format!(" ({} observed after the 503)", secs(left))
                };
                faults.push(format!("{}: no retry{window}", first.d.label()));
            }
        }
    }
    if total == 0 {
        return skipped(
            case,
            "no event was answered 503 (no delivery carried an idempotency_key)",
        );
    }
    faults.grade(
        case,
        format!("{retried} of {total} retried (longest gap {})", secs(longest)),
        format!("{retried} of {total} retried within 90 s"),
        "",
    )
}

pub(super) fn retry_same_key(seen: &[Seen<'_>]) -> CaseResult {
    let case = case("sender/retry-same-key");
    let groups = by_key(seen);
    let retries: usize = groups.iter().map(|(_, g)| g.len().saturating_sub(1)).sum();
    // Each event's first payload, key aside, canonical: computed once.
    let payloads: Vec<Option<[u8; 32]>> = groups
        .iter()
        .map(|(_, g)| g.first().and_then(|s| s.payload_sans_key()))
        .collect();
    let mut faults = Faults::default();
    // A new key whose payload (key aside) repeats an earlier event's that
    // was never acknowledged before it: the sender re-sent the event under
    // a fresh key instead of retrying it.
    for (j, (_, group)) in groups.iter().enumerate() {
        let (Some(later), Some(payload)) = (group.first(), payloads[j]) else {
            continue;
        };
        for (i, (_, earlier)) in groups[..j].iter().enumerate() {
            let acknowledged = earlier
                .iter()
                .any(|s| (200..300).contains(&s.d.status) && s.d.seq < later.d.seq);
            if !acknowledged && payloads[i] == Some(payload) {
                let first = earlier.first().map(|s| s.d.label()).unwrap_or_default();
                faults.push(format!(
                    "{} re-sends the payload of {first} under a new key",
                    later.d.label()
                ));
                break;
            }
        }
    }
    if retries == 0 && faults.is_empty() {
        return skipped(case, "no retry arrived (nothing to compare)");
    }
    faults.grade(case, format!("{retries} retries kept their key"), "key rotated", "")
}

pub(super) fn retry_same_body(seen: &[Seen<'_>]) -> CaseResult {
    let case = case("sender/retry-same-body");
    let mut faults = Faults::default();
    let mut retries = 0;
    let mut byte_identical = 0;
    for (_, group) in by_key(seen) {
        let Some((first, rest)) = group.split_first() else {
            continue;
        };
        let canonical = |s: &Seen<'_>| s.value.as_ref().map(jcs::canonicalize);
        let original = canonical(first);
        for retry in rest {
            retries += 1;
            match (&original, canonical(retry)) {
                (Some(a), Some(b)) if *a == b => {
                    if first.d.bytes() == retry.d.bytes() {
                        byte_identical += 1;
                    }
                }
                (Some(_), Some(_)) => faults.push(format!(
                    "{} differs from #{} ({})",
                    retry.d.label(),
                    first.d.seq,
                    first_difference(first.value.as_ref(), retry.value.as_ref())
                )),
                _ => faults.push(format!("{}: a body is not strict JSON", retry.d.label())),
            }
        }
    }
    if retries == 0 {
        return skipped(case, "no retry arrived (nothing to compare)");
    }
    let note = format!("{byte_identical} of {retries} byte-identical");
    faults.grade(case, format!("{retries} retries identical"), "body changed", &note)
}

/// The first top-level member that differs between two bodies.
fn first_difference(a: Option<&Value>, b: Option<&Value>) -> String {
    let (Some(Value::Object(a)), Some(Value::Object(b))) = (a, b) else {
        return "not objects".to_owned();
    };
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .find(|n| a.get(*n) != b.get(*n))
        .map_or_else(|| "member order".to_owned(), |n| format!("member {}", shorten(n)))
}

pub(super) fn fresh_nonce(seen: &[Seen<'_>]) -> CaseResult {
    let case = case("sender/fresh-nonce");
    let mut first: HashMap<(&str, &str), usize> = HashMap::new();
    let mut faults = Faults::default();
    let mut counted = 0;
    for s in seen {
        let (Some(keyid), Some(nonce)) = (s.keyid.as_deref(), s.nonce.as_deref()) else {
            continue;
        };
        counted += 1;
        if let Some(earlier) = first.get(&(keyid, nonce)) {
            faults.push(format!("{} reuses the nonce of #{earlier}", s.d.label()));
        } else {
            first.insert((keyid, nonce), s.d.seq);
        }
    }
    if counted < 2 {
        return skipped(case, "fewer than two signed deliveries (nothing to compare)");
    }
    faults.grade(case, format!("{counted} distinct nonces"), "nonce reused", "")
}

pub(super) fn no_retry_after_2xx(seen: &[Seen<'_>]) -> CaseResult {
    let case = case("sender/no-retry-after-2xx");
    let mut acknowledged = 0;
    let mut faults = Faults::default();
    for (_, group) in by_key(seen) {
        let Some(at) = group.iter().position(|s| (200..300).contains(&s.d.status)) else {
            continue;
        };
        acknowledged += 1;
        let extra = group.len() - at - 1;
        if extra > 0 {
            faults.push(format!(
                "{}: {extra} more after #{} was answered {}",
                group[at].d.label(),
                group[at].d.seq,
                group[at].d.status
            ));
        }
    }
    if acknowledged == 0 {
        return skipped(case, "no delivery was answered 2xx (no retry arrived)");
    }
    faults.grade(
        case,
        format!("{acknowledged} acknowledged, none re-sent"),
        "re-sent after 2xx",
        "",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;
    use crate::sender::journal::{Body, Delivery};
    use crate::sender::verify::Refusal;

    /// Delivery `seq` of `key` at `at` seconds, answered `status`, with
    /// `body` and `nonce`.
    fn delivery(seq: usize, key: &str, at: u64, status: u16, body: &str) -> Delivery {
        Delivery {
            seq,
            offset: Duration::from_secs(at),
            unix: 1_796_623_200,
            method: "POST".into(),
            path: "/webhook".into(),
            headers: Vec::new(),
            body: Body::Read(body.as_bytes().to_vec()),
            key: Some(key.to_owned()),
            status,
        }
    }

    fn seen<'a>(d: &'a Delivery, nonce: &str) -> Seen<'a> {
        Seen {
            d,
            value: d.bytes().and_then(|b| serde_json::from_slice(b).ok()),
            kind: None,
            keyid: Some("k".into()),
            nonce: Some(nonce.into()),
            verdict: Err(Refusal {
                code: "not_verified".into(),
                detail: String::new(),
            }),
        }
    }

    const A: &str = r#"{"idempotency_key":"key-a-aaaaaaaaaaaaaa","task_id":"t1"}"#;
    const B: &str = r#"{"idempotency_key":"key-b-bbbbbbbbbbbbbb","task_id":"t1"}"#;

    #[test]
    fn a_retry_is_due_within_90_s_of_the_503_by_the_observed_times() {
        let on_time = [delivery(1, "a", 0, 503, A), delivery(2, "a", 89, 200, A)];
        let late = [delivery(1, "a", 0, 503, A), delivery(2, "a", 95, 200, A)];
        let never = [delivery(1, "a", 10, 503, A)];
        let grade = |ds: &[Delivery], elapsed| {
            let seen: Vec<Seen<'_>> = ds.iter().map(|d| seen(d, &d.seq.to_string())).collect();
            retry_after_503(&seen, Duration::from_secs(elapsed))
        };
        assert_eq!(grade(&on_time, 120).status, Status::Passed);
        let late = grade(&late, 120);
        assert_eq!(late.status, Status::Failed);
        assert!(late.reason.contains("retried after 95.0 s"), "{}", late.reason);
        let short = grade(&never, 12);
        assert!(short.reason.contains("before 90 s"), "{}", short.reason);
        let long = grade(&never, 200);
        assert_eq!(long.status, Status::Failed);
        assert!(
            long.reason.contains("190.0 s observed after the 503"),
            "{}",
            long.reason
        );
    }

    #[test]
    fn a_payload_re_sent_under_a_new_key_is_a_rotation_unless_acknowledged() {
        let rotated = [
            delivery(1, "key-a-aaaaaaaaaaaaaa", 0, 503, A),
            delivery(2, "key-b-bbbbbbbbbbbbbb", 1, 503, B),
        ];
        let seen_rotated: Vec<Seen<'_>> = rotated.iter().map(|d| seen(d, &d.seq.to_string())).collect();
        let case = retry_same_key(&seen_rotated);
        assert_eq!(case.status, Status::Failed);
        assert!(
            case.reason
                .contains("#2 (key key-b-bbbbbbbbbbbbbb) re-sends the payload of #1"),
            "{}",
            case.reason
        );
        // The first event was acknowledged before: a re-emission, not a rotation.
        let reemitted = [
            delivery(1, "key-a-aaaaaaaaaaaaaa", 0, 503, A),
            delivery(2, "key-a-aaaaaaaaaaaaaa", 1, 200, A),
            delivery(3, "key-b-bbbbbbbbbbbbbb", 2, 503, B),
        ];
        let seen_reemitted: Vec<Seen<'_>> = reemitted.iter().map(|d| seen(d, &d.seq.to_string())).collect();
        assert_eq!(retry_same_key(&seen_reemitted).status, Status::Passed);
    }

    #[test]
    fn deliveries_after_a_2xx_and_repeated_nonces_fail() {
        let ds = [
            delivery(1, "a", 0, 503, A),
            delivery(2, "a", 1, 200, A),
            delivery(3, "a", 2, 200, A),
        ];
        let seen: Vec<Seen<'_>> = ds.iter().map(|d| seen(d, "same")).collect();
        let after = no_retry_after_2xx(&seen);
        assert_eq!(after.status, Status::Failed);
        assert!(
            after.reason.contains("1 more after #2 was answered 200"),
            "{}",
            after.reason
        );
        let nonce = fresh_nonce(&seen);
        assert_eq!(nonce.status, Status::Failed);
        assert!(
            nonce.reason.contains("#2 (key a) reuses the nonce of #1"),
            "{}",
            nonce.reason
        );
    }
}
