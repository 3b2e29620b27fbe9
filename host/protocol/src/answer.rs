//! What a call answers: one value, or a stream of events.

use crate::subscription::Subscription;
use serde_json::Value;

/// The answer to a call.
pub enum Answer {
    /// One value, already in the request's version.
    Value(Value),
    /// A stream of events, each already in the request's version.
    Stream(Subscription),
}
