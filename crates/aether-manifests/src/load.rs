//! The one reader: every VirtualHost under some paths, with where each was
//! read, and everything that could not be read. `aetherctl` uses [`load`];
//! the local modes of the controller and the webhook use
//! [`crate::LastGood`], which is [`load`] plus keeping what could not be
//! read now as it was last read.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::objects::{self, VirtualHostObject};
use crate::{Document, Failure, Limits, OtherKinds, ReadError};

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
    /// without the unknown parts, is not. `None` otherwise, so that reading
    /// costs no copy of what decoded whole.
    pub spec_as_written: Option<serde_json::Value>,
}

/// Something under the paths that could not be read or used: a path, a
/// file, a document, or a second copy of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// The path or file, as given or as found in a directory.
    pub file: PathBuf,
    /// The document, when the error is in one.
    pub document: Option<usize>,
    /// Where in the document (`metadata.name`), when known.
    pub path: Option<String>,
    pub message: String,
    pub failure: Failure,
}

/// `FILE[: document N][: PATH]: MESSAGE`
impl fmt::Display for LoadError {
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

impl From<ReadError> for LoadError {
    fn from(e: ReadError) -> Self {
        Self {
            file: e.file,
            document: None,
            path: None,
            message: e.message,
            failure: e.failure,
        }
    }
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
    pub errors: Vec<LoadError>,
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

/// Every VirtualHost under `paths` (see [`crate::files`] for what is read),
/// and every error met: one bad path, file or document does not hide the
/// others. Two copies of one object are resolved by the rule of
/// [`first_copies`].
pub fn load(paths: &[PathBuf], limits: &Limits) -> Load {
    let mut load = read_all(paths, limits);
    let (objects, duplicates) = first_copies(load.objects);
    load.objects = objects;
    load.errors.extend(duplicates);
    load
}

/// [`load`] without the rule for two copies: every object read, each copy
/// included, for a caller that judges objects one by one (`aetherctl
/// validate`), to which copies make no difference.
pub fn read_all(paths: &[PathBuf], limits: &Limits) -> Load {
    let (files, listing_errors) = crate::files(paths);
    let mut errors: Vec<LoadError> = listing_errors.into_iter().map(LoadError::from).collect();
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

/// [`read_all`] on a stream (standard input), named `name` in what it
/// finds, read within `limits` as a file is (see [`crate::read_stream`]).
pub fn read_stream_all(name: &Path, stream: impl std::io::Read, limits: &Limits) -> Load {
    let read = match crate::read_stream(name, stream, limits) {
        Ok(documents) => decode_all(name, &documents, limits),
        Err(e) => FileRead::failed(e),
    };
    Load {
        objects: read.objects,
        errors: read.errors,
        stale: Vec::new(),
        skipped: read.skipped,
        unchanged: Vec::new(),
    }
}

/// [`load`] on one file's contents held in memory: `file` names it (and its
/// extension picks JSON or YAML); nothing is opened.
pub fn load_bytes(file: &Path, bytes: &[u8], limits: &Limits) -> Load {
    let read = match crate::parse(file, bytes, limits) {
        Ok(documents) => decode_all(file, &documents, limits),
        Err(e) => FileRead::failed(e),
    };
    let (objects, duplicates) = first_copies(read.objects);
    let mut errors = read.errors;
    errors.extend(duplicates);
    Load {
        objects,
        errors,
        stale: Vec::new(),
        skipped: read.skipped,
        unchanged: Vec::new(),
    }
}

/// One file's objects and errors. A file whose errors are not empty was
/// not read whole.
pub(crate) struct FileRead {
    pub(crate) objects: Vec<Loaded>,
    pub(crate) errors: Vec<LoadError>,
    pub(crate) skipped: Vec<Skipped>,
}

impl FileRead {
    fn failed(e: ReadError) -> Self {
        Self {
            objects: Vec::new(),
            errors: vec![e.into()],
            skipped: Vec::new(),
        }
    }
}

/// Reads one file (waiting for it to settle until `deadline`) and decodes
/// each of its documents.
pub(crate) fn read_objects(file: &Path, limits: &Limits, deadline: Instant) -> FileRead {
    match crate::read::read_until(file, limits, deadline) {
        Ok(documents) => decode_all(file, &documents, limits),
        Err(e) => FileRead::failed(e),
    }
}

fn decode_all(file: &Path, documents: &[Document], limits: &Limits) -> FileRead {
    let mut read = FileRead {
        objects: Vec::new(),
        errors: Vec::new(),
        skipped: Vec::new(),
    };
    for document in documents {
        if limits.other_kinds == OtherKinds::Skip
            && let Some((api_version, kind)) = objects::other_kind(&document.value)
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
        match objects::decode_reading(document, limits.reading) {
            Ok(object) => {
                let unknown_parts = !object.set_aside.is_empty()
                    || object
                        .read_problems
                        .iter()
                        .any(|p| p.rule_id == objects::RULE_UNSUPPORTED);
                read.objects.push(Loaded {
                    file: file.to_path_buf(),
                    document: document.index,
                    spec_as_written: unknown_parts.then(|| document.value.get("spec").cloned()).flatten(),
                    object,
                });
            }
            Err(e) => read.errors.push(LoadError {
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

/// The one rule for two copies of one object (the same namespace/name):
/// the first is kept, in the order given (path order, then document
/// order), and each later copy is an error naming where the kept one is.
/// The first, rather than the last, so that adding a file that sorts after
/// (a copy, a backup) never changes what is served.
pub fn first_copies(objects: Vec<Loaded>) -> (Vec<Loaded>, Vec<LoadError>) {
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
    let duplicates: Vec<LoadError> = copies
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
pub(crate) fn duplicate(used: &Loaded, copy: &Loaded) -> LoadError {
    LoadError {
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
        let load = load(&[a.clone(), missing.clone()], &Limits::default());
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
        let load = load_bytes(
            Path::new("x.yaml"),
            format!("{HOST}---\n{}", HOST.replace("web", "other")).as_bytes(),
            &Limits::default(),
        );
        assert_eq!(load.objects.len(), 1);
        assert_eq!(load.objects[0].document, 0);
        assert_eq!(
            load.errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["x.yaml: document 1: VirtualHost ns/a is also in x.yaml (document 0), the copy used"]
        );
        assert_eq!(load.errors[0].failure, Failure::Duplicate);
    }
}
