//! `aetherctl`: VirtualHost manifests on local files, without a cluster.

pub mod manifests;
pub mod objects;
