//! The generated sample bootstraps (`generated/deploy/envoy/`), made to run
//! on loopback: the only changes are the admin and listener addresses, the
//! route and listener sources (the routes and listeners files' paths, or
//! the controller's xDS address) and the backends' clusters, which in a
//! cluster come from the mesh. (The HTTPS listener's address is the
//! controller's `--https-addr`.) Over gRPC, the paths of Envoy's client
//! certificate are replaced too (the files [`crate::XdsPki`] writes), and a
//! bench's fleet may raise the heap Envoy sheds load at ([`MAX_HEAP`]), as
//! an operator would for it. Every other setting is run as generated; a
//! change of the generated file's shape that moves one of the replaced
//! fields fails here, by name.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::workspace_root;

/// Where the edge takes its routes from.
#[derive(Debug, Clone)]
pub enum RouteSource {
    /// `routes.json` at this path (`bootstrap-files.yaml`).
    File(PathBuf),
    /// The controller's xDS server at this address (`bootstrap-xds.yaml`),
    /// over mutual TLS with the client certificate files in this directory
    /// (`tls.crt`, `tls.key`, `ca.crt`: [`crate::XdsPki::client_dir`]).
    Xds(SocketAddr, PathBuf),
}

const LISTENER: &str = "/static_resources/listeners/0";
/// The listener's `rds` (route configuration name and source), as a JSON pointer.
pub const RDS: &str = "/static_resources/listeners/0/filter_chains/0/filters/0/typed_config/rds";
const CONFIG_SOURCE: &str = "/static_resources/listeners/0/filter_chains/0/filters/0/typed_config/rds/config_source";
/// The xDS cluster's `UpstreamTlsContext`, as a JSON pointer.
pub const UPSTREAM_TLS: &str = "/static_resources/clusters/0/transport_socket/typed_config";

/// The fixed heap Envoy sheds load at (`max_heap_size_bytes` of the
/// overload manager's `fixed_heap` monitor), as a JSON pointer: an
/// operator sizes it to Envoy's memory limit, and so do the benches.
pub const MAX_HEAP: &str = "/overload_manager/resource_monitors/0/typed_config/max_heap_size_bytes";

/// The generated bootstrap for `source`, as checked in.
pub fn generated(source: &RouteSource) -> Value {
    let file = match source {
        RouteSource::File(_) => "bootstrap-files.yaml",
        RouteSource::Xds(..) => "bootstrap-xds.yaml",
    };
    let path = workspace_root().join("generated/deploy/envoy").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The generated bootstrap for `source`, listening on 127.0.0.1 (`admin`,
/// `listener`), with a static cluster for each of `clusters`.
pub fn on_loopback(source: &RouteSource, admin: u16, listener: u16, clusters: &BTreeMap<String, SocketAddr>) -> Value {
    let mut bootstrap = generated(source);
    replace(&mut bootstrap, "/admin/address", loopback(admin));
    replace(&mut bootstrap, &format!("{LISTENER}/address"), loopback(listener));
    match source {
        RouteSource::File(path) => {
            replace(
                &mut bootstrap,
                &format!("{CONFIG_SOURCE}/path_config_source/path"),
                json!(path.to_str().expect("a UTF-8 path")),
            );
            // The HTTPS listener, from the same directory.
            let listeners = path.with_file_name("listeners.json");
            replace(
                &mut bootstrap,
                "/dynamic_resources/lds_config/path_config_source/path",
                json!(listeners.to_str().expect("a UTF-8 path")),
            );
        }
        RouteSource::Xds(addr, client_tls) => {
            replace(
                &mut bootstrap,
                "/static_resources/clusters/0/load_assignment/endpoints/0/lb_endpoints/0/endpoint/address",
                socket_address(*addr),
            );
            // The client certificate's files, where the test wrote them; the
            // SNI, ALPN and SAN check stay as generated.
            let file = |name: &str| json!(client_tls.join(name).to_str().expect("a UTF-8 path"));
            let context = format!("{UPSTREAM_TLS}/common_tls_context");
            for (at, name) in [
                ("tls_certificates/0/certificate_chain/filename", "tls.crt"),
                ("tls_certificates/0/private_key/filename", "tls.key"),
                ("validation_context/trusted_ca/filename", "ca.crt"),
            ] {
                replace(&mut bootstrap, &format!("{context}/{at}"), file(name));
            }
        }
    }
    let statics = pointer(&mut bootstrap, "/static_resources/clusters")
        .as_array_mut()
        .expect("static_resources.clusters is a list");
    for (name, addr) in clusters {
        statics.push(json!({
            "name": name,
            "type": "STATIC",
            "connect_timeout": "1s",
            "load_assignment": {
                "cluster_name": name,
                "endpoints": [{"lb_endpoints": [{"endpoint": {"address": socket_address(*addr)}}]}]
            }
        }));
    }
    bootstrap
}

fn loopback(port: u16) -> Value {
    json!({"socket_address": {"address": "127.0.0.1", "port_value": port}})
}

fn socket_address(addr: SocketAddr) -> Value {
    json!({"socket_address": {"address": addr.ip().to_string(), "port_value": addr.port()}})
}

fn pointer<'a>(bootstrap: &'a mut Value, at: &str) -> &'a mut Value {
    bootstrap
        .pointer_mut(at)
        .unwrap_or_else(|| panic!("the generated bootstrap has no {at}: update crates/aether-e2e/src/bootstrap.rs"))
}

/// Sets the node id Envoy gives the controller to `id` (each Envoy of a
/// fleet its own, so that one coming back is known).
pub fn set_node_id(bootstrap: &mut Value, id: &str) {
    replace(bootstrap, "/node/id", json!(id));
}

/// Sets the heap Envoy sheds load at ([`MAX_HEAP`]) to `bytes`.
pub fn set_max_heap(bootstrap: &mut Value, bytes: u64) {
    replace(bootstrap, MAX_HEAP, json!(bytes));
}

/// Replaces the value at `at`, which must exist.
fn replace(bootstrap: &mut Value, at: &str, value: Value) {
    *pointer(bootstrap, at) = value;
}
