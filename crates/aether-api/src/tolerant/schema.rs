//! The object's schema as the walk of [`super`] reads it: the CRD's own
//! (`generated/crds/virtualhost.schema.json`), each node's `properties`,
//! `items`, `enum` and `maxItems` looked up once, at first use, rather than at every
//! value of every object read (most of a walk's time).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::Value;

/// A schema node, as the walks read it.
pub(super) struct Node {
    /// `None`: a mapping not looked into (its schema lists no properties).
    pub(super) properties: Option<BTreeMap<String, Node>>,
    pub(super) items: Option<Box<Node>>,
    /// The values an `enum` lists.
    pub(super) listed: Option<Vec<Value>>,
    /// A list's `maxItems`.
    pub(super) max_items: Option<usize>,
}

impl Node {
    fn of(schema: &Value) -> Node {
        Node {
            properties: schema.get("properties").and_then(Value::as_object).map(|properties| {
                properties
                    .iter()
                    .map(|(name, node)| (name.clone(), Node::of(node)))
                    .collect()
            }),
            items: schema.get("items").map(|item| Box::new(Node::of(item))),
            listed: schema.get("enum").and_then(Value::as_array).cloned(),
            max_items: schema
                .get("maxItems")
                .and_then(Value::as_u64)
                .map(|max| usize::try_from(max).unwrap_or(usize::MAX)),
        }
    }

    /// The most items a list of this node is read with whole: four times
    /// its `maxItems`. A list with more is cut to its `maxItems` before it
    /// is decoded (`lists.rs`); one within is read whole, so that every
    /// rule on it (`repeated.unique`) is judged as ever.
    pub(super) fn read_whole_up_to(&self) -> usize {
        self.max_items.map_or(usize::MAX, |max| max.saturating_mul(4))
    }

    /// The node of property `name`; a node that knows nothing (takes
    /// anything) where there is none.
    pub(super) fn property(&self, name: &str) -> &Node {
        static NOTHING: Node = Node {
            properties: None,
            items: None,
            listed: None,
            max_items: None,
        };
        self.properties
            .as_ref()
            .and_then(|properties| properties.get(name))
            .unwrap_or(&NOTHING)
    }
}

/// The CRD's schema of the object (its `openAPIV3Schema`), parsed once:
/// what this walk and the wording of an object's problems read.
pub(crate) fn object_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        // Generated and checked in: an error here is a broken build, not input.
        serde_json::from_str(include_str!("../../generated/crds/virtualhost.schema.json"))
            .expect("the generated schema is JSON")
    })
}

/// The schema of the object's `property` (`spec` or `status`).
pub(super) fn of_property(property: &str) -> &'static Node {
    static ROOT: OnceLock<Node> = OnceLock::new();
    ROOT.get_or_init(|| Node::of(object_schema())).property(property)
}
