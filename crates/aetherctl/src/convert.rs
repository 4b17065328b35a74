//! `aetherctl convert --to gateway-api`: VirtualHost manifests as Gateway
//! API HTTPRoutes, through `aether-gateway-api`, with its notes on what does
//! not carry over exactly.

use std::io::{self, Write};
use std::path::PathBuf;

use aether_api::object::Judged;
use aether_gateway_api::{Conversion, Gateway, Names, convert};
use aether_manifests::Limits;

use crate::report::{load, write_errors, write_skipped};
use crate::{EXIT_ERROR, EXIT_INVALID, EXIT_VALID, Output};

/// `NAMESPACE/NAME` or `NAME`, with `:SECTION` for one listener.
pub fn parse_gateway(text: &str) -> Result<Gateway, String> {
    let (reference, section_name) = match text.split_once(':') {
        Some((reference, section)) => (reference, Some(section.to_owned())),
        None => (text, None),
    };
    let (namespace, name) = match reference.split_once('/') {
        Some((namespace, name)) => (Some(namespace.to_owned()), name),
        None => (None, reference),
    };
    if name.is_empty() || namespace.as_deref() == Some("") || section_name.as_deref() == Some("") {
        return Err(format!(
            "{text:?}: expected NAME, NAMESPACE/NAME, or either with :SECTION"
        ));
    }
    Ok(Gateway {
        namespace,
        name: name.to_owned(),
        section_name,
    })
}

/// Converts every VirtualHost under `paths` (read strictly: a field this
/// build does not know would be lost, so it is an error) and writes the
/// HTTPRoutes to `out`: a YAML stream (`text` and `yaml`) or a JSON `List`.
/// Each note goes to `err` as `FILE: document N: NAMESPACE/NAME: PATH:
/// KIND: MESSAGE`. Exit 0 when every object converted (notes or not), 1 when
/// some object is invalid (it is not converted), 2 when an input cannot be
/// read (nothing is written).
pub fn run(
    paths: &[PathBuf],
    gateway: Option<&Gateway>,
    output: Output,
    limits: &Limits,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let (objects, errors, skipped) = load(paths, limits);
    write_skipped(&skipped, err)?;
    if !errors.is_empty() {
        return write_errors(&errors, err).map(|()| EXIT_ERROR);
    }
    let mut code = EXIT_VALID;
    let mut routes = Vec::new();
    // Every object's own name first, invalid ones too: a split never takes
    // the name of an object of the run, and fixing one renames nothing.
    let mut names = Names::default();
    for loaded in &objects {
        names.reserve(&loaded.object.namespace, &loaded.object.name);
    }
    for loaded in objects {
        let object = &loaded.object;
        let at = format!(
            "{}: document {}: {}",
            loaded.file.display(),
            loaded.document,
            object.key()
        );
        let violations = object.problems(Judged::Whole);
        if !violations.is_empty() {
            for violation in violations {
                writeln!(err, "invalid: {at}: {violation}")?;
            }
            code = EXIT_INVALID;
            continue;
        }
        let Conversion {
            routes: converted,
            notes,
        } = convert(&object.namespace, &object.name, &object.spec, gateway, &mut names);
        for note in notes {
            writeln!(err, "{at}: {note}")?;
        }
        routes.extend(converted);
    }
    match output {
        Output::Json => {
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": routes});
            serde_json::to_writer_pretty(&mut *out, &list)?;
            writeln!(out)?;
        }
        Output::Text | Output::Yaml => {
            for route in &routes {
                let yaml = serde_saphyr::to_string(route).map_err(io::Error::other)?;
                write!(out, "---\n{yaml}")?;
            }
        }
    }
    Ok(code)
}
