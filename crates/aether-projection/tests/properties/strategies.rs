//! The random objects: few hosts, paths and keys, so that conflicts are
//! common, with some values that break a rule; and changes to a set of them.

use std::collections::BTreeMap;

use aether_api::config::v1::{
    HeaderMatch, HttpRoute, QueryParamMatch, RouteBackend, RouteMatch, VirtualHostSpec, VirtualHostTls, header_match,
    query_param_match, route_match::Path,
};
use aether_projection::{ObjectKey, VirtualHostObject};
use jiff::Timestamp;
use proptest::prelude::*;
/// Few hosts, so that conflicts are common; one breaks the host rule.
const HOSTS: &[&str] = &[
    "a.example.com",
    "b.example.com",
    "*.example.com",
    "c.test",
    "Bad.example.com",
];
/// One path breaks the path rules; two are valid but not in Envoy's normal
/// form, which the projection writes them in.
const PATHS: &[&str] = &["/", "/a", "/a/b", "/x//y", "/%7Ea", "/a/%2E"];
/// Regular expressions: the last two are refused by the RE2 guard (too
/// large; a Unicode class), so their routes are left out.
const REGEXES: &[&str] = &["/a.*", "/u/[0-9]+", "v[12]", "[a-z]{200}", "\\pL"];

fn header_strategy() -> impl Strategy<Value = HeaderMatch> {
    (
        prop::sample::select(&["x-a", "x-b"][..]),
        0..4u8,
        prop::sample::select(REGEXES),
        any::<bool>(),
    )
        .prop_map(|(name, kind, regex, invert)| HeaderMatch {
            name: name.into(),
            value: Some(match kind {
                0 => header_match::Value::Exact("v1".into()),
                1 => header_match::Value::Prefix("v".into()),
                2 => header_match::Value::Regex(regex.into()),
                _ => header_match::Value::Present(true),
            }),
            invert,
        })
}

fn query_param_strategy() -> impl Strategy<Value = QueryParamMatch> {
    (
        prop::sample::select(&["q", "v"][..]),
        0..3u8,
        prop::sample::select(REGEXES),
    )
        .prop_map(|(name, kind, regex)| QueryParamMatch {
            name: name.into(),
            value: Some(match kind {
                0 => query_param_match::Value::Exact("1".into()),
                1 => query_param_match::Value::Regex(regex.into()),
                _ => query_param_match::Value::Present(true),
            }),
        })
}

fn route_strategy() -> impl Strategy<Value = HttpRoute> {
    (
        0..3u8,
        prop::sample::select(PATHS),
        prop::sample::select(REGEXES),
        prop::sample::subsequence(&["GET", "HEAD", "POST"][..], 0..=2),
        prop::collection::vec(header_strategy(), 0..3),
        prop::collection::vec(query_param_strategy(), 0..2),
        prop::sample::select(&["s1", "s2", "s3"][..]),
        prop::sample::select(&[0u32, 80, 8080][..]),
    )
        .prop_map(
            |(kind, path, regex, methods, headers, query_params, service, port)| HttpRoute {
                r#match: Some(RouteMatch {
                    path: Some(match kind {
                        0 => Path::Exact(path.into()),
                        1 => Path::Prefix(path.into()),
                        _ => Path::Regex(regex.into()),
                    }),
                    methods: methods.into_iter().map(str::to_owned).collect(),
                    headers,
                    query_params,
                }),
                backend: Some(RouteBackend {
                    service: service.into(),
                    port,
                }),
                ..Default::default()
            },
        )
}

fn spec_strategy() -> impl Strategy<Value = VirtualHostSpec> {
    (
        prop::sample::subsequence(HOSTS, 0..=3).prop_shuffle(),
        prop::collection::vec(route_strategy(), 0..4),
        prop::option::of((prop::sample::select(&["t1", "t2"][..]), 1..=2i32)),
        0..=2i32,
    )
        .prop_map(|(hosts, routes, tls, route_order)| VirtualHostSpec {
            hosts: hosts.into_iter().map(str::to_owned).collect(),
            routes,
            tls: tls.map(|(secret, provider)| VirtualHostTls {
                secret_name: secret.into(),
                provider,
            }),
            route_order,
        })
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
