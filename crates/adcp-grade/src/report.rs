//! The report every grader returns: one [`CaseResult`] per vector or
//! contract case, the preconditions the endpoint had to meet, and the
//! closing line.

use serde::Serialize;

/// How one case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The endpoint answered as the case expects.
    Passed,
    /// It did not (or the request could not be sent).
    Failed,
    /// The case was not run; [`CaseResult::reason`] says why.
    Skipped,
}

/// One graded case: a conformance vector (`negative/016-replayed-nonce`) or
/// a contract case (`contract/retry`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseResult {
    /// The case id: the vector's directory and file stem, or `contract/…`,
    /// `signer/…`.
    pub id: String,
    /// Passed, failed or skipped.
    pub status: Status,
    /// What the case expects (`accepted (not 401)`, `401 request_signature_replayed`).
    pub expected: String,
    /// What the endpoint answered (`200`, `401 request_signature_invalid`).
    pub got: String,
    /// Why it failed or was skipped, or a note on a pass; may be empty.
    pub reason: String,
    /// An advisory case (the spec says SHOULD or names no status): a
    /// failure is reported but does not fail the run.
    pub advisory: bool,
}

impl CaseResult {
    pub(crate) fn new(id: impl Into<String>, expected: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            status: Status::Skipped,
            expected: expected.into(),
            got: String::new(),
            reason: String::new(),
            advisory: false,
        }
    }

    #[cfg(test)]
    pub(crate) fn skipped(id: impl Into<String>, expected: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            ..Self::new(id, expected)
        }
    }

    pub(crate) fn graded(mut self, passed: bool, got: impl Into<String>, reason: impl Into<String>) -> Self {
        self.status = if passed { Status::Passed } else { Status::Failed };
        self.got = got.into();
        self.reason = reason.into();
        self
    }

    pub(crate) fn advisory(mut self) -> Self {
        self.advisory = true;
        self
    }

    /// Whether this case fails the run (failed and not advisory).
    #[must_use]
    pub fn is_failure(&self) -> bool {
        self.status == Status::Failed && !self.advisory
    }
}

/// What a grader found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The grader: `request-signing`, `receiver`, `signer` or `sender`.
    pub grader: String,
    /// The endpoint or signer graded.
    pub target: String,
    /// The preconditions the endpoint must have configured (printed with a
    /// failing report).
    pub preconditions: Vec<String>,
    /// Every case, in the order run.
    pub cases: Vec<CaseResult>,
}

impl Report {
    pub(crate) fn new(grader: &str, target: &str, preconditions: Vec<String>) -> Self {
        Self {
            grader: grader.to_owned(),
            target: target.to_owned(),
            preconditions,
            cases: Vec::new(),
        }
    }

    /// Cases passed (advisory ones included).
    #[must_use]
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.status == Status::Passed).count()
    }

    /// Cases that fail the run (advisory failures excluded).
    #[must_use]
    pub fn failed(&self) -> usize {
        self.cases.iter().filter(|c| c.is_failure()).count()
    }

    /// Advisory cases the endpoint did not meet.
    #[must_use]
    pub fn advisory_failed(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| c.status == Status::Failed && c.advisory)
            .count()
    }

    /// Cases skipped.
    #[must_use]
    pub fn skipped(&self) -> usize {
        self.cases.iter().filter(|c| c.status == Status::Skipped).count()
    }

    /// Whether every graded case passed (exit code 0).
    #[must_use]
    pub fn is_success(&self) -> bool {
        self.failed() == 0
    }

    /// The ids of the cases that fail the run, in order.
    #[must_use]
    pub fn failed_ids(&self) -> Vec<&str> {
        self.cases
            .iter()
            .filter(|c| c.is_failure())
            .map(|c| c.id.as_str())
            .collect()
    }

    /// The closing line: `N passed, M failed, K skipped`, followed by
    /// `(A advisory not met)` when an advisory case failed.
    #[must_use]
    pub fn summary_line(&self) -> String {
        let mut line = format!(
            "{} passed, {} failed, {} skipped",
            self.passed(),
            self.failed(),
            self.skipped()
        );
        let advisory = self.advisory_failed();
        if advisory > 0 {
            line.push_str(&format!(" ({advisory} advisory not met)"));
        }
        line
    }

    /// The full report as JSON: `grader`, `target`, `preconditions`,
    /// `cases` (each `id`, `status`, `expected`, `got`, `reason`,
    /// `advisory`), `passed`, `failed`, `skipped`, `summary`.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Some(map) = value.as_object_mut() {
            map.insert("passed".into(), self.passed().into());
            map.insert("failed".into(), self.failed().into());
            map.insert("skipped".into(), self.skipped().into());
            map.insert("summary".into(), self.summary_line().into());
        }
        value
    }

    pub(crate) fn push(&mut self, case: CaseResult) {
        self.cases.push(case);
    }
}

/// Which cases to run: `--only` and `--skip` lists of case ids; cases
/// not selected are left out of the report. An entry selects a case when it equals its id, its file stem, or a prefix of the
/// id ending before a `-` (`negative/016` selects
/// `negative/016-replayed-nonce`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Run only these (all when empty).
    pub only: Vec<String>,
    /// Never run these.
    pub skip: Vec<String>,
}

impl Selection {
    /// Whether `id` is selected. Cases not selected are left out of the
    /// report (they are the caller's choice, not a skip to explain).
    #[must_use]
    pub fn selects(&self, id: &str) -> bool {
        (self.only.is_empty() || self.only.iter().any(|s| matches(s, id))) && !self.skip.iter().any(|s| matches(s, id))
    }
}

fn matches(pattern: &str, id: &str) -> bool {
    let pattern = pattern.trim();
    if pattern.is_empty() {
        return false;
    }
    let stem = id.rsplit('/').next().unwrap_or(id);
    id == pattern
        || stem == pattern
        || id.strip_prefix(pattern).is_some_and(|rest| rest.starts_with('-'))
        || stem.strip_prefix(pattern).is_some_and(|rest| rest.starts_with('-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_matches_ids_stems_and_numbered_prefixes() {
        let id = "negative/016-replayed-nonce";
        assert!(matches(id, id));
        assert!(matches("016-replayed-nonce", id));
        assert!(matches("negative/016", id));
        assert!(matches("016", id));
        assert!(!matches("01", id));
        assert!(!matches("positive/016", id));
    }

    #[test]
    fn summary_counts_advisory_failures_apart() {
        let mut report = Report::new("receiver", "http://x/", Vec::new());
        report.push(CaseResult::new("a", "x").graded(true, "200", ""));
        report.push(CaseResult::new("b", "x").graded(false, "200", "").advisory());
        report.push(CaseResult::skipped("c", "x", "why"));
        assert_eq!(
            report.summary_line(),
            "1 passed, 0 failed, 1 skipped (1 advisory not met)"
        );
        assert!(report.is_success());
    }
}
