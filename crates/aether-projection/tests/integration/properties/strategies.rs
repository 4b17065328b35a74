//! The random objects: specs drawn from the rules model, narrowed to few
//! hosts and secrets so that conflicts are common, some with values that
//! break a rule; and changes to a set of them.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use aether_api::config::v1::VirtualHostSpec;
use aether_projection::{ObjectKey, VirtualHostObject};
use aether_specgen::{Generator, Rng};
use jiff::Timestamp;
use proptest::prelude::*;
use serde_json::json;

/// Few hosts, so that conflicts are common (the rules' own invalid hosts
/// still come with doubtful draws).
const HOSTS: &[&str] = &["a.example.com", "b.example.com", "*.example.com", "c.test"];

/// Two secrets, so that objects share TLS chains.
const SECRETS: &[&str] = &["t1", "t2"];

/// Paths valid but not in Envoy's normal form, which the projection writes
/// them in: drawn besides the rules' own.
const PATHS: &[&str] = &["/x//y", "/%7Ea", "/a/%2E", "/a/b"];

/// The chance of a doubtful value at each place: most specs valid, some not.
const BADNESS: [f64; 3] = [0.0, 0.0, 0.02];

static GENERATOR: LazyLock<Arc<Generator>> = LazyLock::new(|| {
    let mut generator = aether_testing::drawn::generator();
    let values = |values: &[&str]| values.iter().map(|v| json!(v)).collect::<Vec<_>>();
    generator
        .narrow("hosts[]", &values(HOSTS))
        .expect("hosts is a list of strings");
    generator
        .narrow("tls.secretName", &values(SECRETS))
        .expect("tls.secretName is a string");
    for path in PATHS {
        generator.seed(&json!({"routes": [
            {"match": {"prefix": path}},
            {"match": {"exact": path}},
        ]}));
    }
    Arc::new(generator)
});

fn spec_strategy() -> impl Strategy<Value = VirtualHostSpec> {
    (any::<u64>(), prop::sample::select(&BADNESS[..]))
        .prop_map(|(seed, badness)| aether_testing::drawn::decode(&GENERATOR.spec(&mut Rng::new(seed), badness)))
}

/// Creation times on a coarse grid (so ties happen), or none.
fn created_strategy() -> impl Strategy<Value = Option<Timestamp>> {
    prop::option::of((0i64..3).prop_map(|day| Timestamp::from_second(1_767_225_600 + day * 86_400).unwrap()))
}

fn key_strategy() -> impl Strategy<Value = (String, String)> {
    (
        prop::sample::select(&["ns1", "ns2"][..]),
        prop::sample::select(&["v", "w", "x", "y", "z"][..]),
    )
        .prop_map(|(namespace, name)| (namespace.to_owned(), name.to_owned()))
}

fn object_strategy() -> impl Strategy<Value = VirtualHostObject> {
    (key_strategy(), created_strategy(), spec_strategy()).prop_map(|((namespace, name), creation_timestamp, spec)| {
        VirtualHostObject {
            namespace,
            name,
            creation_timestamp,
            spec: spec.into(),
            ..Default::default()
        }
    })
}

/// A set of objects (distinct keys).
pub fn objects_strategy() -> impl Strategy<Value = Vec<VirtualHostObject>> {
    prop::collection::vec(object_strategy(), 0..10).prop_map(|objects| {
        let by_key: BTreeMap<ObjectKey, VirtualHostObject> = objects.into_iter().map(|o| (o.key(), o)).collect();
        by_key.into_values().collect()
    })
}

#[derive(Debug, Clone)]
pub enum Change {
    Upsert(VirtualHostObject),
    Remove(String, String),
    /// The object of that key, if there is one, with the routes, TLS and
    /// route order of this spec: its hosts and creation time kept (what
    /// the projector replaces in place).
    Edit(String, String, VirtualHostSpec),
}

pub fn change_strategy() -> impl Strategy<Value = Change> {
    prop_oneof![
        3 => object_strategy().prop_map(Change::Upsert),
        1 => key_strategy().prop_map(|(namespace, name)| Change::Remove(namespace, name)),
        2 => (key_strategy(), spec_strategy()).prop_map(|((namespace, name), spec)| Change::Edit(namespace, name, spec)),
    ]
}
