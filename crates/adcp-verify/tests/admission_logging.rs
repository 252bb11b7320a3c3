//! The admission monitor's `tracing` events name the clause and the
//! threshold. A test binary of its own: `tracing` caches per-callsite
//! interest process-wide, and a test on another thread that hits the same
//! callsites with no subscriber installed could make this one miss events.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use adcp_verify::admission::{AdmissionEvent, AdmissionMonitor, AdmissionThresholds, Clause, ThresholdParam};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const T0: i64 = 1_776_520_800;
const DAY: i64 = 86_400;

fn starting() -> AdmissionThresholds {
    AdmissionThresholds::tuning_guide_starting_values()
}

// ---------------------------------------------------------------- logging

#[derive(Default)]
struct Captured(Mutex<Vec<HashMap<String, String>>>);

struct Capture(Arc<Captured>);

struct FieldVisitor<'a>(&'a mut HashMap<String, String>);

impl tracing::field::Visit for FieldVisitor<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = HashMap::new();
        fields.insert("level".to_owned(), event.metadata().level().to_string());
        fields.insert("target".to_owned(), event.metadata().target().to_owned());
        event.record(&mut FieldVisitor(&mut fields));
        self.0 .0.lock().unwrap().push(fields);
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn alarms_and_overdue_events_are_logged_with_their_names() {
    let captured = Arc::new(Captured::default());
    let events = tracing::subscriber::with_default(Capture(Arc::clone(&captured)), || {
        let monitor = AdmissionMonitor::new(starting());
        let mut events = Vec::new();
        for i in 0..21 {
            events.extend(monitor.record_admission(&format!("k-{i}"), T0 + i));
        }
        events.extend(monitor.record_admission("k-0", T0 + 31 * DAY));
        events
    });
    let alarm = events.iter().find_map(AdmissionEvent::as_alarm).unwrap();
    assert_eq!(alarm.clause, Clause::D);
    assert!(alarm.to_string().contains("clause (d) proportional ceiling"), "{alarm}");
    assert!(events.iter().filter_map(AdmissionEvent::as_tuning_overdue).count() == ThresholdParam::ALL.len());

    let logged = captured.0.lock().unwrap();
    let alarm_log = logged
        .iter()
        .find(|f| f.get("kind").map(String::as_str) == Some("new_keyid_admission_pressure"))
        .unwrap();
    assert_eq!(alarm_log["level"], "WARN");
    assert_eq!(alarm_log["target"], "adcp_verify::admission");
    assert_eq!(alarm_log["clause"], "d");
    assert_eq!(alarm_log["category"], "proportional ceiling");
    assert_eq!(alarm_log["observed"], "21");
    assert!(
        alarm_log["message"].contains("clause (d)"),
        "{:?}",
        alarm_log["message"]
    );
    let overdue_logs: Vec<_> = logged
        .iter()
        .filter(|f| f.get("kind").map(String::as_str) == Some("threshold_tuning_overdue"))
        .collect();
    assert_eq!(overdue_logs.len(), ThresholdParam::ALL.len());
    assert!(overdue_logs
        .iter()
        .any(|f| f["threshold"] == "a_ratio" && f["shipped_value"] == "3.0"));
}
