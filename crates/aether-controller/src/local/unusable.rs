//! The files a load could read but not use: their objects are served as
//! last read, and their statuses say why.

use std::collections::BTreeMap;
use std::path::PathBuf;

use aether_api::validate::Violation;
use aether_manifests::{Error, Failure};

/// The rule of a problem that is a file's, not its objects': it no longer
/// parses, or holds a document that is not a VirtualHost.
pub const RULE_MANIFEST: &str = "manifest";
/// The rule of a file that keeps changing ([`Failure::Changing`]).
pub const RULE_CHANGING: &str = "changing";

/// The files a load could not use now, though they could be
/// read (their objects are served as last read), each with its problems:
/// they no longer parse, or keep changing. An I/O error says nothing of a
/// file's objects (a volume remounted, a permission fixed a moment later),
/// so it leaves their statuses as they are.
pub(super) fn unusable_files(errors: &[Error], stale: &[PathBuf]) -> BTreeMap<PathBuf, Vec<Violation>> {
    let mut files: BTreeMap<PathBuf, Vec<Violation>> = BTreeMap::new();
    for err in errors {
        let rule_id = match err.failure {
            Failure::Content => RULE_MANIFEST,
            Failure::Changing => RULE_CHANGING,
            Failure::Io | Failure::Duplicate => continue,
        };
        if !stale.contains(&err.file) {
            continue;
        }
        let mut field_path = err.file.display().to_string();
        if let Some(document) = err.document {
            field_path.push_str(&format!(": document {document}"));
        }
        if let Some(path) = &err.path {
            field_path.push_str(&format!(": {path}"));
        }
        files.entry(err.file.clone()).or_default().push(Violation {
            field_path,
            rule_id,
            message: err.message.clone().into(),
        });
    }
    files
}
