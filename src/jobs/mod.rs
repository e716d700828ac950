//! Background work: bringing storage back in line after crashes, forgetting old keys.

pub mod idempotency_keys;
pub mod orphans;
