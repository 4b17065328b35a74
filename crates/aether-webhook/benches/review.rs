//! The review alone, without TLS or HTTP: `admission::review` on the load
//! benchmark's bodies against its 10k-object index, and its stages (read,
//! decide, encode). `cargo bench -p aether-webhook --bench review`.

use std::hint::black_box;

use aether_api::object::{Reading, VirtualHostObject};
use aether_webhook::admission;
use criterion::{Criterion, criterion_group, criterion_main};

mod common;

fn reviews(c: &mut Criterion) {
    let index = common::index();
    let [allowed, denied, warned] = common::mix(7);
    let mut group = c.benchmark_group("review");
    for (name, body) in [
        ("allowed", &allowed),
        ("denied_conflict", &denied),
        ("allowed_with_warning", &warned),
    ] {
        group.bench_function(name, |b| b.iter(|| admission::review(black_box(body), &index).unwrap()));
    }
    // The least any serde_json reading of the body costs (every value
    // checked and skipped), and the depth check run before it.
    group.bench_function("skip_body", |b| {
        b.iter(|| serde_json::from_slice::<serde::de::IgnoredAny>(black_box(&allowed)).unwrap())
    });
    group.bench_function("check_depth", |b| {
        b.iter(|| admission::check_depth(black_box(&allowed), admission::MAX_JSON_DEPTH).unwrap())
    });
    // kube's types, with the identity check before them.
    group.bench_function("parse", |b| b.iter(|| admission::parse(black_box(&allowed)).unwrap()));
    let request = admission::parse(&allowed).unwrap();
    group.bench_function("decide", |b| b.iter(|| admission::decide(black_box(&request), &index)));
    // The object as the handler reads it: its identity and the spec's JSON
    // tree as kube's types hand it over (copied, as the handler copies it),
    // decoded tolerantly.
    let spec_tree = &request.object.as_ref().unwrap().data["spec"];
    let read = |spec: &serde_json::Value| {
        let value = serde_json::json!({
            "apiVersion": aether_api::config::v1::API_VERSION,
            "kind": aether_api::config::v1::KIND,
            "metadata": {"namespace": "bench", "name": "new7"},
            "spec": spec.clone(),
        });
        VirtualHostObject::from_value(value, Reading::Tolerant).unwrap()
    };
    group.bench_function("decode_object", |b| b.iter(|| read(black_box(spec_tree))));
    let spec = std::sync::Arc::unwrap_or_clone(read(spec_tree).spec);
    group.bench_function("validate", |b| {
        b.iter(|| aether_api::validate::Validate::validate(black_box(&spec)))
    });
    group.bench_function("edge_problems", |b| {
        b.iter(|| aether_edge_limits::edge_problems(black_box(&spec)))
    });
    let key = aether_webhook::index::ObjectKey::new("bench", "new7");
    group.bench_function("index_check", |b| b.iter(|| index.check(black_box(&key), &spec.hosts)));
    let (response, _) = admission::decide(&request, &index);
    group.bench_function("encode", |b| {
        b.iter(|| serde_json::to_vec(&black_box(&response).clone().into_review()))
    });
    group.finish();
}

criterion_group!(benches, reviews);
criterion_main!(benches);
