//! Background work: derivatives, bringing storage back in line after crashes, forgetting old
//! keys and old live news.

pub mod derivatives;
pub mod idempotency_keys;
pub mod live_feed;
pub mod orphans;
