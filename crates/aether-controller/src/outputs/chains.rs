//! `chains/NAMESPACE.NAME/routes.json`: the route configuration of each
//! HTTPS filter chain (one per object served with TLS,
//! [`Snapshot::chain_route_configuration`]), a `DiscoveryResponse` as
//! `routes.json` is, each alone in a directory Envoy watches
//! ([`chain_routes_dir`]): an edit of one object renames one small file,
//! which wakes one subscription and rebuilds one configuration.
//!
//! A chain's file is rendered again only when its virtual host (the buffer
//! the projection shares while the object is unchanged) or its misdirected
//! hosts change, and written only when its bytes differ from the file's, so
//! a restarted controller rewrites nothing. Chain files are written before
//! `routes.json` and `listeners.json` (a new chain never points at a file
//! Envoy cannot read yet), and a chain's directory is removed only after
//! the listener that named it is replaced.
//!
//! Envoy watches each file with an inotify instance of its own, and the
//! kernel's default `fs.inotify.max_user_instances` (128) is far below a
//! fleet's chains: past it Envoy aborts. So the listener is not replaced by
//! one needing more watches than [`WatchLimit`] allows; see
//! `docs/controller.md` for raising it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::Path;

use aether_projection::listener::{CHAIN_ROUTES_FILE, CHAINS_DIR, chain_routes_dir};
use aether_projection::{RenderError, Snapshot, TlsChain};
use prost::bytes::Bytes;

use super::{Written, digest, routes_json, version_of, write_atomic};

/// What a chain's file was rendered from: its virtual host's buffer (held,
/// so that its address is not reused) and its misdirected hosts.
#[derive(Debug, Clone)]
pub(crate) struct ChainSource {
    virtual_host: Bytes,
    misdirected: Vec<String>,
}

impl ChainSource {
    fn of(snapshot: &Snapshot, chain: &TlsChain) -> Option<Self> {
        Some(Self {
            virtual_host: snapshot.tls_routes().virtual_host(&chain.object)?.clone(),
            misdirected: chain.misdirected.clone(),
        })
    }

    fn same_as(&self, other: &Self) -> bool {
        self.virtual_host.as_ptr() == other.virtual_host.as_ptr()
            && self.virtual_host.len() == other.virtual_host.len()
            && self.misdirected == other.misdirected
    }
}

/// What the output directory holds of one chain.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChainWritten {
    /// What the file was last rendered from, by this process.
    source: Option<ChainSource>,
    /// SHA-256 of the file's bytes.
    digest: Vec<u8>,
}

/// One chain's file, rendered because its source is new to `Written`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainFile {
    /// Its directory, relative to the output directory (`chains/NS.NAME`).
    pub dir: String,
    /// The file's bytes.
    pub json: Bytes,
    source: SourceEq,
}

/// A [`ChainSource`], compared by what it names (for [`ChainFile`]'s
/// equality in plans).
#[derive(Debug, Clone)]
struct SourceEq(ChainSource);

impl PartialEq for SourceEq {
    fn eq(&self, other: &Self) -> bool {
        self.0.same_as(&other.0)
    }
}

/// The chains' files of a pass: those to render anew, and every directory
/// the snapshot's chains have (the others are stale).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChainFiles {
    /// Rendered this pass (their sources changed); written when their bytes
    /// differ from the file's.
    pub rendered: Vec<ChainFile>,
    /// Every chain's directory, sorted.
    pub current: BTreeSet<String>,
}

/// The chain files of `snapshot` whose source `written` does not hold:
/// O(chains) comparisons of addresses, and a rendering per changed chain.
pub fn render_changes(snapshot: &Snapshot, written: &Written) -> Result<ChainFiles, RenderError> {
    let mut files = ChainFiles::default();
    for chain in snapshot.tls_chains.iter() {
        let dir = chain_routes_dir(chain);
        let Some(source) = ChainSource::of(snapshot, chain) else {
            continue;
        };
        let held = written.chains.get(&dir).and_then(|held| held.source.as_ref());
        if !held.is_some_and(|held| held.same_as(&source)) {
            let Some(configuration) = crate::listener::chain_route_configuration(snapshot, chain) else {
                continue;
            };
            let json = routes_json::whole(&version_of(&configuration), &configuration)?;
            files.rendered.push(ChainFile {
                dir: dir.clone(),
                json: json.into(),
                source: SourceEq(source),
            });
        }
        files.current.insert(dir);
    }
    Ok(files)
}

/// What an earlier run left in `dir/chains/`: each chain's file digest (a
/// file with the same bytes is not written again); temporaries a killed
/// run left are removed.
pub(crate) fn read_existing(dir: &Path) -> BTreeMap<String, ChainWritten> {
    let mut chains = BTreeMap::new();
    let Ok(entries) = fs::read_dir(dir.join(CHAINS_DIR)) else {
        return chains;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let chain_dir = entry.path();
        let _ = fs::remove_file(chain_dir.join(super::temporary_name(CHAIN_ROUTES_FILE)));
        let digest = fs::read(chain_dir.join(CHAIN_ROUTES_FILE))
            .map(|bytes| digest(&bytes))
            .unwrap_or_default();
        chains.insert(format!("{CHAINS_DIR}/{name}"), ChainWritten { source: None, digest });
    }
    chains
}

