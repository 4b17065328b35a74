//! Which files the manifests under some paths are: directories walked, and
//! what each file was when last looked at.

use std::path::{Path, PathBuf};

use crate::{Error, error, io_error};

/// What the manifests under some paths were when last looked at: each
/// file's path and [`FileStamp`]. Watchers that poll (the controller's and
/// the webhook's local modes) read the files again when it changes;
/// comparing stamps costs one `stat` per file, no reading.
pub type Stamp = Vec<(PathBuf, Option<FileStamp>)>;

/// The [`Stamp`] of the manifest files under `paths` now. Unlistable paths
/// are left out (reading them reports the error).
pub(crate) fn stamp(paths: &[PathBuf]) -> Stamp {
    let (files, _) = files(paths);
    files
        .into_iter()
        .map(|file| {
            let stamp = FileStamp::of(&file);
            (file, stamp)
        })
        .collect()
}

/// What identifies a file's content without reading it: size, modification
/// and change times, device and inode. Writing a file changes its change
/// time (nanoseconds here), replacing it (an atomic rename, Kubernetes'
/// volume links) its inode; so equal stamps mean the bytes last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
    device: u64,
    inode: u64,
}

impl FileStamp {
    /// The stamp of `file` now (following links), if it can be examined.
    pub fn of(file: &std::path::Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let metadata = std::fs::metadata(file).ok()?;
        Some(Self {
            len: metadata.len(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
            changed: (metadata.ctime(), metadata.ctime_nsec()),
            device: metadata.dev(),
            inode: metadata.ino(),
        })
    }
}

/// Every manifest file named by `paths`, expanded from directories, in order
/// (for one directory: the order of the paths), and an error for each path
/// that could not be listed or examined ([`crate::Failure::Io`]: a
/// directory, or an entry that may be one, or a manifest link that leads
/// nowhere; its siblings are still listed), held no manifest, or is a
/// manifest that is not a regular file. One bad path does not hide the
/// others: callers report everything.
pub(crate) fn files(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<Error>) {
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
            // A named file is read whatever its extension (YAML unless
            // `.json`); `read` refuses it if it is not a regular file.
            Ok(_) => out.push(path.clone()),
        }
    }
    (out, errors)
}

/// The link by which Kubernetes' atomic writer (ConfigMap, Secret, projected
/// and downward API volumes) publishes a volume's current files: each
/// version is written whole into a `..<timestamp>` directory, `..data` is
/// switched to it by one rename, and each top-level name (`a.yaml`) is a
/// link through `..data`. Walking such a directory naively reads every file
/// twice: once in the timestamped directory, once through its link.
const ATOMIC_WRITER_DATA: &str = "..data";

/// Walks `dir` into `out`. In a directory the atomic writer manages, only
/// what `..data` holds is read (one consistent version, each file once),
/// named as the links beside `..data` name it (`dir/a.yaml`, stable across
/// versions), so that messages and kept objects follow the name a user knows.
fn walk(dir: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<Error>) {
    walk_as(dir, dir, out, errors);
}

/// Walks the directory `real`, naming what it finds under `shown`.
fn walk_as(real: &Path, shown: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<Error>) {
    let data = real.join(ATOMIC_WRITER_DATA);
    let real = if std::fs::symlink_metadata(&data).is_ok_and(|m| m.file_type().is_symlink()) {
        data
    } else {
        real.to_path_buf()
    };
    let listing = match std::fs::read_dir(&real) {
        Ok(listing) => listing,
        Err(e) => {
            errors.push(io_error(shown, format!("cannot list: {e}")));
            return;
        }
    };
    let mut names = Vec::new();
    for entry in listing {
        match entry {
            Ok(entry) => names.push(entry.file_name()),
            // What the listing did not reach is unknown; what it did is read.
            Err(e) => {
                errors.push(io_error(shown, format!("cannot list: {e}")));
                break;
            }
        }
    }
    // Sorted as paths sort (component by component), so that the order of
    // the files is the order of their paths.
    names.sort_by(|a, b| Path::new(a).cmp(Path::new(b)));
    for name in names {
        let (path, named) = (real.join(&name), shown.join(&name));
        let file_type = match std::fs::symlink_metadata(&path) {
            Ok(metadata) => metadata.file_type(),
            // Not even its type is known: it may be a directory of manifests.
            Err(e) => {
                errors.push(io_error(&named, format!("cannot read: {e}")));
                continue;
            }
        };
        // Links are not followed into directories: no cycles.
        if file_type.is_dir() {
            walk_as(&path, &named, out, errors);
        } else if is_manifest_name(&path) {
            match std::fs::metadata(&path) {
                Ok(metadata) if metadata.is_file() => out.push(named),
                // A FIFO would block the read forever; a device could
                // stream without end. Named like a manifest, it is reported.
                Ok(metadata) => errors.push(error(&named, not_regular(&metadata.file_type(), "manifests"))),
                // A link to a manifest that is not there now (a volume gone,
                // a link being replaced) is unreadable, not deleted.
                Err(e) => errors.push(io_error(&named, format!("cannot read: {e}"))),
            }
        }
    }
}

fn is_manifest_name(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
}

/// The error for a path of `kind` (`manifests`) that is not a regular
/// file, naming what it is.
pub(crate) fn not_regular(file_type: &std::fs::FileType, kind: &str) -> String {
    let what = describe(file_type);
    format!("not a regular file ({what}): {kind} are read from regular files only")
}

fn describe(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}
