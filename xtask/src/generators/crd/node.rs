//! The schema node: a JSON/YAML value whose maps keep their insertion order,
//! so the files are written in a fixed, readable key order, and the ordered
//! object the mappers build it with.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// A JSON/YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl From<&str> for Node {
    fn from(value: &str) -> Self {
        Node::Str(value.to_owned())
    }
}

impl From<String> for Node {
    fn from(value: String) -> Self {
        Node::Str(value)
    }
}

impl From<bool> for Node {
    fn from(value: bool) -> Self {
        Node::Bool(value)
    }
}

impl From<Obj> for Node {
    fn from(value: Obj) -> Self {
        Node::Map(value.0)
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Bool(b) => serializer.serialize_bool(*b),
            Node::Int(n) => serializer.serialize_i64(*n),
            Node::Float(x) => serializer.serialize_f64(*x),
            Node::Str(s) => serializer.serialize_str(s),
            Node::List(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Map(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

/// An ordered object under construction.
#[derive(Debug, Clone, Default)]
pub struct Obj(Vec<(String, Node)>);

impl Obj {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key`, replacing its value in place if it is there.
    pub fn set(&mut self, key: &str, value: impl Into<Node>) {
        let value = value.into();
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    /// Sets `key` right after `anchor` (or first), for a readable order.
    pub fn insert_after(&mut self, anchor: &str, key: &str, value: impl Into<Node>) {
        self.remove(key);
        let at = self.0.iter().position(|(k, _)| k == anchor).map_or(0, |i| i + 1);
        self.0.insert(at, (key.to_owned(), value.into()));
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn into_entries(self) -> Vec<(String, Node)> {
        self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Moves every entry but those named in `keep` into a new object.
    pub fn split_off_except(&mut self, keep: &[&str]) -> Obj {
        let (kept, moved) = std::mem::take(&mut self.0)
            .into_iter()
            .partition(|(k, _)| keep.contains(&k.as_str()));
        self.0 = kept;
        Obj(moved)
    }

    pub fn remove(&mut self, key: &str) {
        self.0.retain(|(k, _)| k != key);
    }

    pub fn push_validation(&mut self, rule: Node) {
        match self.0.iter_mut().find(|(k, _)| k == "x-kubernetes-validations") {
            Some((_, Node::List(rules))) => rules.push(rule),
            _ => self
                .0
                .push(("x-kubernetes-validations".to_owned(), Node::List(vec![rule]))),
        }
    }
}
