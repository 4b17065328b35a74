//! The files the edge reads, rendered from a snapshot and written
//! atomically.
//!
//! - `routes.json`: an xDS `DiscoveryResponse` holding the one
//!   `envoy.config.route.v3.RouteConfiguration`, the form Envoy's
//!   file-based dynamic configuration (`rds.config_source.path_config_source`)
//!   reads. Envoy reloads it when a file is moved onto that path, which is
//!   exactly what an atomic rename does.
//! - `dependencies.json`: the backend services and their ports.
//! - `tls-secrets.json`: the TLS secrets the edge must load.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use aether_projection::{RenderError, Snapshot};
use serde_json::{Value, json};

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

/// The three edge files of `snapshot`. Deterministic: equal snapshots give
/// equal bytes, which is what lets unchanged files be skipped.
pub fn render(snapshot: &Snapshot) -> Result<Files, RenderError> {
    let mut route_configuration =
        serde_json::to_value(snapshot.route_configuration_dynamic()?).map_err(RenderError::Json)?;
    if let Value::Object(fields) = &mut route_configuration {
        fields.insert("@type".into(), ROUTE_CONFIGURATION_TYPE.into());
    }
    let discovery_response = json!({"resources": [route_configuration]});
    let mut files = Files::new();
    files.insert(ROUTES_FILE, pretty(&discovery_response)?);
    files.insert(DEPENDENCIES_FILE, pretty(&snapshot.dependencies)?);
    files.insert(TLS_SECRETS_FILE, pretty(&snapshot.tls_secrets)?);
    Ok(files)
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

/// What is on disk now of the files in `names`, so that a restarted
/// controller does not rewrite identical files. Missing or unreadable files
/// are simply absent (they will be written).
pub fn read_existing(dir: &Path, names: &[&'static str]) -> Files {
    names
        .iter()
        .filter_map(|name| fs::read(dir.join(name)).ok().map(|bytes| (*name, bytes)))
        .collect()
}

/// The names of `files` that differ from `written`, in write order: the
/// route configuration last, so that the clusters and secrets its routes
/// refer to are published before it.
pub fn changed<'a>(files: &'a Files, written: &Files) -> Vec<(&'static str, &'a [u8])> {
    let mut changed: Vec<(&'static str, &[u8])> = files
        .iter()
        .filter(|(name, bytes)| written.get(*name) != Some(*bytes))
        .map(|(name, bytes)| (*name, bytes.as_slice()))
        .collect();
    changed.sort_by_key(|(name, _)| (*name == ROUTES_FILE, *name));
    changed
}

/// Writes every file of `files` whose bytes differ from `written` (see
/// [`changed`]), and records each successful write in `written`. Returns the
/// names written; stops at the first error (what was written stays recorded,
/// the rest is retried on the next pass).
pub fn write_changed(dir: &Path, files: &Files, written: &mut Files) -> io::Result<Vec<&'static str>> {
    let mut done = Vec::new();
    for (name, bytes) in changed(files, written) {
        write_atomic(dir, name, bytes).map_err(|err| io::Error::new(err.kind(), format!("writing {name}: {err}")))?;
        written.insert(name, bytes.to_vec());
        done.push(name);
    }
    Ok(done)
}