/// Writes the files of `files.rendered` whose bytes differ from what
/// `written` holds, and records every rendered source. Returns how many
/// were written.
pub(crate) fn write_rendered(out: &Path, files: &ChainFiles, written: &mut Written) -> io::Result<usize> {
    let mut count = 0;
    for file in &files.rendered {
        let hash = digest(&file.json);
        let held = written.chains.entry(file.dir.clone()).or_default();
        if held.digest != hash {
            let dir = out.join(&file.dir);
            fs::create_dir_all(&dir)
                .map_err(|err| io::Error::new(err.kind(), format!("creating {}: {err}", file.dir)))?;
            write_atomic(&dir, CHAIN_ROUTES_FILE, &file.json).map_err(|err| {
                io::Error::new(err.kind(), format!("writing {}/{CHAIN_ROUTES_FILE}: {err}", file.dir))
            })?;
            held.digest = hash;
            count += 1;
        }
        held.source = Some(file.source.0.clone());
    }
    Ok(count)
}

/// Removes the chain directories `written` holds that `files` no longer
/// names (after the listener stopped naming them). Returns how many.
pub(crate) fn remove_stale(out: &Path, files: &ChainFiles, written: &mut Written) -> io::Result<usize> {
    let stale: Vec<String> = written
        .chains
        .keys()
        .filter(|dir| !files.current.contains(*dir))
        .cloned()
        .collect();
    for dir in &stale {
        match fs::remove_dir_all(out.join(dir)) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(io::Error::new(err.kind(), format!("removing {dir}: {err}"))),
        }
        written.chains.remove(dir);
    }
    Ok(stale.len())
}

/// The file watches Envoy may hold: one inotify instance per watched file
/// or directory, at most `fs.inotify.max_user_instances` per user, and each
/// instance an open file, within Envoy's open-file limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchLimit {
    /// The instances one user may hold (`None`: not known, not checked).
    pub max_user_instances: Option<usize>,
    /// Envoy's open-file limit (`None`: not known or unlimited, not
    /// checked). Envoy raises its soft limit to the hard one at start, so
    /// this is the hard limit; the binary reads its own, which the Envoy
    /// container beside it shares (both get the container runtime's).
    pub open_files: Option<usize>,
}

/// Instances kept free for the rest of what runs as Envoy's user (its
/// runtime, the bootstrap's own watches, a shell).
pub const RESERVED_WATCHES: usize = 16;

/// Open files kept free for the rest of Envoy: its own (about 35 idle with
/// two workers, a few more per worker), its connections, its logs. Past the
/// limit a new chain's watch fails and Envoy aborts, so connections must
/// stay within this reserve (docs/controller.md, "File watches").
pub const RESERVED_OPEN_FILES: usize = 1024;

impl WatchLimit {
    /// Read from `/proc/sys/fs/inotify/max_user_instances` (the kernel's,
    /// which the controller's container and Envoy's share) and the open-file
    /// limit `open_files`; see [`WatchLimit::open_files`].
    pub fn read(open_files: Option<u64>) -> Self {
        Self::parse(
            fs::read_to_string("/proc/sys/fs/inotify/max_user_instances")
                .ok()
                .as_deref(),
            open_files,
        )
    }

    fn parse(text: Option<&str>, open_files: Option<u64>) -> Self {
        Self {
            max_user_instances: text.and_then(|text| text.trim().parse().ok()),
            open_files: open_files.and_then(|limit| usize::try_from(limit).ok()),
        }
    }

    /// No limit known: nothing checked.
    pub fn unchecked() -> Self {
        Self {
            max_user_instances: None,
            open_files: None,
        }
    }

    /// An error naming the setting when `watches` watches do not fit.
    pub fn check(&self, watches: usize) -> Result<(), String> {
        let what = format!(
            "Envoy's files need {watches} inotify instances (one per chain, per secret file, and for \
             routes.json and listeners.json)"
        );
        if let Some(max) = self.max_user_instances
            && watches + RESERVED_WATCHES > max
        {
            return Err(format!(
                "{what}, and fs.inotify.max_user_instances is {max} ({RESERVED_WATCHES} kept free): Envoy \
                 would abort; raise it (sysctl -w fs.inotify.max_user_instances={}) or serve Envoy over xDS",
                (watches + RESERVED_WATCHES).next_power_of_two()
            ));
        }
        if let Some(max) = self.open_files
            && watches + RESERVED_OPEN_FILES > max
        {
            return Err(format!(
                "{what}, each an open file, and the open-file limit (RLIMIT_NOFILE) is {max} \
                 ({RESERVED_OPEN_FILES} kept free for Envoy's connections): Envoy would abort; raise the \
                 hard limit of Envoy and the controller to at least {} (the container runtime's \
                 LimitNOFILE) or serve Envoy over xDS",
                watches + RESERVED_OPEN_FILES
            ));
        }
        Ok(())
    }
}

