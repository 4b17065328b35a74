//! Label and field selectors, equality-based only (`a=b`, `a==b`, `a!=b`,
//! joined by commas): what the controller and its tests send. Set-based
//! label selectors (`in`, `notin`, `exists`) are refused with a 400.

use serde_json::Value;

use super::resource::{ApiError, Resource};

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    equal: bool,
    value: String,
}

impl Requirement {
    fn holds(&self, actual: Option<&str>) -> bool {
        // `!=` also matches an absent key, as in Kubernetes.
        (actual == Some(self.value.as_str())) == self.equal
    }
}

/// A `labelSelector` and a `fieldSelector` together; empty selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Selector {
    labels: Vec<Requirement>,
    fields: Vec<Requirement>,
}

impl Selector {
    /// Parses both selectors, checking the fields against what `resource` allows.
    pub(crate) fn parse(resource: Resource, labels: Option<&str>, fields: Option<&str>) -> Result<Self, ApiError> {
        let labels = parse(labels.unwrap_or_default(), "label")?;
        let fields = parse(fields.unwrap_or_default(), "field")?;
        for field in &fields {
            let allowed = ["metadata.name", "metadata.namespace"].contains(&field.key.as_str())
                || resource.selectable_fields().contains(&field.key.as_str());
            if !allowed {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {}",
                    field.key
                )));
            }
        }
        Ok(Self { labels, fields })
    }

    /// Whether `object` is selected.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        self.labels
            .iter()
            .all(|req| req.holds(labels.get(&req.key).and_then(Value::as_str)))
            && self.fields.iter().all(|req| {
                let actual = req.key.split('.').try_fold(object, |value, key| value.get(key));
                // An absent field selects as the empty string, as in Kubernetes.
                req.holds(Some(actual.and_then(Value::as_str).unwrap_or_default()))
            })
    }
}

fn parse(text: &str, what: &str) -> Result<Vec<Requirement>, ApiError> {
    if text.contains(['(', ')', ' ']) {
        return Err(ApiError::bad_request(format!(
            "unsupported {what} selector {text:?}: only equality (a=b, a==b, a!=b) is served"
        )));
    }
    let mut requirements = Vec::new();
    for term in text.split(',').filter(|term| !term.is_empty()) {
        let (key, equal, value) = if let Some((key, value)) = term.split_once("!=") {
            (key, false, value)
        } else if let Some((key, value)) = term.split_once("==") {
            (key, true, value)
        } else if let Some((key, value)) = term.split_once('=') {
            (key, true, value)
        } else {
            return Err(ApiError::bad_request(format!(
                "unsupported {what} selector term {term:?}: only equality (a=b, a==b, a!=b) is served"
            )));
        };
        if key.is_empty() || value.contains(['=', '!']) {
            return Err(ApiError::bad_request(format!("invalid {what} selector term {term:?}")));
        }
        requirements.push(Requirement {
            key: key.to_owned(),
            equal,
            value: value.to_owned(),
        });
    }
    Ok(requirements)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equality_selects_and_set_based_is_refused() {
        let object =
            json!({"metadata": {"name": "a", "labels": {"app": "edge", "tier": "x"}}, "type": "kubernetes.io/tls"});
        let select = |labels, fields| {
            Selector::parse(Resource::Secrets, labels, fields)
                .unwrap()
                .matches(&object)
        };
        assert!(select(Some("app=edge,tier==x"), Some("type=kubernetes.io/tls")));
        assert!(select(Some("other!=y"), Some("metadata.name=a")));
        assert!(!select(Some("app=edge,tier!=x"), None));
        assert!(!select(None, Some("type=Opaque")));
        for bad in ["app in (edge)", "app", "=x", "a=b=c"] {
            assert_eq!(
                Selector::parse(Resource::Secrets, Some(bad), None).unwrap_err().code,
                400,
                "{bad}"
            );
        }
        assert_eq!(
            Selector::parse(Resource::ConfigMaps, None, Some("type=x"))
                .unwrap_err()
                .code,
            400
        );
    }
}
