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
//!   the xDS server gives the same configuration
//!   ([`RouteTable::version`]), which Envoy reports as the version it runs.
//! - `dependencies.json`: the backend services and their ports.
//! - `tls-secrets.json`: the TLS secrets the edge must load.
//! - `status.json`: local mode's statuses ([`status_json`]).
//! - `listeners.json` and `secrets/*.json`: the HTTPS listener and its
//!   certificates ([`listeners`], [`secrets`]); the listener is moved into place
//!   after `routes.json` (its chains route with it) and after the
//!   certificates it names, and a certificate no longer named is removed
//!   only after the listener that named it is replaced.
//!
//! `routes.json`, `listeners.json` and `secrets/` are Envoy's file-based
//! configuration. A controller whose Envoys take all of it over xDS leaves
//! them out ([`Written::without_envoy_files`]): the route configuration is
//! then never rendered as JSON, which at 50,000 objects is 190 MB made and
//! written again on every change of routes, and no private key is written
//! to disk.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use std::sync::Arc;

use aether_edge_envoy::descriptors;
use aether_projection::{Dependency, RenderError, RouteTable, Snapshot, TlsSecret};
use prost::bytes::Bytes;
use prost::{Message, Name};
use prost_reflect::{DynamicMessage, Value as ReflectValue};

pub mod backoff;
pub mod chains;
pub mod listeners;
pub mod memo;
mod plan;
pub mod routes_json;
pub mod secrets;
pub mod status_json;

pub use listeners::LISTENERS_FILE;
pub use plan::{Plan, PlanError, plan, within_watch_limit};
pub use routes_json::RoutesJson;
use secrets::SECRETS_DIR;
pub use status_json::STATUS_FILE;

/// The route configuration file.
pub const ROUTES_FILE: &str = "routes.json";
/// The dependency set file.
pub const DEPENDENCIES_FILE: &str = "dependencies.json";
/// The TLS-secret set file.
pub const TLS_SECRETS_FILE: &str = "tls-secrets.json";

/// Envoy's type URL of the resource in `routes.json`.
pub const ROUTE_CONFIGURATION_TYPE: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";

/// File name → content, for every file rendered from a snapshot. Shared
/// buffers: a file rendered again only when its input changed is the same
/// buffer as last time, told unchanged without reading it.
pub type Files = BTreeMap<&'static str, Bytes>;

/// The three edge files of `snapshot`, as a first pass writes them.
/// Deterministic: equal snapshots give equal bytes, which is what lets
/// unchanged files be skipped.
pub fn render(snapshot: &Snapshot) -> Result<Files, RenderError> {
    Ok(render_changes(snapshot, &Written::default())?.into_iter().collect())
}

/// The version of an encoded resource (the listener, a secret): 16 hex
/// digits of its SHA-256. A digest rather than a counter, so that every
/// replica names one configuration the same way, and an unchanged one keeps
/// its version across restarts. (The route configuration's is its table's,
/// [`RouteTable::version`], made the same way without reading it whole.)
pub fn version_of(encoded: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, encoded);
    digest.as_ref()[..8].iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `{"versionInfo": …, "resources": [message with "@type"]}` in Envoy's
