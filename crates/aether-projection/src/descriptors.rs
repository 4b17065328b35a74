//! Envoy's own descriptors, for the canonical proto3 JSON form of the
//! `RouteConfiguration`.
//!
//! envoy-types compiles its types from Envoy's protos and keeps the
//! descriptor set it used (`src/generated/types.bin`), but has no API for it.
//! `descriptors/envoy_route_v3.binpb` is the part of that set which
//! `envoy.config.route.v3.RouteConfiguration` needs, written by the
//! `envoy_descriptors` example with [`route_configuration_subset`]; a test
//! proves the checked-in file is still exactly that subset.

use std::collections::HashSet;
use std::fmt;
use std::sync::LazyLock;

use prost::Message;
use prost_reflect::{DescriptorPool, FileDescriptor, MessageDescriptor};

/// The full name of Envoy's route configuration message.
pub const ROUTE_CONFIGURATION: &str = "envoy.config.route.v3.RouteConfiguration";

/// The checked-in subset of envoy-types' descriptor set.
pub const ENVOY_ROUTE_V3_DESCRIPTORS: &[u8] = include_bytes!("../descriptors/envoy_route_v3.binpb");

static POOL: LazyLock<DescriptorPool> = LazyLock::new(|| {
    DescriptorPool::decode(ENVOY_ROUTE_V3_DESCRIPTORS).expect("the checked-in descriptor set decodes (tested)")
});

/// The descriptor pool holding `RouteConfiguration` and everything it uses.
pub fn pool() -> &'static DescriptorPool {
    &POOL
}

/// The descriptor of `envoy.config.route.v3.RouteConfiguration`.
pub fn route_configuration() -> MessageDescriptor {
    POOL.get_message_by_name(ROUTE_CONFIGURATION)
        .expect("the checked-in descriptor set holds RouteConfiguration (tested)")
}

/// Why a descriptor subset could not be made.
#[derive(Debug)]
pub struct SubsetError(String);

impl fmt::Display for SubsetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SubsetError {}

/// From a full `FileDescriptorSet` (envoy-types' `types.bin`), the files that
/// define `RouteConfiguration` and all it imports, dependencies first, with
/// source info stripped (it is only comments and spans, and most of the
/// size).
pub fn route_configuration_subset(full_set: &[u8]) -> Result<Vec<u8>, SubsetError> {
    let pool = DescriptorPool::decode(full_set).map_err(|err| SubsetError(format!("bad descriptor set: {err}")))?;
    let message = pool
        .get_message_by_name(ROUTE_CONFIGURATION)
        .ok_or_else(|| SubsetError(format!("the descriptor set has no {ROUTE_CONFIGURATION}")))?;
    let mut seen = HashSet::new();
    let mut files = Vec::new();
    add_with_dependencies(message.parent_file(), &mut seen, &mut files);
    let file = files
        .into_iter()
        .map(|file| {
            let mut proto = file.file_descriptor_proto().clone();
            proto.source_code_info = None;
            proto
        })
        .collect();
    Ok(prost_types::FileDescriptorSet { file }.encode_to_vec())
}

/// Depth-first, dependencies before the files that import them, as
/// `DescriptorPool::decode` wants them.
fn add_with_dependencies(file: FileDescriptor, seen: &mut HashSet<String>, out: &mut Vec<FileDescriptor>) {
    if !seen.insert(file.name().to_owned()) {
        return;
    }
    for dependency in file.dependencies() {
        add_with_dependencies(dependency, seen, out);
    }
    out.push(file);
}
