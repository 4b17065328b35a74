//! What `aetherctl validate` found, and its text and JSON forms.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::input;
use crate::{EXIT_ERROR, EXIT_INVALID, EXIT_VALID, Output};
use aether_api::object::{Judged, VirtualHostObject};
use aether_api::validate::Violation;
use aether_manifests::{self as manifests, Error, Limits, Loaded, Skipped};

/// Everything found: the JSON output of `validate --output json`, field for
/// field. The shape is stable: every key is always present (`null` when it
/// does not apply); new keys may be added, none removed or renamed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// No error and no violation.
    pub valid: bool,
    /// Every VirtualHost read, valid or not, in file and document order.
    pub objects: Vec<ObjectReport>,
    /// Everything that could not be checked, in path, file and document order.
    pub errors: Vec<ErrorReport>,
    /// Documents of other kinds, left out (see [`SkippedReport`]).
    pub skipped: Vec<SkippedReport>,
}

/// One VirtualHost and its violations (none when it is valid).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectReport {
    pub file: String,
    /// 0-based, in the file (List items counted one by one).
    pub document: usize,
    pub namespace: String,
    pub name: String,
    pub violations: Vec<ViolationReport>,
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViolationReport {
    /// `spec.routes[2].match.prefix`.
    pub path: String,
    /// The protovalidate rule id: `string.pattern`, `path.no_dot_segment`;
    /// or, for a value that does not decode, `type` (a wrong type, or a
    /// number out of the field's range), `enum`, `unknown_field`,
    /// `required` (no spec) or `decode`; or, for a limit of the edge's own,
    /// [`RULE_RE2`](aether_edge_limits::RULE_RE2) (a regular expression its
    /// RE2 refuses) or [`RULE_ENVOY`](aether_edge_limits::RULE_ENVOY) (a
    /// route action Envoy refuses).
    pub rule: String,
    pub message: String,
}

/// What a command found (`validate`, `admit`, `status`): its exit code and
/// its output forms, the same for every command.
pub trait CommandReport: Serialize {
    /// Inputs that could not be read or decoded.
    fn errors(&self) -> &[ErrorReport];
    /// Documents of other kinds, left out.
    fn skipped(&self) -> &[SkippedReport];
    /// Whether every object read passed (valid, admitted).
    fn passed(&self) -> bool;
    /// The text form's findings on stdout, summary line last.
    fn write_findings(&self, out: &mut dyn Write) -> io::Result<()>;

    /// 2 if any input could not be read (errors win), else 1 if some object
    /// did not pass, else 0.
    fn exit_code(&self) -> u8 {
        if !self.errors().is_empty() {
            EXIT_ERROR
        } else if !self.passed() {
            EXIT_INVALID
        } else {
            EXIT_VALID
        }
    }

    /// Writes the report in `output` form (text: findings on `out`, one
    /// `error: FILE[: document N][: PATH]: MESSAGE` line per error and one
    /// `skipped: ...` note per document of another kind on `err`; JSON or
    /// YAML: one document on `out`, the same in both) and returns the exit
    /// code.
    fn emit(&self, output: Output, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<u8> {
        match output {
            Output::Text => {
                write_skipped(self.skipped(), err)?;
                write_errors(self.errors(), err)?;
                self.write_findings(out)?;
            }
            Output::Json => {
                serde_json::to_writer_pretty(&mut *out, self)?;
                writeln!(out)?;
            }
            Output::Yaml => out.write_all(to_yaml(self)?.as_bytes())?,
        }
        Ok(self.exit_code())
    }
}

/// A report as YAML: the same document as its JSON form, keys in the same
/// order.
pub fn to_yaml<T: Serialize + ?Sized>(report: &T) -> io::Result<String> {
    serde_saphyr::to_string(&report).map_err(io::Error::other)
}

/// One `error: FILE[: document N][: PATH]: MESSAGE` line per error.
pub fn write_errors(errors: &[ErrorReport], err: &mut dyn Write) -> io::Result<()> {
    for error in errors {
        writeln!(err, "error: {error}")?;
    }
    Ok(())
}

/// One `skipped: FILE: document N: KIND NAME (API_VERSION): not a
/// VirtualHost` note per document left out.
pub fn write_skipped(skipped: &[SkippedReport], err: &mut dyn Write) -> io::Result<()> {
    for s in skipped {
        write!(err, "skipped: {}: document {}: {}", s.file, s.document, s.kind)?;
        if let Some(name) = &s.name {
            write!(err, " {name}")?;
        }
        writeln!(err, " ({}): not a VirtualHost", s.api_version)?;
    }
    Ok(())
}

/// A document of another kind (a Deployment, a ConfigMap: a mixed stream
/// such as `kustomize build` writes), left out with a note. A VirtualHost of
/// another version, another kind of this API's group and a document
/// without `apiVersion` or `kind` are errors instead.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedReport {
    pub file: String,
    pub document: usize,
    pub api_version: String,
    pub kind: String,
    /// `metadata.name`; `null` when it has none.
    pub name: Option<String>,
}

