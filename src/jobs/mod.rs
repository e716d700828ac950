//! Background work that keeps storage and database consistent after crashes.

pub mod orphans;
