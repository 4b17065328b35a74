//! The files the edge reads, rendered from a snapshot and written
//! atomically.
//!
//! - `routes.json`: an xDS `DiscoveryResponse` holding the one
//!   `envoy.config.route.v3.RouteConfiguration`, the form Envoy's
//!   file-based dynamic configuration (`rds.config_source.path_config_source`)
//!   reads. Envoy reloads it when a file is moved onto that path, which is
//!   exactly what an atomic rename does; it is moved there at most once a
//!   pass and only when its bytes change, so an Envoy that watches this
//!   path (not the whole directory, where the other files are renamed too)
//!   reloads once per change of routes. Its `versionInfo` is the version
//!   the xDS server gives the same configuration ([`version_of`]), which
//!   Envoy reports as the version it runs.
//! - `dependencies.json`: the backend services and their ports.
//! - `tls-secrets.json`: the TLS secrets the edge must load.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use aether_projection::{RenderError, Snapshot, descriptors};
use prost::bytes::Bytes;
use prost_reflect::{DynamicMessage, Value as ReflectValue};

/// The route configuration file.
pub const ROUTES_FILE: &str = "routes.json";
/// The dependency set file.
pub const DEPENDENCIES_FILE: &str = "dependencies.json";
/// The TLS-secret set file.
pub const TLS_SECRETS_FILE: &str = "tls-secrets.json";
/// Local mode's status report: `namespace/name` → status.
pub const STATUS_FILE: &str = "status.json";

/// Envoy's type URL of the resource in `routes.json`.
pub const ROUTE_CONFIGURATION_TYPE: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";

/// File name → content, for every file rendered from a snapshot.
pub type Files = BTreeMap<&'static str, Vec<u8>>;

/// The three edge files of `snapshot`, as a first pass writes them.
/// Deterministic: equal snapshots give equal bytes, which is what lets
/// unchanged files be skipped.
pub fn render(snapshot: &Snapshot) -> Result<Files, RenderError> {
    Ok(render_changes(snapshot, &Written::default())?.into_iter().collect())
}

/// The version of an encoded `RouteConfiguration`: 16 hex digits of its
/// SHA-256. A digest rather than a counter, so that every replica (and
/// `routes.json` and xDS alike) names one configuration the same way, and
/// an unchanged configuration keeps its version across restarts.
pub fn version_of(route_configuration: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, route_configuration);
    digest.as_ref()[..8].iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `routes.json`: `{"versionInfo": …, "resources": [RouteConfiguration with "@type"]}`. The
/// resource is a `google.protobuf.Any` of Envoy's descriptors, which
/// prost-reflect writes as Envoy's JSON with `@type` first; serialized
/// straight to bytes, since going through a `serde_json::Value` tree cost
/// about twice as much (rendering 10,000 objects: 1.7–2.3 s, now 0.75–1.3 s).
fn routes_json(snapshot: &Snapshot) -> Result<Vec<u8>, RenderError> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct DiscoveryResponse<'a> {
        version_info: String,
        resources: [&'a DynamicMessage; 1],
    }
    let any = descriptors::pool()
        .get_message_by_name("google.protobuf.Any")
        .ok_or_else(|| RenderError::Descriptor("google.protobuf.Any is not in Envoy's descriptors".into()))?;
    let mut resource = DynamicMessage::new(any);
    resource.set_field_by_name("type_url", ReflectValue::String(ROUTE_CONFIGURATION_TYPE.into()));
    resource.set_field_by_name(
        "value",
        ReflectValue::Bytes(Bytes::copy_from_slice(snapshot.route_configuration_binary())),
    );
    pretty(&DiscoveryResponse {
        version_info: version_of(snapshot.route_configuration_binary()),
        resources: [&resource],
    })
}

/// Pretty JSON with a final newline.
pub fn pretty<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, RenderError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(RenderError::Json)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The temporary file `write_atomic` writes `name` through. One fixed name
/// per target: a writer killed mid-write leaves at most one stray file,
/// which the next controller removes on start
/// ([`remove_stray_temporaries`]). One controller per output directory.
pub fn temporary_name(name: &str) -> String {
    format!(".{name}.tmp")
}