impl From<Skipped> for SkippedReport {
    fn from(s: Skipped) -> Self {
        Self {
            file: display(&s.file),
            document: s.document,
            api_version: s.api_version,
            kind: s.kind,
            name: s.name,
        }
    }
}

/// Input that could not be checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorReport {
    /// The path or file as given (or found in a directory).
    pub file: String,
    /// The document, when the error is in one; `null` for the whole file.
    pub document: Option<usize>,
    /// Where in the document (`spec.routes[0].backend.port`), when known.
    pub path: Option<String>,
    pub message: String,
}

impl From<Error> for ErrorReport {
    fn from(e: Error) -> Self {
        Self {
            file: display(&e.file),
            document: e.document,
            path: e.path,
            message: e.message,
        }
    }
}

/// Everything read from some paths (`-`: standard input), by the one
/// reader ([`input::load`]): the objects (one per namespace/name: a second
/// copy is an error), every error met as a report, and the documents of
/// other kinds left out.
pub fn load(paths: &[PathBuf], limits: &Limits) -> (Vec<Loaded>, Vec<ErrorReport>, Vec<SkippedReport>) {
    reports(input::load(paths, limits))
}

fn reports(load: manifests::Load) -> (Vec<Loaded>, Vec<ErrorReport>, Vec<SkippedReport>) {
    (
        load.objects,
        load.errors.into_iter().map(ErrorReport::from).collect(),
        load.skipped.into_iter().map(SkippedReport::from).collect(),
    )
}

/// `FILE[: document N][: PATH]: MESSAGE`
impl std::fmt::Display for ErrorReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(document) = self.document {
            write!(f, ": document {document}")?;
        }
        if let Some(path) = &self.path {
            write!(f, ": {path}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// A path as reports print it.
pub fn display(path: &Path) -> String {
    path.display().to_string()
}

impl Report {
    /// Reads and checks every manifest under `paths`: every object, each
    /// on its own (two copies of one object are both checked).
    pub fn check(paths: &[PathBuf], limits: &Limits) -> Self {
        let (loaded, errors, skipped) = reports(input::read_all(paths, limits));
        let objects: Vec<ObjectReport> = loaded
            .into_iter()
            .map(
                |Loaded {
                     file, document, object, ..
                 }| {
                    let violations = problems(&object)
                        .into_iter()
                        .map(|v| ViolationReport {
                            path: v.field_path,
                            rule: v.rule_id.to_owned(),
                            message: v.message.into_owned(),
                        })
                        .collect();
                    ObjectReport {
                        file: display(&file),
                        document,
                        namespace: object.namespace,
                        name: object.name,
                        violations,
                    }
                },
            )
            .collect();
        let valid = errors.is_empty() && objects.iter().all(|o| o.violations.is_empty());
        Self {
            valid,
            objects,
            errors,
            skipped,
        }
    }
}

/// Why the edge would refuse `object` on its own: values that did not
/// decode, then the rules the rest breaks; or, when there is none, the
/// edge's own limits ([`aether_edge_limits::edge_problems`]). In the
/// webhook's order: the limits speak of a spec the rules admit, and the
/// webhook denies exactly those problems, so `admit` agrees.
fn problems(object: &VirtualHostObject) -> Vec<Violation> {
    let violations = object.problems(Judged::Whole);
    if !violations.is_empty() {
        return violations;
    }
    aether_edge_limits::edge_problems(&object.spec)
}

impl CommandReport for Report {
    fn errors(&self) -> &[ErrorReport] {
        &self.errors
    }

    fn skipped(&self) -> &[SkippedReport] {
        &self.skipped
    }

    fn passed(&self) -> bool {
        self.objects.iter().all(|o| o.violations.is_empty())
    }

    /// One line per valid object and per violation, then a summary:
    ///
    /// ```text
    /// FILE: document N: NAMESPACE/NAME: valid
    /// FILE: document N: NAMESPACE/NAME: PATH: MESSAGE [RULE]
    /// ```
    fn write_findings(&self, out: &mut dyn Write) -> io::Result<()> {
        for object in &self.objects {
            let at = format!(
                "{}: document {}: {}/{}",
                object.file, object.document, object.namespace, object.name
            );
            if object.violations.is_empty() {
                writeln!(out, "{at}: valid")?;
            }
            for v in &object.violations {
                writeln!(out, "{at}: {}: {} [{}]", v.path, v.message, v.rule)?;
            }
        }
        let invalid = self.objects.iter().filter(|o| !o.violations.is_empty()).count();
        let violations: usize = self.objects.iter().map(|o| o.violations.len()).sum();
        writeln!(
            out,
            "{} object(s): {} valid, {} invalid ({} violation(s)); {} error(s)",
            self.objects.len(),
            self.objects.len() - invalid,
            invalid,
            violations,
            self.errors.len()
        )
    }
}
