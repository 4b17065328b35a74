//! Reading VirtualHost manifest files: untrusted input, read within fixed
//! limits. Shared by `aetherctl`, and by the local (`--manifests DIR`) modes
//! of `aether-webhook` and `aether-controller`, so that every tool reads a
//! directory of manifests the same way.
//!
//! ```
//! use aether_manifests::{Limits, objects::VirtualHostObject};
//!
//! let text = b"apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: api}\n\
//!              spec: {hosts: [api.example.com], routes: [{match: {prefix: /}, backend: {service: web}}]}\n";
//! let documents = aether_manifests::parse("api.yaml".as_ref(), text, &Limits::default()).unwrap();
//! let object = VirtualHostObject::decode(&documents[0]).unwrap();
//! assert_eq!(object.key().to_string(), "default/api");
//! ```
//!
//! A path is a file or a directory (walked recursively for `*.yaml`, `*.yml`
//! and `*.json`, in name order). A file holds one or more YAML documents
//! (`---`-separated) or JSON values; a `kind: List` document's `items` are
//! taken one by one, as kubectl does.
//!
//! Limits, each giving a clear error rather than a hang or unbounded memory:
//! see [`Limits`]. YAML parsing budgets (alias expansion, nesting, node
//! counts) are serde-saphyr's, set explicitly here.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub mod objects;
#[cfg(all(target_os = "linux", any(test, feature = "testing")))]
pub mod testing;

/// The bounds within which manifests are read. Every one is checked while
/// reading or parsing, so breaking it costs at most about what the limit
/// allows, and gives an error naming the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest file read, in bytes (a file of exactly this size is read).
    pub max_file_bytes: u64,
    /// Most documents (after `List` expansion) in one file.
    pub max_documents: usize,
    /// Deepest nesting of mappings and sequences.
    pub max_depth: usize,
    /// Most YAML nodes (scalars, sequences, mappings) written in one file.
    pub max_nodes: usize,
    /// Most YAML alias (`*ref`) uses in one file.
    pub max_aliases: usize,
    /// Most YAML nodes that alias uses may add, in all, in one file: what
    /// stops a "billion laughs" of aliases of aliases.
    pub max_alias_expansion: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 16 * 1024 * 1024,
            max_documents: 10_000,
            max_depth: 64,
            max_nodes: 1_000_000,
            max_aliases: 1_000,
            max_alias_expansion: 100_000,
        }
    }
}

/// One document of one file.
#[derive(Debug, Clone)]
pub struct Document {
    pub file: PathBuf,
    /// 0-based position in the file (after `List` expansion).
    pub index: usize,
    pub value: Value,
}

/// Why a file could not be read: the file and what was wrong.
#[derive(Debug)]
pub struct ReadError {
    pub file: PathBuf,
    pub message: String,
    pub failure: Failure,
}

/// Whether a [`ReadError`] says what a path holds, or that it is unknown.
/// A reader that keeps state (the controller's local mode) must not take an
/// I/O error for a deletion: only a listing that succeeds without a file
/// says the file is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The path could not be listed, examined or read: whatever manifests
    /// it holds (for a directory: every file under it) are unknown, not
    /// absent.
    Io,
    /// The path was read and what it holds is wrong: bad content, a limit
    /// broken, or a directory listed without a manifest in it.
    Content,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

impl std::error::Error for ReadError {}

/// What the manifests under some paths were when last looked at: each
/// file's path, size and modification time. Watchers that poll (the
/// controller's and the webhook's local modes) read the files again when it
/// changes; comparing stamps costs one `stat` per file, no reading.
pub type Stamp = Vec<(PathBuf, u64, Option<std::time::SystemTime>)>;

/// The [`Stamp`] of the manifest files under `paths` now. Unlistable paths
/// are left out (reading them reports the error).
pub fn stamp(paths: &[PathBuf]) -> Stamp {
    let (files, _) = files(paths);
    files
        .into_iter()
        .map(|file| {
            let metadata = std::fs::metadata(&file).ok();
            let len = metadata.as_ref().map_or(0, |m| m.len());
            let modified = metadata.and_then(|m| m.modified().ok());
            (file, len, modified)
        })
        .collect()
}

