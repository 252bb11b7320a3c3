//! The transport: the signature under the webhook profile, the media
//! type, the content digest.

use super::{case, skipped, Faults, Seen};
use crate::report::CaseResult;
use crate::sender::journal::shorten;
use adcp_sigbase::digest::{ContentDigest, DigestPolicy};
use adcp_verify::Profile;
use std::collections::HashSet;

pub(super) fn signature(seen: &[Seen<'_>]) -> CaseResult {
    let mut faults = Faults::default();
    let mut first_code = None;
    let mut signers = HashSet::new();
    for s in seen {
        match &s.verdict {
            Ok(signer) => {
                signers.insert(format!("kid {} of {}", signer.keyid, signer.agent_url));
            }
            Err(refusal) => {
                first_code.get_or_insert_with(|| refusal.code.clone());
                faults.push(format!(
                    "{}: {} ({})",
                    s.d.label(),
                    refusal.code,
                    shorten(&refusal.detail)
                ));
            }
        }
    }
    let mut signers: Vec<String> = signers.into_iter().collect();
    signers.sort();
    let refused = faults.0.len();
    faults.grade(
        case("sender/signature"),
        format!("{} verified", seen.len()),
        format!(
            "{refused} of {} refused ({})",
            seen.len(),
            first_code.unwrap_or_default()
        ),
        &signers.join(", "),
    )
}

pub(super) fn content_type(seen: &[Seen<'_>]) -> CaseResult {
    let mut faults = Faults::default();
    for s in seen {
        let lines: Vec<&[u8]> = s.d.header_lines("content-type").collect();
        let ok = match lines.as_slice() {
            [one] => std::str::from_utf8(one).is_ok_and(|v| {
                v.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .eq_ignore_ascii_case("application/json")
            }),
            _ => false,
        };
        if !ok {
            let got = match lines.as_slice() {
                [] => "none".to_owned(),
                [one] => shorten(&String::from_utf8_lossy(one)),
                _ => format!("{} Content-Type lines", lines.len()),
            };
            faults.push(format!("{}: {got}", s.d.label()));
        }
    }
    faults.grade(
        case("sender/content-type"),
        "application/json",
        "another media type",
        "",
    )
}

pub(super) fn content_digest(seen: &[Seen<'_>]) -> CaseResult {
    let mut faults = Faults::default();
    let mut checked = 0;
    for s in seen {
        let Some(body) = s.d.bytes() else { continue };
        checked += 1;
        let lines: Vec<&[u8]> = s.d.header_lines("content-digest").collect();
        let outcome = if lines.is_empty() {
            Err("no Content-Digest".to_owned())
        } else {
            ContentDigest::parse(&lines.join(&b", "[..]), Profile::webhook_v1().digest_decoding())
                .map_err(|e| format!("malformed: {}", shorten(&e.to_string())))
                .and_then(|digest| {
                    digest
                        .verify(body, &DigestPolicy::default())
                        .map(|_| ())
                        .map_err(|e| shorten(&e.to_string()))
                })
        };
        if let Err(why) = outcome {
            faults.push(format!("{}: {why}", s.d.label()));
        }
    }
    if checked == 0 {
        return skipped(case("sender/content-digest"), "no body was read (over the size limit)");
    }
    faults.grade(
        case("sender/content-digest"),
        format!("{checked} matching"),
        "missing or not matching",
        "",
    )
}
