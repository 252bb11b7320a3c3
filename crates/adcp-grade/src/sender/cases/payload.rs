//! The payload: its kind's 3.2 schema, and what a task webhook must carry
//! (`result`, the registration's `operation_id` and `token`).

use super::{case, skipped, Faults, Seen};
use crate::report::CaseResult;
use crate::sender::journal::shorten;
use crate::sender::schema::{Outcome, Schemas};
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

pub(super) fn schema(seen: &[Seen<'_>], dir: Option<&Path>) -> CaseResult {
    let case = case("sender/schema");
    let Some(dir) = dir else {
        return skipped(case, "the AdCP 3.2 JSON Schemas were not found (set ADCP_SCHEMAS_DIR)");
    };
    let mut schemas = Schemas::new(dir);
    let mut faults = Faults::default();
    let mut valid = 0;
    let mut unvalidated = HashSet::new();
    for s in seen.iter().filter(|s| s.d.bytes().is_some()) {
        let Some(value) = &s.value else {
            faults.push(format!("{}: the body is not strict JSON", s.d.label()));
            continue;
        };
        match schemas.check(value) {
            Outcome::Valid { .. } => valid += 1,
            Outcome::NoSchema { kind } => {
                unvalidated.insert(kind.as_str());
            }
            Outcome::Unclassified(code) => faults.push(format!("{}: not a webhook payload ({code})", s.d.label())),
            Outcome::Invalid { kind, errors } => {
                faults.push(format!("{} ({kind}): {}", s.d.label(), errors.join(", ")));
            }
            Outcome::Unavailable(why) => return skipped(case, format!("schema not loadable: {why}")),
        }
    }
    let mut unvalidated: Vec<&str> = unvalidated.into_iter().collect();
    unvalidated.sort_unstable();
    let note = if unvalidated.is_empty() {
        String::new()
    } else {
        format!("no schema for {} (not validated)", unvalidated.join(", "))
    };
    if valid == 0 && faults.is_empty() {
        return skipped(case, note);
    }
    faults.grade(case, format!("{valid} valid"), "invalid bodies", &note)
}

fn tasks<'s, 'a>(seen: &'s [Seen<'a>]) -> Vec<&'s Seen<'a>> {
    seen.iter().filter(|s| s.is_task()).collect()
}

pub(super) fn result(seen: &[Seen<'_>]) -> CaseResult {
    let case = case("sender/result");
    let tasks = tasks(seen);
    if tasks.is_empty() {
        return skipped(case, "no task webhook (MCP envelope) arrived");
    }
    let mut faults = Faults::default();
    for s in &tasks {
        if s.value
            .as_ref()
            .and_then(|v| v.get("result"))
            .is_none_or(Value::is_null)
        {
            faults.push(format!("{}: no result", s.d.label()));
        }
    }
    faults.grade(case, format!("{} with result", tasks.len()), "result missing", "")
}

pub(super) fn echo(seen: &[Seen<'_>], id: &str, member: &str, registered: Option<&str>) -> CaseResult {
    let case = case(id);
    let Some(registered) = registered else {
        return skipped(case, format!("the registration had no {member}"));
    };
    let tasks = tasks(seen);
    if tasks.is_empty() {
        return skipped(case, "no task webhook (MCP envelope) arrived");
    }
    let mut faults = Faults::default();
    for s in &tasks {
        match s.value.as_ref().and_then(|v| v.get(member)) {
            Some(Value::String(v)) if v == registered => {}
            Some(Value::String(v)) => faults.push(format!("{}: {member} {:?}", s.d.label(), shorten(v))),
            Some(_) => faults.push(format!("{}: {member} is not a string", s.d.label())),
            None => faults.push(format!("{}: no {member}", s.d.label())),
        }
    }
    faults.grade(
        case,
        format!("{} echoed", tasks.len()),
        format!("{member} not echoed"),
        "",
    )
}
