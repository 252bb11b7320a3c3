//! Aggregated streams (opt-in, [`ReportingConfig::aggregate`]): buys whose
//! reports go to the same URL with the same `token`, authentication,
//! frequency, timezone and delay share one stream, one `operation_id`
//! and one `sequence_number`; each report carries the rows of every buy
//! the period covers (the spec's SHOULD).
//!
//! The group is a stream of its own (`agg_{key}_{generation}`) whose
//! registration lists its members; each member buy keeps a row that
//! points at it. The state machine is the single stream's: the group's
//! flight is the union of its members', and it ends when every member
//! ended.
//!
//! [`ReportingConfig::aggregate`]: super::ReportingConfig::aggregate

use super::error::ReportingError;
use super::period::Period;
use super::plan::BuyEnd;
use super::registration::ReportingRegistration;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// One buy of a group.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member {
    pub(crate) reg: ReportingRegistration,
    pub(crate) ended: Option<(BuyEnd, i64)>,
}

impl Member {
    /// The end of its reporting: its flight's end, or its own end if
    /// earlier.
    fn end_ms(&self) -> i64 {
        self.ended
            .map_or(self.reg.flight_end_ms, |(_, at)| at.min(self.reg.flight_end_ms))
    }

    /// Whether `period` is one of its periods.
    pub(crate) fn covers(&self, period: Period) -> bool {
        let first = self
            .reg
            .calendar
            .period_containing(self.reg.flight_start_ms)
            .map_or(self.reg.flight_start_ms, |p| p.start_ms);
        first < period.end_ms && period.start_ms < self.end_ms()
    }
}

/// The key of the streams a registration may share: everything a report's
/// envelope and schedule depend on, hashed.
pub(crate) fn key(reg: &ReportingRegistration) -> String {
    let hook = &reg.reporting_webhook;
    let shared = json!({
        "url": hook.get("url"),
        "token": hook.get("token"),
        "operation_id": hook.get("operation_id"),
        "authentication": hook.get("authentication"),
        "reporting_frequency": hook.get("reporting_frequency"),
        "timezone": reg.calendar.timezone(),
        "expected_delay_ms": reg.expected_delay_ms,
        "principal": reg.principal,
        "signing_scope": reg.signing_scope,
    });
    let digest = Sha256::digest(adcp_strict_json::jcs::fingerprint(&shared));
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// The id of generation `generation` of the groups of `key`.
pub(crate) fn group_id(key: &str, generation: u32) -> String {
    format!("agg_{key}_{generation}")
}

/// The group's own registration: the first member's webhook and calendar,
/// the union of the members' flights.
pub(crate) fn group_registration(id: &str, members: &[Member]) -> Result<ReportingRegistration, ReportingError> {
    let first = members
        .first()
        .ok_or_else(|| ReportingError::InvalidRegistration("an aggregated stream without buys".to_owned()))?;
    let mut reg = first.reg.clone();
    reg.media_buy_id = id.to_owned();
    reg.flight_start_ms = members
        .iter()
        .map(|m| m.reg.flight_start_ms)
        .min()
        .unwrap_or(reg.flight_start_ms);
    reg.flight_end_ms = members
        .iter()
        .map(|m| m.reg.flight_end_ms)
        .max()
        .unwrap_or(reg.flight_end_ms);
    Ok(reg)
}

/// The group's end: when every member ended, the last end.
pub(crate) fn group_end(members: &[Member]) -> Option<(BuyEnd, i64)> {
    let mut last: Option<(BuyEnd, i64)> = None;
    for m in members {
        let (end, _) = m.ended?;
        let at = m.end_ms();
        if last.is_none_or(|(_, l)| at >= l) {
            last = Some((end, at));
        }
    }
    last
}

/// The stored registration of a group.
pub(crate) fn to_stored(group: &ReportingRegistration, members: &[Member]) -> Value {
    let mut stored = group.to_stored();
    stored["members"] = members
        .iter()
        .map(|m| {
            json!({
                "registration": m.reg.to_stored(),
                "ended": m.ended.map(|(end, at)| json!({"status": end, "at_ms": at})),
            })
        })
        .collect();
    stored
}

/// The members of a stored registration; `None` for a single buy's.
pub(crate) fn members_of(stored: &Value) -> Result<Option<Vec<Member>>, ReportingError> {
    let Some(list) = stored.get("members").and_then(Value::as_array) else {
        return Ok(None);
    };
    list.iter()
        .map(|m| {
            let reg = ReportingRegistration::from_stored(m.get("registration").unwrap_or(&Value::Null))?;
            let ended = match m.get("ended") {
                Some(Value::Object(e)) => {
                    let status = serde_json::from_value(e.get("status").cloned().unwrap_or(Value::Null))
                        .map_err(|_| ReportingError::InvalidRegistration("a member's stored end".to_owned()))?;
                    Some((status, e.get("at_ms").and_then(Value::as_i64).unwrap_or(0)))
                }
                _ => None,
            };
            Ok(Member { reg, ended })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The state of a member's own row: where its group is.
pub(crate) fn pointer(group: &str) -> Vec<u8> {
    json!({ "aggregated_in": group }).to_string().into_bytes()
}

/// The group a member's row points at; `None` for any other row.
pub(crate) fn pointer_of(state: &[u8]) -> Option<String> {
    serde_json::from_slice::<Value>(state)
        .ok()?
        .get("aggregated_in")?
        .as_str()
        .map(str::to_owned)
}