/// JSON, the version [`version_of`] its bytes, as Envoy's file-based
/// subscriptions read it.
pub fn discovery_response<M: Message + Name>(message: &M) -> Result<Vec<u8>, RenderError> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct DiscoveryResponse<'a> {
        version_info: String,
        resources: [&'a DynamicMessage; 1],
    }
    let any = descriptors::pool()
        .get_message_by_name("google.protobuf.Any")
        .ok_or_else(|| RenderError::Descriptor("google.protobuf.Any is not in Envoy's descriptors".into()))?;
    let bytes = message.encode_to_vec();
    let mut resource = DynamicMessage::new(any);
    resource.set_field_by_name("type_url", ReflectValue::String(M::type_url()));
    resource.set_field_by_name("value", ReflectValue::Bytes(Bytes::copy_from_slice(&bytes)));
    // Checks the message fits Envoy's descriptors before a file holds it.
    DynamicMessage::decode(
        descriptors::pool()
            .get_message_by_name(&M::full_name())
            .ok_or_else(|| RenderError::Descriptor(format!("{} is not in Envoy's descriptors", M::full_name())))?,
        bytes.as_slice(),
    )
    .map_err(|err| RenderError::Descriptor(err.to_string()))?;
    pretty(&DiscoveryResponse {
        version_info: version_of(&bytes),
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
    write_atomic_mode(dir, name, bytes, 0o644)
}

/// [`write_atomic`] with the file created with `mode` (before the umask):
/// `0o600` for a file holding a private key, which is then never readable
/// by others, not even between its creation and the rename.
pub fn write_atomic_mode(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let temporary = dir.join(temporary_name(name));
    let result = (|| {
        // A temporary left by a killed run keeps its mode when reopened.
        let _ = fs::remove_file(&temporary);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
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
/// written it, only the route table it was rendered from is kept (shared
/// with the snapshots). A pass whose route configuration is the same then
/// skips rendering the JSON, which is most of a pass's cost at scale.
#[derive(Debug, Clone)]
pub struct Written {
    files: Files,
    /// Shared with the snapshot (and the xDS version), not a copy.
    routes_source: Option<RouteTable>,
    /// The JSON of each virtual host of the last `routes.json` rendered,
    /// so that the next renders only the virtual hosts that changed.
    routes_json: RoutesJson,
    /// The last `listeners.json` rendered, made again only when the
    /// listener would change.
    pub(crate) listeners_json: crate::listener::ListenerMemo<Bytes>,
    /// The last `dependencies.json` and `tls-secrets.json` rendered, made
    /// again only when their list changes.
    dependencies_json: memo::Memo<Arc<[Dependency]>, Bytes>,
    tls_secrets_json: memo::Memo<Arc<[TlsSecret]>, Bytes>,
    /// The SDS files in `secrets/`: name → SHA-256 of the content (not the
    /// content: it holds a private key).
    secrets: BTreeMap<String, Vec<u8>>,
    /// The chains' route files in `chains/`, by directory.
    pub(crate) chains: BTreeMap<String, chains::ChainWritten>,
    /// How many file watches Envoy may hold; a listener needing more is
    /// not written ([`chains::WatchLimit`]).
    pub(crate) watch_limit: chains::WatchLimit,
    /// Whether Envoy's files (`routes.json`, `listeners.json`, `secrets/`,
    /// `chains/`) are rendered and written; see [`Written::without_envoy_files`].
    envoy_files: bool,
}

impl Default for Written {
    fn default() -> Self {
        Self {
            files: Files::new(),
            routes_source: None,
            routes_json: RoutesJson::default(),
            listeners_json: Default::default(),
            dependencies_json: Default::default(),
            tls_secrets_json: Default::default(),
            secrets: BTreeMap::new(),
            chains: BTreeMap::new(),
            watch_limit: chains::WatchLimit::unchecked(),
            envoy_files: true,
        }
    }
}

impl Written {
    /// What is on disk now of the files in `names`, so that a restarted
    /// controller does not rewrite identical files. Missing or unreadable
    /// files are simply absent (they will be written).
    pub fn read_existing(dir: &Path, names: &[&'static str]) -> Self {
        let files = names
            .iter()
            .filter_map(|name| fs::read(dir.join(name)).ok().map(|bytes| (*name, Bytes::from(bytes))))
            .collect();
        // The SDS files an earlier run left: each is kept if this run
        // writes the same, and removed otherwise (it may hold the key of a
        // secret no longer referenced).
        let mut secrets = BTreeMap::new();
        let secrets_dir = dir.join(SECRETS_DIR);
        if let Ok(entries) = fs::read_dir(&secrets_dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    // A temporary a killed run left.
                    let _ = fs::remove_file(entry.path());
                } else if let Ok(bytes) = fs::read(entry.path()) {
                    secrets.insert(name, digest(&bytes));
                }
            }
        }
        Self {
            files,
            secrets,
            chains: chains::read_existing(dir),
            ..Self::default()
        }
    }

    /// The same, refusing a listener whose files Envoy could not watch
    /// within `limit` (the binary reads it from the kernel; unchecked by
    /// default).
    pub fn with_watch_limit(mut self, limit: chains::WatchLimit) -> Self {
        self.watch_limit = limit;
        self
    }

    /// The same, for a controller whose Envoys take the routes, the
    /// listener and the certificates over xDS: `routes.json`,
    /// `listeners.json` and the SDS files are neither rendered nor written,
    /// and the SDS files an earlier run left (private keys) are removed by
    /// the next [`write_changed`]. A `routes.json` or `listeners.json` an
    /// earlier run left stays as it was: an Envoy still reading them keeps
    /// what it was serving.
    pub fn without_envoy_files(mut self) -> Self {
        self.envoy_files = false;
        self.files.remove(ROUTES_FILE);
        self.files.remove(LISTENERS_FILE);
        self
    }

    /// Whether Envoy's files are rendered and written (the default).
    pub fn envoy_files(&self) -> bool {
        self.envoy_files
    }

    /// The bytes known of `name` (for `routes.json`, only as read at start).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.files.get(name).map(Bytes::as_ref)
    }

    /// Whether `routes.json` is known to hold the rendering of `routes`
    /// (most passes: the table the projector shares, told in O(1)).
    fn routes_rendered_from(&self, routes: &RouteTable) -> bool {
        self.routes_source.as_ref().is_some_and(|source| source.same_as(routes))
    }

    /// The buffer held for `name` when it holds these very bytes, else
    /// `bytes`: what a memo keeps, so that while its input is unchanged
    /// [`Written::differs`] tells the file current by address.
    pub(crate) fn reuse(&self, name: &str, bytes: Bytes) -> Bytes {
        match self.files.get(name) {
            Some(held) if *held == bytes => held.clone(),
            _ => bytes,
        }
    }

    /// Whether `bytes` are not what `name` holds; the buffer written (a
    /// memo's, handed out again) is told the same without reading it.
    pub(crate) fn differs(&self, name: &str, bytes: &[u8]) -> bool {
        match self.get(name) {
            Some(held) if held.as_ptr() == bytes.as_ptr() && held.len() == bytes.len() => false,
            held => held != Some(bytes),
        }
    }
}

/// The files of `snapshot` that differ from `written`, in write order: the
/// route configuration last, so that the clusters and secrets its routes
/// refer to are published before it. `routes.json` is not rendered when
/// `written` says it holds this very route configuration.
pub fn render_changes(snapshot: &Snapshot, written: &Written) -> Result<Vec<(&'static str, Bytes)>, RenderError> {
    let mut files = vec![
        (
            DEPENDENCIES_FILE,
            written
                .dependencies_json
                .get(snapshot.dependencies.clone(), same_list, |list| {
                    Ok(written.reuse(DEPENDENCIES_FILE, pretty(&**list)?.into()))
                })?,
        ),
        (
            TLS_SECRETS_FILE,
            written
                .tls_secrets_json
                .get(snapshot.tls_secrets.clone(), same_list, |list| {
                    Ok(written.reuse(TLS_SECRETS_FILE, pretty(&**list)?.into()))
                })?,
        ),
    ];
    if written.envoy_files && !written.routes_rendered_from(snapshot.routes()) {
        files.push((ROUTES_FILE, written.routes_json.render(snapshot)?.into()));
    }
    files.retain(|(name, bytes)| written.differs(name, bytes));
    Ok(files)
}

/// The same list: the same `Arc` (the projector shares an unchanged one),
/// or equal contents.
fn same_list<T: PartialEq>(a: &Arc<[T]>, b: &Arc<[T]>) -> bool {
    Arc::ptr_eq(a, b) || a == b
}

fn digest(bytes: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, bytes).as_ref().to_vec()
}

/// Where a file goes in the write order: what others refer to first,
/// `routes.json` after it, `listeners.json` (whose chains route with
/// `routes.json`) last.
fn write_rank(name: &str) -> u8 {
    match name {
        ROUTES_FILE => 1,
        LISTENERS_FILE => 2,
        _ => 0,
    }
}

/// Writes each of `files` that differs from `written` with [`write_atomic`]
/// (the chains' files of `chain_files` first, then `routes.json`, then
/// `listeners.json`, last; the chain directories no longer named are
/// removed after it) and records it;
/// `routes_source` is the route table `routes.json` was rendered from. Before them, the SDS files of `secrets` (name relative to
/// `secrets/` → content) that changed, owner-only; after them, the SDS
/// files no longer in `secrets`, removed. Returns the names written
/// (`secrets/` once for any SDS file written or removed, `chains/` once
/// for any chain file written or removed). Stops at the
/// first failure, which leaves that file as it was and unrecorded, so the
/// next pass writes it again.
pub fn write_changed(
    dir: &Path,
    files: &Files,
    secrets: &[(String, Vec<u8>)],
    chain_files: &chains::ChainFiles,
    written: &mut Written,
    routes_source: &RouteTable,
) -> io::Result<Vec<&'static str>> {
    let mut done = Vec::new();
    let secrets_dir = dir.join(SECRETS_DIR);
    let mut secrets_changed = false;
    for (name, bytes) in secrets {
        let name = name.rsplit('/').next().unwrap_or(name);
        let hash = digest(bytes);
        if written.secrets.get(name) == Some(&hash) {
            continue;
        }
        ensure_private_dir(&secrets_dir)?;
        write_atomic_mode(&secrets_dir, name, bytes, 0o600)
            .map_err(|err| io::Error::new(err.kind(), format!("writing secrets/{name}: {err}")))?;
        written.secrets.insert(name.to_owned(), hash);
        secrets_changed = true;
    }
    let chains_written = chains::write_rendered(dir, chain_files, written)?;
    let mut changed: Vec<(&'static str, &Bytes)> = files
        .iter()
        .filter(|(name, bytes)| match **name {
            ROUTES_FILE if written.routes_rendered_from(routes_source) => false,
            _ => written.differs(name, bytes),
        })
        .map(|(name, bytes)| (*name, bytes))
        .collect();
    changed.sort_by_key(|(name, _)| (write_rank(name), *name));
    for (name, bytes) in changed {
        write_atomic(dir, name, bytes).map_err(|err| io::Error::new(err.kind(), format!("writing {name}: {err}")))?;
        if name == ROUTES_FILE {
            written.files.remove(ROUTES_FILE);
            written.routes_source = Some(routes_source.clone());
        } else {
            written.files.insert(name, bytes.clone());
        }
        done.push(name);
    }
    let current: std::collections::BTreeSet<&str> = secrets
        .iter()
        .map(|(name, _)| name.rsplit('/').next().unwrap_or(name))
        .collect();
    let stale: Vec<String> = written
        .secrets
        .keys()
        .filter(|name| !current.contains(name.as_str()))
        .cloned()
        .collect();
    for name in stale {
        match fs::remove_file(secrets_dir.join(&name)) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(io::Error::new(err.kind(), format!("removing secrets/{name}: {err}"))),
        }
        written.secrets.remove(&name);
        secrets_changed = true;
    }
    let chains_removed = if written.envoy_files {
        chains::remove_stale(dir, chain_files, written)?
    } else {
        0
    };
    if chains_written + chains_removed > 0 {
        done.insert(0, "chains/");
    }
    if secrets_changed {
        done.insert(0, "secrets/");
    }
    Ok(done)
}

/// Creates `dir` owner-only (0700) if missing, and makes it so if not.
fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        }
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_made_again_with_the_same_bytes_is_the_buffer_held_and_told_current_by_address() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(DEPENDENCIES_FILE), b"[]\n").unwrap();
        let written = Written::read_existing(dir.path(), &[DEPENDENCIES_FILE]);
        let held = written.files[DEPENDENCIES_FILE].clone();
        let same = written.reuse(DEPENDENCIES_FILE, Bytes::from_static(b"[]\n"));
        assert_eq!(same.as_ptr(), held.as_ptr());
        assert!(!written.differs(DEPENDENCIES_FILE, &same));
        let other = written.reuse(DEPENDENCIES_FILE, Bytes::from_static(b"[1]\n"));
        assert_eq!(other, b"[1]\n".as_slice());
        assert!(written.differs(DEPENDENCIES_FILE, &other));
        assert_ne!(
            written.reuse(TLS_SECRETS_FILE, Bytes::from_static(b"[]\n")).as_ptr(),
            held.as_ptr()
        );
    }
}
