//! `aether-envoy-route`: Envoy's own descriptors for the resources the edge
//! is given (its route configuration, its HTTPS listener with everything
//! packed into it, its secrets, and the `DiscoveryResponse` of the files
//! Envoy reads them from), so that aether-projection and the controller
//! write and read them in Envoy's canonical proto3 JSON without protoc or
//! Envoy's protos.
//!
//! envoy-types compiles its types from Envoy's protos and keeps the
//! descriptor set it used (`src/generated/types.bin` in its crate), but has
//! no API for it. The input here is that file, from the envoy-types source
//! Cargo.lock pins (the version aether-edge-envoy builds against); the
//! output is the part of it that [`ROOTS`] need, dependencies first, without
//! source info (only comments and spans, and most of the size). It does not
//! depend on `api/`.

use std::collections::HashSet;

use anyhow::{Context, Result, anyhow};
use prost::Message;
use prost_reflect::{DescriptorPool, FileDescriptor};

use crate::proto_deps::PinnedCrates;

/// The route configuration, the first of [`ROOTS`].
pub const ROUTE_CONFIGURATION: &str = "envoy.config.route.v3.RouteConfiguration";
/// The messages the subset is made for: the resources the edge is given,
/// and each message packed into an `Any` inside them (JSON spells a packed
/// message out, so its descriptor must be there too).
pub const ROOTS: &[&str] = &[
    ROUTE_CONFIGURATION,
    "envoy.config.listener.v3.Listener",
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
    "envoy.extensions.filters.http.router.v3.Router",
    "envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector",
    "envoy.extensions.filters.network.direct_response.v3.Config",
    "envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
    "envoy.extensions.transport_sockets.tls.v3.Secret",
    "envoy.service.discovery.v3.DiscoveryResponse",
];
/// The output's file name.
pub const FILE: &str = "envoy_edge_v3.binpb";

pub fn generate(pinned: &PinnedCrates) -> Result<Vec<(String, Vec<u8>)>> {
    let source = pinned.dir("envoy-types")?.join("src/generated/types.bin");
    let full = std::fs::read(&source).with_context(|| format!("reading {}", source.display()))?;
    let subset = edge_subset(&full).with_context(|| format!("in {}", source.display()))?;
    Ok(vec![(FILE.to_owned(), subset)])
}

/// From a full `FileDescriptorSet`, the files that define [`ROOTS`] and all
/// they import, dependencies first (as `DescriptorPool::decode` wants them),
/// source info stripped.
pub fn edge_subset(full_set: &[u8]) -> Result<Vec<u8>> {
    let pool = DescriptorPool::decode(full_set).context("decoding the descriptor set")?;
    let mut seen = HashSet::new();
    let mut files = Vec::new();
    for root in ROOTS {
        let message = pool
            .get_message_by_name(root)
            .ok_or_else(|| anyhow!("the descriptor set has no {root}"))?;
        add_with_dependencies(message.parent_file(), &mut seen, &mut files);
    }
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

/// Depth-first, dependencies before the files that import them.
fn add_with_dependencies(file: FileDescriptor, seen: &mut HashSet<String>, out: &mut Vec<FileDescriptor>) {
    if !seen.insert(file.name().to_owned()) {
        return;
    }
    for dependency in file.dependencies() {
        add_with_dependencies(dependency, seen, out);
    }
    out.push(file);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subset_holds_route_configuration_with_every_import_and_no_source_info() {
        let pinned = PinnedCrates::load(&crate::workspace_root()).unwrap();
        let files = generate(&pinned).unwrap();
        let [(name, bytes)] = &files[..] else {
            panic!("{} files", files.len())
        };
        assert_eq!(name, FILE);
        // Decoding checks that every import precedes its importer.
        let pool = DescriptorPool::decode(bytes.as_slice()).unwrap();
        let route = pool.get_message_by_name(ROUTE_CONFIGURATION).unwrap();
        assert!(route.get_field_by_name("virtual_hosts").is_some());
        for root in ROOTS {
            assert!(pool.get_message_by_name(root).is_some(), "{root}");
        }
        assert!(
            pool.files()
                .all(|f| f.file_descriptor_proto().source_code_info.is_none())
        );
        // Only what the route configuration needs: far from all of Envoy.
        let full = DescriptorPool::decode(
            std::fs::read(pinned.dir("envoy-types").unwrap().join("src/generated/types.bin"))
                .unwrap()
                .as_slice(),
        )
        .unwrap();
        assert!(
            pool.files().len() < full.files().len() / 2,
            "{} of {}",
            pool.files().len(),
            full.files().len()
        );
    }

    #[test]
    fn a_set_without_route_configuration_is_refused_by_name() {
        let err = edge_subset(&prost_types::FileDescriptorSet::default().encode_to_vec()).unwrap_err();
        assert!(err.to_string().contains(ROUTE_CONFIGURATION), "{err}");
    }
}
