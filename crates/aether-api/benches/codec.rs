//! Decode and encode of the proposal's manifest, in binary and in the
//! Kubernetes JSON form.
//!
//! `cargo bench -p aether-api --bench codec`

use aether_api::config::v1::VirtualHostSpec;
use criterion::{Criterion, criterion_group, criterion_main};
use prost::Message;
use std::hint::black_box;

fn proposal() -> VirtualHostSpec {
    let manifest: serde_json::Value =
        serde_saphyr::from_str(include_str!("../../../examples/proposal.yaml")).expect("the example parses");
    serde_json::from_value(manifest["spec"].clone()).expect("the example's spec decodes")
}

fn codec(c: &mut Criterion) {
    let spec = proposal();
    let binary = spec.encode_to_vec();
    let json = serde_json::to_vec(&spec).unwrap();

    let mut group = c.benchmark_group("proposal_manifest");
    group.bench_function("binary_encode", |b| b.iter(|| black_box(&spec).encode_to_vec()));
    group.bench_function("binary_decode", |b| {
        b.iter(|| VirtualHostSpec::decode(black_box(binary.as_slice())).unwrap())
    });
    group.bench_function("kubernetes_json_encode", |b| {
        b.iter(|| serde_json::to_vec(black_box(&spec)).unwrap())
    });
    group.bench_function("kubernetes_json_decode", |b| {
        b.iter(|| serde_json::from_slice::<VirtualHostSpec>(black_box(&json)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
