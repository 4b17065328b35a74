//! The one reader: every VirtualHost of some input (paths, bytes held in
//! memory, a stream), with where each was read, and everything that could
//! not be read. `aetherctl` uses [`read`]; the local modes of the
//! controller and the webhook use [`crate::LastGood`], which is [`read`]
//! and [`Load::first_copies`] plus keeping what could not be read now as it
//! was last read.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use aether_api::config::v1::{API_VERSION, KIND};
use aether_api::object::{RULE_UNSUPPORTED, VirtualHostObject};
use serde_json::Value;

use crate::{Document, Error, Failure, Limits, OtherKinds, Reading};

/// Where [`read`] reads manifests from.
pub enum Input<'a> {
    /// Files and directories, in the order given (see the crate's
    /// documentation for what is read of a directory).
    Paths(&'a [PathBuf]),
    /// One file's contents held in memory: `name` names it in what is
    /// found, and its extension picks JSON (`.json`) or YAML; nothing is
    /// opened.
    Bytes { name: &'a Path, bytes: &'a [u8] },
    /// A stream (standard input), named `name` in what is found, read
    /// within the limits a file is: JSON when it starts with `{` (blanks
    /// aside), else YAML.
    Stream {
        name: &'a Path,
        stream: &'a mut dyn std::io::Read,
    },
}

/// One VirtualHost, and where it was read.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub file: PathBuf,
    /// 0-based, in the file (List items counted one by one).
    pub document: usize,
    pub object: VirtualHostObject,
    /// The `spec` as written, kept only when a tolerant read set some of it
    /// aside or found it unsupported (see [`crate::Reading::Tolerant`]): for
    /// a reader that hands the object on as the API server would
    /// (`aetherctl admit`, to the webhook's handler), which `object.spec`,
    /// without the unknown parts, is not. `None` otherwise: what decoded
    /// whole is not kept twice.
    pub spec_as_written: Option<serde_json::Value>,
}

/// A document of another kind, left out as [`OtherKinds::Skip`] says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub file: PathBuf,
    /// 0-based, in the file (List items counted one by one).
    pub document: usize,
    /// As written: `apps/v1`, `v1`.
    pub api_version: String,
    pub kind: String,
    /// `metadata.name`, when it has one.
    pub name: Option<String>,
}

/// `FILE: document N: KIND NAME (API_VERSION)`
impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {}: {}", self.file.display(), self.document, self.kind)?;
        if let Some(name) = &self.name {
            write!(f, " {name}")?;
        }
        write!(f, " ({})", self.api_version)
    }
}

/// What a load found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Load {
    /// One per object (namespace/name), in path order, then document order.
    pub objects: Vec<Loaded>,
    /// Everything that could not be read or used, each once.
    pub errors: Vec<Error>,
    /// Files that could not be read now, whose objects in [`Load::objects`]
    /// are those they gave when last read ([`crate::LastGood`] only): the
    /// input is stale there.
    pub stale: Vec<PathBuf>,
    /// The documents of other kinds left out, in path and document order:
    /// always empty unless [`Limits::other_kinds`] is [`OtherKinds::Skip`].
    pub skipped: Vec<Skipped>,
    /// Files not read again because nothing about them changed since they
    /// were last read whole ([`crate::LastGood`] only): their objects are
    /// those of that read.
    pub unchanged: Vec<PathBuf>,
}

/// Every VirtualHost of `input`, each copy of one object included, and
/// every error met: one bad path, file or document does not hide the
/// others. A caller that takes the objects as a set applies the rule for
/// two copies of one object next ([`Load::first_copies`]); one that judges
/// objects one by one (`aetherctl validate`) need not, copies making no
/// difference to it.
pub fn read(input: Input<'_>, limits: &Limits) -> Load {
    let read = match input {
        Input::Paths(paths) => return read_paths(paths, limits),
        Input::Bytes { name, bytes } => crate::parse(name, bytes, limits).map(|documents| (name, documents)),
        Input::Stream { name, stream } => {
            crate::read::read_stream(name, stream, limits).map(|documents| (name, documents))
        }
    };
    let read = match read {
        Ok((name, documents)) => decode_all(name, documents, limits),
        Err(e) => FileRead::failed(e),
    };
    Load {
        objects: read.objects,
        errors: read.errors,
        skipped: read.skipped,
        ..Load::default()
    }
}

