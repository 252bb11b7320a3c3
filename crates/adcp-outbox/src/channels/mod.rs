//! Channels: a buyer's registrations as the seller keeps them (a buy's
//! `push_notification_config` and `reporting_webhook`, account and agent
//! subscribers), their lifecycle (update, pause, resume, activation,
//! close) and what it does to the events on them. See [`Channels`].

mod rebuild;
mod registration;
mod service;
mod state;

pub use registration::{ChannelKind, ChannelRegistration};
pub use service::{Activator, ChannelView, Channels};
pub use state::ChannelState;

/// Whether an event of `notification_type` closes `channel` when enqueued:
/// the `final` report of a `reporting_webhook` channel (nothing follows it).
pub(crate) fn closes_channel(channel: &str, notification_type: Option<&str>) -> bool {
    notification_type == Some("final") && channel.starts_with("reporting_webhook:")
}