/// Every manifest file named by `paths`, expanded from directories, in order
/// (for one directory: the order of the paths), and an error for each path
/// that could not be listed or examined ([`Failure::Io`]: a directory, or an
/// entry that may be one, or a manifest link that leads nowhere; its
/// siblings are still listed) or held no manifest. One bad path does not
/// hide the others: callers report everything.
pub fn files(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<ReadError>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Err(e) => errors.push(io_error(path, format!("cannot read: {e}"))),
            Ok(metadata) if metadata.is_dir() => {
                let (files_before, errors_before) = (out.len(), errors.len());
                walk(path, &mut out, &mut errors);
                // Only a complete listing can tell that nothing is there.
                if out.len() == files_before && errors.len() == errors_before {
                    errors.push(error(path, "directory holds no .yaml, .yml or .json file".into()));
                }
            }
            // A named file is read whatever its extension (YAML unless `.json`)
            // and whatever its type: a pipe such as `<(cat x.yaml)` is bounded
            // by the size limit like any file.
            Ok(_) => out.push(path.clone()),
        }
    }
    (out, errors)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<ReadError>) {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(e) => {
            errors.push(io_error(dir, format!("cannot list: {e}")));
            return;
        }
    };
    let mut entries = Vec::new();
    for entry in listing {
        match entry {
            Ok(entry) => entries.push(entry.path()),
            // What the listing did not reach is unknown; what it did is read.
            Err(e) => {
                errors.push(io_error(dir, format!("cannot list: {e}")));
                break;
            }
        }
    }
    entries.sort();
    for path in entries {
        let file_type = match std::fs::symlink_metadata(&path) {
            Ok(metadata) => metadata.file_type(),
            // Not even its type is known: it may be a directory of manifests.
            Err(e) => {
                errors.push(io_error(&path, format!("cannot read: {e}")));
                continue;
            }
        };
        // Links are not followed into directories: no cycles.
        if file_type.is_dir() {
            walk(&path, out, errors);
        } else if path
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        {
            match std::fs::metadata(&path) {
                // Only regular files (links to them included): a FIFO found
                // in a directory would block the read forever.
                Ok(metadata) if metadata.is_file() => out.push(path),
                Ok(_) => {}
                // A link to a manifest that is not there now (a volume gone,
                // a link being replaced) is unreadable, not deleted.
                Err(e) => errors.push(io_error(&path, format!("cannot read: {e}"))),
            }
        }
    }
}

/// Reads one file's documents within `limits`.
pub fn read(file: &Path, limits: &Limits) -> Result<Vec<Document>, ReadError> {
    let handle = std::fs::File::open(file).map_err(|e| io_error(file, format!("cannot open: {e}")))?;
    let mut bytes = Vec::new();
    // Read one byte past the limit to tell "at the limit" from "over it",
    // without trusting the size the file system reports.
    handle
        .take(limits.max_file_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(file, format!("cannot read: {e}")))?;
    parse(file, &bytes, limits)
}