/// [`read`] of paths: each file read, waiting for those still being written
/// with one deadline for all.
fn read_paths(paths: &[PathBuf], limits: &Limits) -> Load {
    let (files, mut errors) = crate::files::files(paths);
    let mut load = Load::default();
    let deadline = Instant::now() + limits.max_settle_wait;
    for file in files {
        let read = read_objects(&file, limits, deadline);
        load.objects.extend(read.objects);
        errors.extend(read.errors);
        load.skipped.extend(read.skipped);
    }
    load.errors = errors;
    load
}

impl Load {
    /// The one rule for two copies of one object (the same namespace/name)
    /// applied: the first is kept, in the order read (path order, then
    /// document order), and each later copy is an error
    /// ([`Failure::Duplicate`]) naming where the kept one is. The first,
    /// rather than the last, so that adding a file that sorts after (a
    /// copy, a backup) never changes what is served.
    pub fn first_copies(mut self) -> Load {
        let (objects, duplicates) = first_copies(self.objects);
        self.objects = objects;
        self.errors.extend(duplicates);
        self
    }
}

/// One file's objects and errors. A file whose errors are not empty was
/// not read whole.
pub(crate) struct FileRead {
    pub(crate) objects: Vec<Loaded>,
    pub(crate) errors: Vec<Error>,
    pub(crate) skipped: Vec<Skipped>,
}

impl FileRead {
    fn failed(e: Error) -> Self {
        Self {
            objects: Vec::new(),
            errors: vec![e],
            skipped: Vec::new(),
        }
    }
}

/// Reads one file (waiting for it to settle until `deadline`) and decodes
/// each of its documents.
pub(crate) fn read_objects(file: &Path, limits: &Limits, deadline: Instant) -> FileRead {
    match crate::read::read_until(file, limits, deadline) {
        Ok(documents) => decode_all(file, documents, limits),
        Err(e) => FileRead::failed(e),
    }
}

/// Each document decoded by the one decoder of objects
/// ([`VirtualHostObject::from_value`]), or left out as another kind.
fn decode_all(file: &Path, documents: Vec<Document>, limits: &Limits) -> FileRead {
    let mut read = FileRead {
        objects: Vec::new(),
        errors: Vec::new(),
        skipped: Vec::new(),
    };
    for document in documents {
        if limits.other_kinds == OtherKinds::Skip
            && let Some((api_version, kind)) = other_kind(&document.value)
        {
            read.skipped.push(Skipped {
                file: file.to_path_buf(),
                document: document.index,
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
                name: document.value["metadata"]["name"].as_str().map(str::to_owned),
            });
            continue;
        }
        // Only a tolerant reading sets parts aside or finds them
        // unsupported; the decoder takes the document, so the spec as
        // written is copied before, and kept only then.
        let written = (limits.reading == Reading::Tolerant)
            .then(|| document.value.get("spec").cloned())
            .flatten();
        match VirtualHostObject::from_value(document.value, limits.reading) {
            Ok(object) => {
                let unknown_parts =
                    !object.set_aside.is_empty() || object.read_problems.iter().any(|p| p.rule_id == RULE_UNSUPPORTED);
                read.objects.push(Loaded {
                    file: file.to_path_buf(),
                    document: document.index,
                    spec_as_written: written.filter(|_| unknown_parts),
                    object,
                });
            }
            Err(e) => read.errors.push(Error {
                file: file.to_path_buf(),
                document: Some(document.index),
                path: (!e.path.is_empty()).then_some(e.path),
                message: e.message,
                failure: Failure::Content,
            }),
        }
    }
    read
}

