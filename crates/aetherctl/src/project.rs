//! `aetherctl project`: manifests to the edge's snapshot, through
//! aether-projection, exactly as the controller projects objects it watches.

use std::io::{self, Write};
use std::path::PathBuf;

use aether_projection::{Format, ProjectionConfig, Snapshot, VirtualHostObject};

use crate::report::{ErrorReport, load};
use crate::{EXIT_ERROR, EXIT_VALID, ProjectFormat};
use aether_manifests::{Limits, Loaded};

/// Reads every manifest under `paths`, projects the objects and writes the
/// snapshot to `out`; errors go to `err`. Returns the exit code.
pub fn run(
    paths: &[PathBuf],
    format: ProjectFormat,
    limits: &Limits,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let (snapshot, _) = match load_and_project(paths, limits) {
        Ok(projected) => projected,
        Err(errors) => return report(&errors, err),
    };
    let format = match format {
        ProjectFormat::Yaml => Format::Yaml,
        ProjectFormat::Json => Format::Json,
    };
    match snapshot.render(format) {
        Ok(bytes) => out.write_all(&bytes).map(|()| EXIT_VALID),
        Err(e) => {
            writeln!(err, "error: rendering the snapshot: {e}")?;
            Ok(EXIT_ERROR)
        }
    }
}

/// Reads every manifest under `paths` and projects the objects: the
/// snapshot and the objects as read, or every error met (any error stops
/// the projection: a snapshot missing an object would look complete).
pub fn load_and_project(paths: &[PathBuf], limits: &Limits) -> Result<(Snapshot, Vec<Loaded>), Vec<ErrorReport>> {
    let (objects, mut errors) = load(paths, limits);
    if !errors.is_empty() {
        return Err(errors);
    }
    let inputs: Vec<VirtualHostObject> = objects.iter().map(|loaded| loaded.object.clone().into()).collect();
    match aether_projection::project(&inputs, &ProjectionConfig::default()) {
        Ok(snapshot) => Ok((snapshot, objects)),
        Err(e) => {
            // The reader keeps one copy of each object, so this is a bug,
            // reported rather than hidden.
            errors.push(ErrorReport {
                file: "(all inputs)".into(),
                document: None,
                path: None,
                message: e.to_string(),
            });
            Err(errors)
        }
    }
}

fn report(errors: &[ErrorReport], err: &mut dyn Write) -> io::Result<u8> {
    for error in errors {
        writeln!(err, "error: {error}")?;
    }
    Ok(EXIT_ERROR)
}
