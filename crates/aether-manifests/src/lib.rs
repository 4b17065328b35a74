//! Reading VirtualHost manifest files: untrusted input, read within fixed
//! limits. Shared by `aetherctl`, and by the local (`--manifests DIR`) modes
//! of `aether-webhook` and `aether-controller`, so that every tool reads a
//! directory of manifests the same way. Each document is decoded by the one
//! decoder of objects, `aether_api::object::VirtualHostObject::from_value`.
//!
//! ```
//! use std::path::Path;
//! use aether_manifests::{Input, Limits};
//!
//! let text = b"apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: api}\n\
//!              spec: {hosts: [api.example.com], routes: [{match: {prefix: /}, backend: {service: web}}]}\n";
//! let load = aether_manifests::read(Input::Bytes { name: Path::new("api.yaml"), bytes: text }, &Limits::default());
//! assert!(load.errors.is_empty());
//! assert_eq!(load.objects[0].object.key().to_string(), "default/api");
//! ```
//!
//! The whole surface: [`read`] (every object of some paths, bytes or a
//! stream, as a [`Load`]; [`Load::first_copies`] applies the rule for two
//! copies of one object), [`LastGood`] (for the watchers: what cannot be
//! read now kept as last read), [`parse`] (one file's documents, not
//! decoded), [`parse_manifests`] (objects from text, for tests and tools),
//! [`read_bytes`] (a file opened as a manifest is, for other files),
//! [`json_nodes_above`] (the JSON node budget), and one error type,
//! [`Error`], whose [`Failure`] says what kind of failure it is.
//!
//! A path is a file or a directory (walked recursively for `*.yaml`, `*.yml`
//! and `*.json`, in name order; links to directories are not followed). Only
//! regular files are read: a FIFO or device is refused, never waited on. A
//! directory that Kubernetes' atomic writer manages (a ConfigMap or Secret
//! volume: a `..data` link to a timestamped directory, and a link through
//! it for each name) is read as one copy of each file, under the names the
//! links give. A file holds one or more YAML documents (`---`-separated) or
//! JSON values; a `kind: List` document's `items` are taken one by one, as
//! kubectl does.
//!
//! Limits, each giving a clear error rather than a hang or unbounded memory:
//! see [`Limits`]. YAML parsing budgets (alias expansion, nesting, node
//! counts) are serde-saphyr's, set explicitly here.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

mod files;
mod last_good;
mod load;
mod nodes;
mod read;
#[cfg(all(unix, any(test, feature = "testing")))]
pub mod testing;
mod text;

pub use files::{FileStamp, Stamp};
pub use last_good::{Changes, LastGood};
pub use load::{Input, Load, Loaded, Skipped, read};
pub use nodes::json_nodes_above;
pub use read::read_bytes;
pub use text::parse_manifests;

// What the crate's own tests call; not part of the surface.
#[cfg(test)]
use crate::{files::files, read::read_stream};

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
    /// Most nodes (scalars, sequences, mappings; a mapping's keys among
    /// the scalars) written in one file, YAML or JSON, counted before any
    /// value is built. What it bounds: a node read costs its tree's share
    /// (32 bytes and more), and an empty mapping can decode to a route of
    /// 528 bytes; lists above their `maxItems` are cut before decoding.
    pub max_nodes: usize,
    /// Most YAML alias (`*ref`) uses in one file.
    pub max_aliases: usize,
    /// Most YAML nodes that alias uses may add, in all, in one file: what
    /// stops a "billion laughs" of aliases of aliases.
    pub max_alias_expansion: usize,
    /// A file modified less than this long ago may still be being written
    /// (an editor saving, `kubectl get -o yaml > f`, a copy in progress):
    /// it is read once it has been left alone this long, and a file whose
    /// size or modification time moves while it is read is read again.
    /// What a writer caught half-way leaves is often valid YAML
    /// (`port: 84` of `port: 8443`), so parsing cannot tell.
    pub settle: Duration,
    /// The longest a read (or a whole load) waits for files to settle; a
    /// file still changing then is a [`Failure::Changing`] error.
    pub max_settle_wait: Duration,
    /// How what this build's schema does not know is read: [`Reading::Strict`]
    /// (the default) or [`Reading::Tolerant`]. Not a bound, but carried here
    /// because every reader already passes its `Limits` down to the decoder.
    pub reading: Reading,
    /// What a document of another kind (a Deployment, a ConfigMap) is:
    /// [`OtherKinds::Error`] (the default) or [`OtherKinds::Skip`]. Not a
    /// bound either; carried here for the same reason as `reading`.
    pub other_kinds: OtherKinds,
}