/// Reads the documents of a file's contents, `bytes`, within `limits`: what
/// [`read`] does once it has the bytes. `file` names the input in errors, and
/// its extension picks the format (JSON for `.json`, YAML otherwise); it is
/// not opened. Separate so that the parsing can be driven from memory (the
/// fuzz targets do).
pub fn parse(file: &Path, bytes: &[u8], limits: &Limits) -> Result<Vec<Document>, ReadError> {
    if bytes.len() as u64 > limits.max_file_bytes {
        return Err(error(
            file,
            format!("larger than the {} byte limit", limits.max_file_bytes),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        error(
            file,
            format!(
                "not UTF-8: invalid byte at offset {} (manifests must be UTF-8 text)",
                e.valid_up_to()
            ),
        )
    })?;
    let values = if file.extension().is_some_and(|e| e == "json") {
        parse_json(text)
    } else {
        parse_yaml(text, limits)
    }
    .map_err(|message| error(file, message))?;

    let mut documents = Vec::new();
    for value in values {
        if value.is_null() {
            continue; // an empty YAML document, e.g. after a trailing `---`
        }
        // Whole documents, as the YAML budget counts: a List's too.
        if depth(&value) > limits.max_depth {
            return Err(error(file, format!("nested deeper than {} levels", limits.max_depth)));
        }
        let expanded = match value {
            Value::Object(mut object) if object.get("kind").and_then(Value::as_str) == Some("List") => {
                match object.remove("items") {
                    Some(Value::Array(items)) => items,
                    _ => return Err(error(file, "a `kind: List` document needs an `items` list".into())),
                }
            }
            other => vec![other],
        };
        for value in expanded {
            if documents.len() == limits.max_documents {
                return Err(error(file, format!("more than {} documents", limits.max_documents)));
            }
            documents.push(Document {
                file: file.to_path_buf(),
                index: documents.len(),
                value,
            });
        }
    }
    if documents.is_empty() {
        return Err(error(file, "holds no document (empty, or only comments)".into()));
    }
    Ok(documents)
}

fn parse_yaml(text: &str, limits: &Limits) -> Result<Vec<Value>, String> {
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_depth: limits.max_depth,
            max_documents: limits.max_documents,
            max_nodes: limits.max_nodes,
            max_aliases: limits.max_aliases,
            // Flow collections (`[[[...`) are bounded by the parser itself.
            // One more than the depth limit, so that the depth check, with its
            // clearer error, comes first.
            flow_nesting_limit: limits.max_depth + 1,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: limits.max_alias_expansion,
        },
        // One line per error: the report names the file itself.
        with_snippet: false,
    };
    serde_saphyr::from_str_multiple_with_options::<Value, Vec<Value>>(text, options).map_err(|e| yaml_error(&e, limits))
}

/// A broken budget in the words of [`Limits`] (serde-saphyr's message names
/// its internal counters), any other error as serde-saphyr words it.
fn yaml_error(e: &serde_saphyr::Error, limits: &Limits) -> String {
    use serde_saphyr::budget::BudgetBreach;
    let limit = match e {
        serde_saphyr::Error::Budget { breach, .. } => match breach {
            BudgetBreach::Depth { .. } => format!("nested deeper than {} levels", limits.max_depth),
            BudgetBreach::Nodes { .. } => format!("more than {} YAML nodes", limits.max_nodes),
            BudgetBreach::Aliases { .. } => format!("more than {} YAML aliases", limits.max_aliases),
            BudgetBreach::Documents { .. } => format!("more than {} documents", limits.max_documents),
            other => format!("a YAML parsing limit was broken: {other:?}"),
        },
        // The parser's own errors (alias expansion, flow nesting) say which
        // limit they hit: "alias replay limit exceeded", "recursion limit".
        _ => return format!("invalid YAML: {e}"),
    };
    match e.location() {
        Some(at) => format!("{limit} (at line {}, column {})", at.line(), at.column()),
        None => limit,
    }
}

fn parse_json(text: &str) -> Result<Vec<Value>, String> {
    // serde_json limits nesting to 128 levels itself; our own depth check
    // below applies the tighter project limit.
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .map_err(|e| format!("invalid JSON: {e}"))
}

/// Nesting depth of a JSON value, counting mappings and sequences as the YAML
/// budget does (`{a: [1]}` is 2), iteratively: no stack overflow.
fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((value, level)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        deepest = deepest.max(level);
        stack.extend(children.map(|v| (v, level + 1)));
    }
    deepest
}

/// A [`Failure::Content`] error.
fn error(file: &Path, message: String) -> ReadError {
    ReadError {
        file: file.to_path_buf(),
        message,
        failure: Failure::Content,
    }
}

/// A [`Failure::Io`] error.
fn io_error(file: &Path, message: String) -> ReadError {
    ReadError {
        failure: Failure::Io,
        ..error(file, message)
    }
}

#[cfg(test)]
mod tests;
