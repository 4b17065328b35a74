//! An object's metadata names as the API server requires them: the
//! namespace an RFC 1123 label, the name an RFC 1123 subdomain. One check
//! for `aetherctl validate` and the edge, which leaves such an object out.

use super::Violation;

/// The rule of a namespace that is not an RFC 1123 label.
pub const RULE_DNS1123_LABEL: &str = "dns1123_label";
/// The rule of a name that is not an RFC 1123 subdomain.
pub const RULE_DNS1123_SUBDOMAIN: &str = "dns1123_subdomain";

/// What is wrong with the names `namespace/name`, namespace first; empty
/// when both are well-formed.
pub fn name_problems(namespace: &str, name: &str) -> Vec<Violation> {
    let mut problems = Vec::new();
    if !is_dns1123_label(namespace) {
        problems.push(Violation::new(
            "metadata.namespace",
            RULE_DNS1123_LABEL,
            "must be 1 to 63 characters of a-z, 0-9 and -, starting and ending with a letter or digit",
        ));
    }
    if !is_dns1123_subdomain(name) {
        problems.push(Violation::new(
            "metadata.name",
            RULE_DNS1123_SUBDOMAIN,
            "must be at most 253 characters of dot-separated parts of a-z, 0-9 and -, each starting and ending \
             with a letter or digit",
        ));
    }
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
        for bad in ["", "-a", "a-", "A", "a.b", "a_b", "x\"y", &"a".repeat(64)] {
            assert!(!is_dns1123_label(bad), "{bad}");
        }
        for good in ["api", "api.v2", "a-1.b-2", &"a".repeat(253)] {
            assert!(is_dns1123_subdomain(good), "{good}");
        }
        for bad in ["", "api.", ".api", "a..b", "Api", "a/b", "x\"y", &"a".repeat(254)] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
        let rules: Vec<_> = name_problems("x\"y", "x\"y")
            .into_iter()
            .map(|p| (p.field_path, p.rule_id))
            .collect();
        assert_eq!(
            rules,
            [
                ("metadata.namespace".to_owned(), RULE_DNS1123_LABEL),
                ("metadata.name".to_owned(), RULE_DNS1123_SUBDOMAIN)
            ]
        );
        assert!(name_problems("default", "api.v2").is_empty());
    }
}