/// The `apiVersion` and `kind` of a document that is a Kubernetes object of
/// another kind (see [`OtherKinds`]): a mapping with both as strings, whose
/// kind is not `VirtualHost` and whose group (the part of `apiVersion`
/// before `/`; none for the core group's `v1`) is not this API's. `None`
/// for anything this reader must judge itself.
fn other_kind(document: &Value) -> Option<(&str, &str)> {
    let api_version = document.get("apiVersion")?.as_str()?;
    let kind = document.get("kind")?.as_str()?;
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let ours = API_VERSION.rsplit_once('/').map_or("", |(group, _)| group);
    (kind != KIND && group != ours).then_some((api_version, kind))
}

/// [`Load::first_copies`] of `objects`: those kept, and an error for each
/// later copy.
pub(crate) fn first_copies(objects: Vec<Loaded>) -> (Vec<Loaded>, Vec<Error>) {
    // The first copy of each key, found by index with the keys borrowed:
    // copying every key and file name was most of this at 50,000 objects.
    let mut first: HashMap<(&str, &str), usize> = HashMap::with_capacity(objects.len());
    let mut copies: Vec<(usize, usize)> = Vec::new();
    for (at, loaded) in objects.iter().enumerate() {
        let key = (loaded.object.namespace.as_str(), loaded.object.name.as_str());
        match first.get(&key) {
            Some(&kept) => copies.push((at, kept)),
            None => {
                first.insert(key, at);
            }
        }
    }
    drop(first);
    if copies.is_empty() {
        return (objects, Vec::new());
    }
    let duplicates: Vec<Error> = copies
        .iter()
        .map(|&(at, kept)| duplicate(&objects[kept], &objects[at]))
        .collect();
    let mut copies = copies.into_iter().map(|(at, _)| at).peekable();
    let mut kept = Vec::with_capacity(objects.len());
    for (at, loaded) in objects.into_iter().enumerate() {
        if copies.peek() == Some(&at) {
            copies.next();
        } else {
            kept.push(loaded);
        }
    }
    (kept, duplicates)
}

/// The error for `copy`, a second copy of the object `used` is the copy
/// of ([`Failure::Duplicate`]).
pub(crate) fn duplicate(used: &Loaded, copy: &Loaded) -> Error {
    Error {
        message: format!(
            "VirtualHost {} is also in {} (document {}), the copy used",
            used.object.key(),
            used.file.display(),
            used.document
        ),
        file: copy.file.clone(),
        document: Some(copy.document),
        path: None,
        failure: Failure::Duplicate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: a, namespace: ns}\n\
                        spec: {hosts: [a.example.com], routes: [{match: {prefix: /}, backend: {service: web}}]}\n";

    #[test]
    fn objects_come_with_file_and_document_and_errors_with_their_place() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.yaml");
        std::fs::write(&a, format!("kind: Pod\n---\n{HOST}")).unwrap();
        let missing = dir.path().join("missing.yaml");
        let load = read(Input::Paths(&[a.clone(), missing.clone()]), &Limits::default()).first_copies();
        assert_eq!(load.objects.len(), 1);
        assert_eq!((&load.objects[0].file, load.objects[0].document), (&a, 1));
        assert_eq!(load.objects[0].object.key().to_string(), "ns/a");
        let errors: Vec<String> = load.errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].starts_with(&format!("{}: cannot read: ", missing.display())),
            "{errors:?}"
        );
        assert_eq!(
            errors[1],
            format!(
                "{}: document 0: apiVersion: required (\"config.aether.io/v1\")",
                a.display()
            )
        );
    }

    #[test]
    fn of_two_copies_the_first_in_path_then_document_order_is_kept() {
        let text = format!("{HOST}---\n{}", HOST.replace("web", "other"));
        let input = Input::Bytes {
            name: Path::new("x.yaml"),
            bytes: text.as_bytes(),
        };
        let load = read(input, &Limits::default()).first_copies();
        assert_eq!(load.objects.len(), 1);
        assert_eq!(load.objects[0].document, 0);
        assert_eq!(
            load.errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["x.yaml: document 1: VirtualHost ns/a is also in x.yaml (document 0), the copy used"]
        );
        assert_eq!(load.errors[0].failure, Failure::Duplicate);
    }
}
