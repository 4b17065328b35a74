//! Lists longer than the schema's `maxItems`, found and cut before a reader
//! decodes them: the typed decode of a list costs its items' size
//! (`HttpRoute` is 528 bytes), so 1.2 million empty routes, 3.5 MiB of
//! JSON, cost 630 MB decoded. A list of more than four times its
//! `maxItems` is cut to them: a spec then decodes to at most four times its
//! schema's items, and the object is invalid all the same
//! (`repeated.max_items`). A list within is read whole, every rule on it
//! (`repeated.unique`) judged as ever.

use std::fmt::Write as _;

use serde_json::Value;

use super::schema::{self, Node};

/// A list with more than four times its schema's `maxItems`, cut to them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LongList {
    /// Where, in the Kubernetes form: `spec.routes`.
    pub path: String,
    /// The schema's `maxItems`.
    pub max: usize,
    /// How many items the list has.
    pub found: usize,
}

/// When `value` (the object's `property`, `spec` or `status`) holds a list
/// of more than four times its `maxItems` (in the items kept of the lists
/// around it): a copy with each such list cut to its first `maxItems`
/// items, and the lists cut. `None` when there is none, the usual case, with no copy. Linear in
/// `value`; recursive to its depth, which readers bound first (64).
pub fn cut_long_lists(value: &Value, property: &str) -> Option<(Value, Vec<LongList>)> {
    let schema = schema::of_property(property);
    let mut long = Vec::new();
    find(value, schema, &mut property.to_owned(), &mut long);
    (!long.is_empty()).then(|| (copy(value, schema), long))
}

fn find(value: &Value, schema: &Node, path: &mut String, long: &mut Vec<LongList>) {
    match value {
        Value::Array(items) => {
            let kept = kept(items.len(), schema);
            if kept < items.len() {
                long.push(LongList {
                    path: path.clone(),
                    max: kept,
                    found: items.len(),
                });
            }
            let Some(item) = &schema.items else { return };
            for (index, value) in items.iter().take(kept).enumerate() {
                let len = path.len();
                let _ = write!(path, "[{index}]");
                find(value, item, path, long);
                path.truncate(len);
            }
        }
        Value::Object(fields) => {
            let Some(properties) = &schema.properties else { return };
            for (name, value) in fields {
                let Some(node) = properties.get(name) else { continue };
                let len = path.len();
                path.push('.');
                path.push_str(name);
                find(value, node, path, long);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// How many of a list's `len` items are read.
fn kept(len: usize, schema: &Node) -> usize {
    match schema.max_items {
        Some(max) if len > schema.read_whole_up_to() => max,
        _ => len,
    }
}

fn copy(value: &Value, schema: &Node) -> Value {
    match (value, &schema.properties) {
        (Value::Array(items), _) => Value::Array(
            items
                .iter()
                .take(kept(items.len(), schema))
                .map(|item| match &schema.items {
                    Some(node) => copy(item, node),
                    None => item.clone(),
                })
                .collect(),
        ),
        (Value::Object(fields), Some(properties)) => Value::Object(
            fields
                .iter()
                .map(|(name, value)| {
                    let value = match properties.get(name) {
                        Some(node) => copy(value, node),
                        None => value.clone(),
                    };
                    (name.clone(), value)
                })
                .collect(),
        ),
        (other, _) => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lists_above_four_times_their_max_items_are_cut_and_named() {
        let route = json!({"match": {"prefix": "/", "methods": vec!["GET"; 37]}, "backend": {"service": "web"}});
        let spec = json!({"hosts": vec!["a.example.com"; 65], "routes": vec![route.clone(); 513], "x": [1, 2]});
        let (cut, long) = cut_long_lists(&spec, "spec").unwrap();
        let found: Vec<_> = long.iter().map(|l| (l.path.as_str(), l.max, l.found)).collect();
        assert_eq!(found[..2], [("spec.hosts", 16, 65), ("spec.routes", 128, 513)]);
        // Each route kept has its methods cut too, and no other route is looked at.
        assert_eq!(long.len(), 2 + 128);
        assert_eq!(found[2], ("spec.routes[0].match.methods", 9, 37));
        assert_eq!(cut["hosts"].as_array().unwrap().len(), 16);
        assert_eq!(cut["routes"].as_array().unwrap().len(), 128);
        assert_eq!(cut["routes"][127]["match"]["methods"].as_array().unwrap().len(), 9);
        // What the schema does not know is copied as it is.
        assert_eq!(cut["x"], json!([1, 2]));
        // Within four times: read whole, duplicates and all.
        let within = json!({"match": {"prefix": "/", "methods": vec!["GET"; 36]}, "backend": {"service": "web"}});
        assert_eq!(cut_long_lists(&json!({"routes": vec![within; 512]}), "spec"), None);
    }
}