/// The watches Envoy holds for files of `chains` chains and `secrets`
/// secret files: one each, and `routes.json` and `listeners.json`.
pub fn watches_needed(chains: usize, secrets: usize) -> usize {
    chains + secrets + 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_limit_names_the_setting_and_the_value_to_set() {
        let limit = WatchLimit::parse(Some("128\n"), None);
        assert_eq!(limit.max_user_instances, Some(128));
        assert!(limit.check(watches_needed(100, 10)).is_ok());
        let error = limit.check(watches_needed(120, 0)).unwrap_err();
        assert!(error.contains("fs.inotify.max_user_instances is 128"), "{error}");
        assert!(error.contains("max_user_instances=256"), "{error}");
        assert!(WatchLimit::parse(None, None).check(1 << 30).is_ok());
        assert!(WatchLimit::parse(Some("x"), None).check(1 << 30).is_ok());
    }

    #[test]
    fn the_open_file_limit_caps_the_watches_too_and_is_named() {
        let limit = WatchLimit::parse(Some("65536"), Some(20_000));
        assert!(limit.check(20_000 - RESERVED_OPEN_FILES).is_ok());
        let error = limit.check(20_001 - RESERVED_OPEN_FILES).unwrap_err();
        assert!(
            error.contains("the open-file limit (RLIMIT_NOFILE) is 20000"),
            "{error}"
        );
        assert!(error.contains("at least 20001"), "{error}");
        // The inotify limit is named first when both are short.
        let both = WatchLimit::parse(Some("128"), Some(1_000)).check(500).unwrap_err();
        assert!(both.contains("max_user_instances is 128"), "{both}");
        // An unlimited hard limit (u64::MAX on a 64-bit host) fits anything.
        assert!(WatchLimit::parse(None, Some(u64::MAX)).check(1 << 30).is_ok());
    }

    /// The plan of `snapshot` with `tls`, under a limit of `limit` inotify instances.
    fn plan_under(
        snapshot: &aether_projection::Snapshot,
        tls: &crate::tls::EdgeTls,
        limit: usize,
    ) -> crate::outputs::Plan {
        let written = Written::default().with_watch_limit(WatchLimit {
            max_user_instances: Some(limit),
            open_files: None,
        });
        crate::outputs::plan(
            snapshot,
            tls,
            &Default::default(),
            &written,
            jiff::Timestamp::UNIX_EPOCH,
        )
        .unwrap()
    }

    fn writes_listener(plan: &crate::outputs::Plan) -> bool {
        plan.writes
            .iter()
            .any(|(name, _)| *name == super::super::LISTENERS_FILE)
    }

    #[test]
    fn a_listener_envoy_could_not_watch_is_not_written_nor_are_new_chains() {
        let names: Vec<String> = (0..8).map(|i| format!("o{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let snapshot = crate::listener::tests::snapshot(&names);
        let secrets: Vec<String> = names.iter().map(|name| format!("{name}-tls")).collect();
        let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
        // Every secret served (by the mesh: no secret files).
        let tls = crate::listener::tests::tls(&secrets);
        // 8 chains and 2 files, 16 kept free.
        let fits = plan_under(&snapshot, &tls, 26);
        assert_eq!(fits.listener_refused, None);
        assert!(writes_listener(&fits));
        assert_eq!(fits.chain_files.rendered.len(), 8);
        let refused = plan_under(&snapshot, &tls, 25);
        let why = refused.listener_refused.clone().unwrap();
        assert!(why.contains("fs.inotify.max_user_instances is 25"), "{why}");
        assert!(!writes_listener(&refused));
        assert!(refused.chain_files.rendered.is_empty());
    }

    #[test]
    fn only_the_chains_the_listener_holds_count_against_the_watch_limit() {
        let names: Vec<String> = (0..8).map(|i| format!("o{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let snapshot = crate::listener::tests::snapshot(&names);
        // No secret given: no chain in the listener, Envoy watches 2 files.
        let none = crate::listener::tests::tls(&[]);
        assert_eq!(plan_under(&snapshot, &none, 18).listener_refused, None);
        assert!(writes_listener(&plan_under(&snapshot, &none, 18)));
        // 3 of 8 served: 3 chains and 2 files.
        let three = crate::listener::tests::tls(&["o0-tls", "o3-tls", "o7-tls"]);
        assert_eq!(plan_under(&snapshot, &three, 21).listener_refused, None);
        assert!(plan_under(&snapshot, &three, 20).listener_refused.is_some());
    }
}
