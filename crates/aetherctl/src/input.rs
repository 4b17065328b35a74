//! Where manifests come from: files, directories and standard input (`-`),
//! in the order given, all through the one reader (`aether_manifests`) and
//! within its limits.

use std::path::{Path, PathBuf};

use aether_manifests::{self as manifests, Input, Limits, Load};

/// The path that stands for standard input, as kubectl's `-f -`.
pub const STDIN: &str = "-";
/// Standard input as reports name it.
pub const STDIN_NAME: &str = "<stdin>";

/// Whether `path` stands for standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// Every object under `paths` (standard input read where `-` stands), in
/// the order given, each copy included (see [`manifests::read`]).
/// Standard input is read once: a second `-` is refused before anything is
/// read (see [`stdin_given_twice`]).
pub fn read_all(paths: &[PathBuf], limits: &Limits) -> Load {
    let mut load = Load::default();
    // Consecutive files are read together, with one settle deadline, as
    // the reader reads a list of paths.
    for group in paths.chunk_by(|a, b| !is_stdin(a) && !is_stdin(b)) {
        let part = match group {
            [one] if is_stdin(one) => {
                let stream = &mut std::io::stdin().lock();
                manifests::read(
                    Input::Stream {
                        name: Path::new(STDIN_NAME),
                        stream,
                    },
                    limits,
                )
            }
            files => manifests::read(Input::Paths(files), limits),
        };
        load.objects.extend(part.objects);
        load.errors.extend(part.errors);
        load.skipped.extend(part.skipped);
    }
    load
}

/// [`read_all`], then the one rule for two copies of an object
/// ([`Load::first_copies`]), for the commands that take the objects as a
/// set.
pub fn load(paths: &[PathBuf], limits: &Limits) -> Load {
    read_all(paths, limits).first_copies()
}

/// Whether `-` is among all the `paths` of a command more than once:
/// standard input can be read only once.
pub fn stdin_given_twice<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) -> bool {
    paths.into_iter().filter(|p| is_stdin(p)).count() > 1
}