/// What a reader does with a document that is a Kubernetes object of
/// another kind: a mapping with a string `apiVersion` and `kind`, whose
/// kind is not `VirtualHost` and whose group is not this API's. A
/// `VirtualHost` of another group or version, another kind of this API's
/// group, and anything without `apiVersion` and `kind` are never another
/// kind: they stay errors, since they are most likely a VirtualHost typed
/// wrong, or not an object at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OtherKinds {
    /// An error, like any document that is not a VirtualHost. The local
    /// modes keep this: their directory is the edge's input and holds
    /// VirtualHosts only, so another kind there is a wrong file mounted,
    /// which must be reported (and counted), not passed over quietly.
    #[default]
    Error,
    /// Left out and listed in [`Load::skipped`], for a stream of every kind
    /// of object (`kustomize build`, `helm template`, `kubectl get -o
    /// yaml`): `aetherctl` reads so, and notes each one.
    Skip,
}

/// How an object's unknown parts (from a newer API version) are read: the
/// one decoder's choice, carried in [`Limits::reading`].
pub use aether_api::object::Reading;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 16 * 1024 * 1024,
            max_documents: 10_000,
            max_depth: 64,
            // 250,000 nodes: a file of 10,000 small objects (about 20 nodes
            // each) fits, and the largest file (16 MiB of `{},` routes, JSON
            // or YAML) is refused before any value is built (26 and 35 MB
            // peak). The most a file within it cost, measured with
            // `aetherctl validate` (debug build): 470 objects of 512 empty
            // routes each (lists are read whole up to four times their
            // `maxItems`), 146 MB peak, 1.1 s. At 1,000,000 YAML nodes the bound
            // was about 550 MB, and JSON had none (16 MiB: 5.95 GB).
            max_nodes: 250_000,
            max_aliases: 1_000,
            max_alias_expansion: 100_000,
            // As long as the controller's default debounce: by the time a
            // change it polled is reconciled, the file has usually settled,
            // so this adds no delay there.
            settle: Duration::from_millis(250),
            max_settle_wait: Duration::from_secs(5),
            reading: Reading::Strict,
            other_kinds: OtherKinds::Error,
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

/// Something under the input that could not be read or used: a path, a
/// file, a document in it, or a second copy of an object; the one error
/// type of this crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The path or file, as given or as found in a directory.
    pub file: PathBuf,
    /// The document, when the error is in one.
    pub document: Option<usize>,
    /// Where in the document (`metadata.name`), when known.
    pub path: Option<String>,
    pub message: String,
    pub failure: Failure,
}

/// Whether an [`Error`] says what a path holds, or that it is unknown.
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
    /// The file kept changing for [`Limits::max_settle_wait`]: what it will
    /// hold is unknown for now (as with [`Failure::Io`]).
    Changing,
    /// A second copy of an object ([`Load::first_copies`]): read, and left out.
    Duplicate,
}

/// `FILE[: document N][: PATH]: MESSAGE`
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(document) = self.document {
            write!(f, ": document {document}")?;
        }
        if let Some(path) = &self.path {
            write!(f, ": {path}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for Error {}

/// Reads the documents of a file's contents, `bytes`, within `limits`, not
/// decoding them: what [`read`] does with each file once it has the bytes.
/// `file` names the input in errors, and its extension picks the format
/// (JSON for `.json`, YAML otherwise); it is not opened. For a caller that
/// wants the documents as written (the fuzz targets, tests that edit them).
pub fn parse(file: &Path, bytes: &[u8], limits: &Limits) -> Result<Vec<Document>, Error> {
    let format = if file.extension().is_some_and(|e| e == "json") {
        Format::Json
    } else {
        Format::Yaml
    };
    parse_as(file, bytes, limits, format)
}

/// How a file's text is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Yaml,
    /// A stream, which has no extension to tell: JSON when its first
    /// character that is not blank is `{`, as kubectl tells them apart, and
    /// YAML otherwise or when it is not JSON after all (a YAML flow
    /// mapping, `{apiVersion: v1, ...}`, starts with `{` too).
    Sniffed,
}

/// [`parse`], parsing the text as `format` says.
pub(crate) fn parse_as(file: &Path, bytes: &[u8], limits: &Limits, format: Format) -> Result<Vec<Document>, Error> {
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
    let values = match format {
        Format::Json => parse_json(text, limits),
        Format::Yaml => parse_yaml(text, limits),
        Format::Sniffed if text.trim_start().starts_with('{') => parse_json(text, limits)
            .or_else(|json| parse_yaml(text, limits).map_err(|yaml| format!("{json} (and as YAML: {yaml})"))),
        Format::Sniffed => parse_yaml(text, limits),
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

fn parse_json(text: &str, limits: &Limits) -> Result<Vec<Value>, String> {
    // Counted before anything is built, as the YAML budget is.
    if json_nodes_above(text.as_bytes(), limits.max_nodes) {
        return Err(format!("more than {} JSON nodes", limits.max_nodes));
    }
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

/// A [`Failure::Content`] error of the file as a whole.
pub(crate) fn error(file: &Path, message: String) -> Error {
    Error {
        file: file.to_path_buf(),
        document: None,
        path: None,
        message,
        failure: Failure::Content,
    }
}

/// A [`Failure::Io`] error.
pub(crate) fn io_error(file: &Path, message: String) -> Error {
    Error {
        failure: Failure::Io,
        ..error(file, message)
    }
}

#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
