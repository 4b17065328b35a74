//! `aetherctl admit`: the admission webhook's judgement, offline. Each
//! object is turned into the AdmissionReview the API server would send and
//! answered by the webhook's own handler (`aether_webhook::admission`),
//! against a host index of the stored objects, exactly as the webhook's
//! local mode builds it.
//!
//! Read as the webhook reads (tolerantly, [`Reading::Tolerant`]): each
//! object goes to the handler as written, fields and values from a newer
//! API version included, and the handler admits it with a warning per
//! unknown field, or denies it `Unsupported:` when it cannot judge it.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;

use aether_api::ObjectKey;
use aether_api::object::{Judged, RULE_UNSUPPORTED, VirtualHostObject};
use aether_manifests::{Limits, Loaded, Reading};
use aether_webhook::admission;
use aether_webhook::index::HostIndex;
use serde::Serialize;
use serde_json::{Value, json};

use crate::report::{CommandReport, ErrorReport, SkippedReport, display, load};

/// What `admit` found: the JSON output of `admit --output json`. Every key is
/// always present; new keys may be added, none removed or renamed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdmitReport {
    /// Every object was admitted and every input read.
    pub admitted: bool,
    /// One per object under the PATHs, in file and document order.
    pub reviews: Vec<Review>,
    /// Inputs that could not be read; when there is any, nothing is reviewed.
    pub errors: Vec<ErrorReport>,
    /// Documents of other kinds, left out.
    pub skipped: Vec<SkippedReport>,
}

/// The webhook's answer for one object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Review {
    pub file: String,
    pub document: usize,
    pub namespace: String,
    pub name: String,
    /// `CREATE`, or `UPDATE` when a stored object has the same
    /// namespace/name (the PATHs hold one copy of each object: a second is
    /// an input error).
    pub operation: &'static str,
    pub allowed: bool,
    /// Why it was denied; `null` when allowed.
    pub message: Option<String>,
    /// Warnings the webhook attached (wildcard overlaps), possibly none.
    pub warnings: Vec<String>,
}

/// Reviews every object under `paths`, in order, against the objects under
/// `stored`. An admitted object is stored before the next is reviewed, as
/// when the manifests are applied one by one. Any input that cannot be read
/// is an error and nothing is reviewed: an incomplete stored set could admit
/// what the cluster would deny. Both are read tolerantly, whatever
/// `limits.reading` says, as the webhook reads.
pub fn check(stored: &[PathBuf], paths: &[PathBuf], limits: &Limits) -> AdmitReport {
    let limits = Limits {
        reading: Reading::Tolerant,
        ..*limits
    };
    let (stored_objects, mut errors, mut skipped) = load(stored, &limits);
    let (candidates, candidate_errors, candidates_skipped) = load(paths, &limits);
    errors.extend(candidate_errors);
    skipped.extend(candidates_skipped);
    if !errors.is_empty() {
        return AdmitReport {
            admitted: false,
            reviews: Vec::new(),
            errors,
            skipped,
        };
    }

    let index = HostIndex::new();
    // The stored objects as the API server would hand them over as oldObject.
    let mut objects: HashMap<ObjectKey, Value> = HashMap::new();
    for Loaded { object, .. } in stored_objects {
        let key = object.key();
        index.upsert(key.clone(), object.spec.hosts.clone());
        objects.insert(key, as_stored(&object));
    }
    let mut reviews = Vec::new();
    for (number, loaded) in candidates.into_iter().enumerate() {
        let Loaded {
            file,
            document,
            object,
            spec_as_written,
        } = loaded;
        let key = object.key();
        let mut json = as_stored(&object);
        if let Some(spec) = spec_as_written {
            json["spec"] = spec;
        }
        let old = objects.get(&key);
        let operation = if old.is_some() { "UPDATE" } else { "CREATE" };
        // What the handler judges itself: the object as written, unknown
        // parts and all.
        let judged_by_the_webhook = object
            .read_problems
            .iter()
            .all(|problem| problem.rule_id == RULE_UNSUPPORTED);
        let response = if judged_by_the_webhook {
            let body = serde_json::to_vec(&admission::review_for(&format!("aetherctl-{number}"), &json, old))
                .expect("a JSON value encodes");
            let answer = admission::review(&body, &index)
                .map_err(|e| e.0)
                .and_then(|(bytes, _)| serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string()));
            match answer {
                Ok(review) => review["response"].clone(),
                // The review is built here, so this is a bug, reported rather than hidden.
                Err(message) => {
                    json!({"allowed": false, "status": {"message": format!("the webhook rejected the review: {message}")}})
                }
            }
        } else {
            // Values that did not decode: the API server's schema check
            // refuses the object before any webhook sees it (the webhook
            // would deny it the same way, but the object as decoded has
            // lost those values, so it is not what would be sent).
            json!({"allowed": false, "status": {"message": admission::invalid_message(&object.problems(Judged::Whole))}})
        };
        let allowed = response["allowed"] == true;
        if allowed {
            index.upsert(key.clone(), object.spec.hosts.clone());
            objects.insert(key, json);
        }
        reviews.push(Review {
            file: display(&file),
            document,
            namespace: object.namespace,
            name: object.name,
            operation,
            allowed,
            message: (!allowed).then(|| response["status"]["message"].as_str().unwrap_or("denied").to_owned()),
            warnings: response["warnings"]
                .as_array()
                .map(|w| w.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default(),
        });
    }
    AdmitReport {
        admitted: reviews.iter().all(|r| r.allowed),
        reviews,
        errors,
        skipped,
    }
}

/// The object as the API server would store it and send it for review.
fn as_stored(object: &VirtualHostObject) -> Value {
    json!({
        "apiVersion": aether_api::config::v1::API_VERSION,
        "kind": aether_api::config::v1::KIND,
        "metadata": {"name": object.name, "namespace": object.namespace},
        "spec": object.spec,
    })
}

impl CommandReport for AdmitReport {
    fn errors(&self) -> &[ErrorReport] {
        &self.errors
    }

    fn skipped(&self) -> &[SkippedReport] {
        &self.skipped
    }

    fn passed(&self) -> bool {
        self.reviews.iter().all(|r| r.allowed)
    }

    /// One line per review (and per warning), then a summary; nothing when
    /// inputs could not be read (nothing was reviewed):
    ///
    /// ```text
    /// FILE: document N: NAMESPACE/NAME: CREATE admitted
    /// FILE: document N: NAMESPACE/NAME: CREATE admitted with a warning: WARNING
    /// FILE: document N: NAMESPACE/NAME: UPDATE denied: MESSAGE
    /// ```
    fn write_findings(&self, out: &mut dyn Write) -> io::Result<()> {
        if !self.errors.is_empty() {
            return Ok(());
        }
        for r in &self.reviews {
            let at = format!(
                "{}: document {}: {}/{}: {}",
                r.file, r.document, r.namespace, r.name, r.operation
            );
            match (&r.message, r.warnings.as_slice()) {
                (Some(message), _) => writeln!(out, "{at} denied: {message}")?,
                (None, []) => writeln!(out, "{at} admitted")?,
                (None, warnings) => {
                    for warning in warnings {
                        writeln!(out, "{at} admitted with a warning: {warning}")?;
                    }
                }
            }
        }
        let denied = self.reviews.iter().filter(|r| !r.allowed).count();
        writeln!(
            out,
            "{} object(s): {} admitted, {} denied",
            self.reviews.len(),
            self.reviews.len() - denied,
            denied
        )
    }
}
