//! The review alone, without TLS or HTTP: `admission::review` on the load
//! benchmark's bodies against its 10k-object index, and its stages (read,
//! decide, encode). `cargo bench -p aether-webhook --bench review`.

use std::hint::black_box;

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
    group.bench_function("read", |b| b.iter(|| admission::read(black_box(&allowed)).unwrap()));
    // kube's types, which read what the borrowed reading gives up on.
    group.bench_function("parse_kube", |b| {
        b.iter(|| admission::parse(black_box(&allowed)).unwrap())
    });
    let request = admission::read(&allowed).unwrap();
    group.bench_function("decide", |b| b.iter(|| admission::decide(black_box(&request), &index)));
    let Some(admission::Spec::Text(spec_text)) = &request.object.as_ref().unwrap().spec else {
        panic!("the bodies are read borrowed");
    };
    let spec_text = spec_text.get();
    group.bench_function("decode_spec", |b| {
        b.iter(|| {
            aether_manifests::objects::decode_spec_json(black_box(spec_text), aether_manifests::Reading::Tolerant)
        })
    });
    group.bench_function("all_known", |b| {
        b.iter(|| aether_api::tolerant::all_known(black_box(spec_text), "spec"))
    });
    group.bench_function("decode_spec_typed", |b| {
        b.iter(|| serde_json::from_str::<aether_api::config::v1::VirtualHostSpec>(black_box(spec_text)).unwrap())
    });
    // The same spec read as a tree, as kube's types hand it over.
    let spec_tree: serde_json::Value = serde_json::from_str(spec_text).unwrap();
    group.bench_function("decode_spec_tree", |b| {
        b.iter(|| {
            aether_manifests::objects::decode_spec_reading(
                black_box(Some(&spec_tree)),
                aether_manifests::Reading::Tolerant,
            )
        })
    });
    let (spec, _, _) = aether_manifests::objects::decode_spec_json(spec_text, aether_manifests::Reading::Tolerant);
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
