//! Which objects may be projected: those whose metadata names are
//! well-formed and whose spec passes every rule of the proto.

use std::borrow::Cow;

use aether_api::validate::Validate;
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

/// Every problem of `object`, metadata names first; empty when it may be
/// projected.
pub(crate) fn problems(object: &VirtualHostObject) -> Vec<Problem> {
    let mut problems = Vec::new();
    if !is_dns1123_label(&object.namespace) {
        problems.push(Problem {
            field_path: "metadata.namespace".into(),
            rule_id: "dns1123_label",
            message: Cow::Borrowed(
                "must be 1 to 63 characters of a-z, 0-9 and -, starting and ending with a letter or digit",
            ),
        });
    }
    if !is_dns1123_subdomain(&object.name) {
        problems.push(Problem {
            field_path: "metadata.name".into(),
            rule_id: "dns1123_subdomain",
            message: Cow::Borrowed(
                "must be at most 253 characters of dot-separated parts of a-z, 0-9 and -, \
                 each starting and ending with a letter or digit",
            ),
        });
    }
    // The values that did not decode, then the rules the rest breaks (those
    // about a value that did not decode say nothing of the manifest).
    let spec = with_violations(object.read_problems.clone(), violations_of(object.spec.validate()));
    problems.extend(spec.into_iter().map(|problem| Problem {
        field_path: problem.path,
        rule_id: problem.rule,
        message: Cow::Owned(problem.message),
    }));
    problems
}

/// A Kubernetes namespace name (RFC 1123 label).
fn is_dns1123_label(value: &str) -> bool {
    value.len() <= 63 && is_label(value)
}

/// A Kubernetes object name (RFC 1123 subdomain).
fn is_dns1123_subdomain(value: &str) -> bool {
    value.len() <= 253 && value.split('.').all(is_label)
}

fn is_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    let inner_ok = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-';
    let edge_ok = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    matches!((bytes.first(), bytes.last()), (Some(first), Some(last)) if edge_ok(first) && edge_ok(last))
        && bytes.iter().all(inner_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_names_follow_kubernetes_rules() {
        for good in ["a", "default", "team-1", &"a".repeat(63)] {
            assert!(is_dns1123_label(good), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a.b", "a_b", &"a".repeat(64)] {
            assert!(!is_dns1123_label(bad), "{bad}");
        }
        for good in ["api", "api.v2", "a-1.b-2"] {
            assert!(is_dns1123_subdomain(good), "{good}");
        }
        for bad in ["", "api.", ".api", "a..b", "Api", "a/b", &"a".repeat(254)] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }
}