/// Replaces `dir/name` with `bytes` so that a reader (or a crash) sees either
/// the old or the new content, never a mix: write a temporary file in the
/// same directory (same file system, so the rename is atomic), fsync it,
/// rename it over the target, fsync the directory (so the rename itself
/// survives a power loss). On error the target is untouched.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let temporary = dir.join(temporary_name(name));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temporary, dir.join(name))?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        // Best effort: the temporary file is garbage either way.
        let _ = fs::remove_file(&temporary);
    }
    result
}

/// Removes the temporary files of `names` that a controller killed inside
/// [`write_atomic`] left behind. Called on start, before anything is
/// written; a file that cannot be removed is left (the next write of its
/// target truncates it anyway).
pub fn remove_stray_temporaries(dir: &Path, names: &[&'static str]) {
    for name in names {
        let _ = fs::remove_file(dir.join(temporary_name(name)));
    }
}

/// What the output directory holds, as far as this process knows: the
/// bytes of each file, except that for `routes.json`, once this process has
/// written it, only the route configuration it was rendered from is kept
/// (binary, a fraction of the JSON's size). A pass whose route
/// configuration is the same then skips rendering the JSON, which is most
/// of a pass's cost at scale.
#[derive(Debug, Clone, Default)]
pub struct Written {
    files: Files,
    routes_source: Option<Vec<u8>>,
}

impl Written {
    /// What is on disk now of the files in `names`, so that a restarted
    /// controller does not rewrite identical files. Missing or unreadable
    /// files are simply absent (they will be written).
    pub fn read_existing(dir: &Path, names: &[&'static str]) -> Self {
        let files = names
            .iter()
            .filter_map(|name| fs::read(dir.join(name)).ok().map(|bytes| (*name, bytes)))
            .collect();
        Self {
            files,
            routes_source: None,
        }
    }

    /// The bytes known of `name` (for `routes.json`, only as read at start).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.files.get(name).map(Vec::as_slice)
    }

    /// Whether `routes.json` is known to hold the rendering of `binary`.
    fn routes_rendered_from(&self, binary: &[u8]) -> bool {
        self.routes_source.as_deref() == Some(binary)
    }

    fn differs(&self, name: &str, bytes: &[u8]) -> bool {
        self.get(name) != Some(bytes)
    }
}

/// The files of `snapshot` that differ from `written`, in write order: the
/// route configuration last, so that the clusters and secrets its routes
/// refer to are published before it. `routes.json` is not rendered when
/// `written` says it holds this very route configuration.
pub fn render_changes(snapshot: &Snapshot, written: &Written) -> Result<Vec<(&'static str, Vec<u8>)>, RenderError> {
    let mut files = vec![
        (DEPENDENCIES_FILE, pretty(&snapshot.dependencies)?),
        (TLS_SECRETS_FILE, pretty(&snapshot.tls_secrets)?),
    ];
    if !written.routes_rendered_from(snapshot.route_configuration_binary()) {
        files.push((ROUTES_FILE, routes_json(snapshot)?));
    }
    files.retain(|(name, bytes)| written.differs(name, bytes));
    Ok(files)
}

/// Writes each of `files` that differs from `written` with [`write_atomic`]
/// (`routes.json` last) and records it; `routes_source` is the route
/// configuration `routes.json` was rendered from. Returns the names written.
/// Stops at the first failure, which leaves that file as it was and
/// unrecorded, so the next pass writes it again.
pub fn write_changed(
    dir: &Path,
    files: &Files,
    written: &mut Written,
    routes_source: &[u8],
) -> io::Result<Vec<&'static str>> {
    let mut changed: Vec<(&'static str, &Vec<u8>)> = files
        .iter()
        .filter(|(name, bytes)| match **name {
            ROUTES_FILE if written.routes_rendered_from(routes_source) => false,
            _ => written.differs(name, bytes),
        })
        .map(|(name, bytes)| (*name, bytes))
        .collect();
    changed.sort_by_key(|(name, _)| (*name == ROUTES_FILE, *name));
    let mut done = Vec::new();
    for (name, bytes) in changed {
        write_atomic(dir, name, bytes).map_err(|err| io::Error::new(err.kind(), format!("writing {name}: {err}")))?;
        if name == ROUTES_FILE {
            written.files.remove(ROUTES_FILE);
            written.routes_source = Some(routes_source.to_vec());
        } else {
            written.files.insert(name, bytes.clone());
        }
        done.push(name);
    }
    Ok(done)
}
