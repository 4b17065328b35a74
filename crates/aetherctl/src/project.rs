//! `aetherctl project`: manifests to the edge's snapshot, through
//! aether-projection, exactly as the controller projects objects it watches.

use std::io::{self, Write};
use std::path::PathBuf;

use aether_projection::{Format, ProjectionConfig, Snapshot, VirtualHostObject};

use crate::report::{ErrorReport, SkippedReport, load, write_errors, write_skipped};
use crate::{EXIT_ERROR, EXIT_VALID, Output};
use aether_manifests::{Limits, Loaded};

/// Reads every manifest under `paths`, projects the objects and writes the
/// snapshot to `out`; errors go to `err`. Returns the exit code.
/// Documents of other kinds are noted on `err` in every form (the snapshot
/// has no place for them).
pub fn run(
    paths: &[PathBuf],
    output: Output,
    limits: &Limits,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let (projected, skipped) = load_and_project(paths, limits);
    write_skipped(&skipped, err)?;
    let snapshot = match projected {
        Ok(projected) => projected.snapshot,
        Err(errors) => return write_errors(&errors, err).map(|()| EXIT_ERROR),
    };
    let format = match output {
        Output::Text => return crate::summary::write(&snapshot, out).map(|()| EXIT_VALID),
        Output::Yaml => Format::Yaml,
        Output::Json => Format::Json,
    };
    match snapshot.render(format) {
        Ok(bytes) => out.write_all(&bytes).map(|()| EXIT_VALID),
        Err(e) => {
            writeln!(err, "error: rendering the snapshot: {e}")?;
            Ok(EXIT_ERROR)
        }
    }
}

/// What [`load_and_project`] read and made.
pub struct Projected {
    pub snapshot: Snapshot,
    /// The objects as read, in path and document order.
    pub objects: Vec<Loaded>,
}

/// Reads every manifest under `paths` and projects the objects: the
/// snapshot and the objects as read, or every error met (any error stops
/// the projection: a snapshot missing an object would look complete);
/// either way, the documents of other kinds left out.
pub fn load_and_project(
    paths: &[PathBuf],
    limits: &Limits,
) -> (Result<Projected, Vec<ErrorReport>>, Vec<SkippedReport>) {
    let (objects, errors, skipped) = load(paths, limits);
    (project_objects(objects, errors), skipped)
}

fn project_objects(objects: Vec<Loaded>, mut errors: Vec<ErrorReport>) -> Result<Projected, Vec<ErrorReport>> {
    if !errors.is_empty() {
        return Err(errors);
    }
    let inputs: Vec<VirtualHostObject> = objects.iter().map(|loaded| loaded.object.clone()).collect();
    match aether_projection::project(&inputs, &ProjectionConfig::default()) {
        Ok(snapshot) => Ok(Projected { snapshot, objects }),
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
