//! Shared test support for the workspace's tests and benchmarks (dev-only).

pub mod drawn;
pub mod fleet;
pub mod objects;
pub mod pki;
pub mod specs;
