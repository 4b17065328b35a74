//! Which objects may be projected: those whose metadata names are
//! well-formed and whose spec passes every rule of the proto.

use std::borrow::Cow;

use aether_api::validate::Validate;
use aether_manifests::names::name_problems;
use aether_manifests::objects::{violations_of, with_violations};
use serde::Serialize;

use crate::input::VirtualHostObject;

/// One broken rule of an object left out as invalid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// Where, in the Kubernetes form: `metadata.name`, `spec.routes[2].match.prefix`.
    pub field_path: String,
    /// The rule: a protovalidate rule id for the spec (`string.pattern`),
    /// `dns1123_label` or `dns1123_subdomain` for the metadata names, or
    /// one of `aether-manifests`' for a value that did not decode (`type`).
    pub rule_id: &'static str,
    /// What is wrong, for a person.
    pub message: Cow<'static, str>,
}

impl From<aether_api::validate::Violation> for Problem {
    fn from(violation: aether_api::validate::Violation) -> Self {
        Self {
            field_path: violation.field_path,
            rule_id: violation.rule_id,
            message: violation.message,
        }
    }
}

/// Every problem of `object`, metadata names first; empty when it may be
/// projected.
pub(crate) fn problems(object: &VirtualHostObject) -> Vec<Problem> {
    // The values that did not decode, then the rules the rest breaks (those
    // about a value that did not decode say nothing of the manifest).
    let spec = with_violations(object.read_problems.clone(), violations_of(object.spec.validate()));
    name_problems(&object.namespace, &object.name)
        .into_iter()
        .chain(spec)
        .map(|problem| Problem {
            field_path: problem.path,
            rule_id: problem.rule,
            message: Cow::Owned(problem.message),
        })
        .collect()
}
