//! What every part of a sender reads: the stores, the options, the outbox and the capacity
//! that bounds the work.

use crate::capacity::Capacity;
use crate::options::PushOptions;
use crate::outbox::Outbox;
use std::sync::Arc;
use toolnexus_a2a_protocol::Stores;

pub struct Shared {
    /// Where configs are read at delivery (a deleted config is not delivered to).
    pub stores: Arc<dyn Stores>,
    pub options: PushOptions,
    pub outbox: Outbox,
    /// Deliveries queued and attempts in flight, overall, per namespace and per destination.
    pub capacity: Capacity,
}

impl Shared {
    pub fn new(stores: Arc<dyn Stores>, options: PushOptions, outbox: Outbox) -> Shared {
        let capacity = Capacity::new(&options);
        Shared {
            stores,
            options,
            outbox,
            capacity,
        }
    }
}
