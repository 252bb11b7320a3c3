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
