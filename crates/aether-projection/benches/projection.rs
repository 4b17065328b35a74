//! Full builds at growing sizes, one-object updates in a large set, and
//! the snapshot after one object's routes changed.
//!
//! ```text
//! cargo bench -p aether-projection --bench projection
//! cargo bench -p aether-projection --bench projection -- snapshot_after_route_change
//! ```

use std::hint::black_box;
use std::time::Duration;

use aether_projection::{ObjectKey, ProjectionConfig, Projector, project};
use aether_testing::fleet;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

fn full_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("full_build");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in [100, 1_000, 10_000, 50_000, 100_000] {
        let objects = fleet::objects(n);
        // The input is borrowed: neither cloned nor dropped in the measure.
        group.bench_function(format!("{n}"), |b| {
            b.iter(|| black_box(project(&objects, &ProjectionConfig::default()).unwrap()))
        });
    }
    group.finish();
}

fn incremental(c: &mut Criterion) {
    const N: usize = 50_000;
    let mut group = c.benchmark_group("incremental_50k");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let mut projector = Projector::from_objects(fleet::objects(N), ProjectionConfig::default()).unwrap();
    // Object 12_349 claims its predecessor's host: a change that touches a
    // conflict. Alternating two versions makes every upsert a real change.
    for (label, i) in [("change", 12_345), ("change_contested", 12_349)] {
        let versions = [fleet::object(i, 2), fleet::object(i, 1)];
        let mut flip = 0;
        group.bench_function(label, |b| {
            b.iter_batched(
                || {
                    flip ^= 1;
                    versions[flip].clone()
                },
                |object| projector.upsert(object),
                BatchSize::SmallInput,
            )
        });
    }
    let object = fleet::object(20_000, 1);
    let key = ObjectKey::new(&object.namespace, &object.name);
    group.bench_function("delete_and_add", |b| {
        b.iter_batched(
            || object.clone(),
            |object| {
                projector.remove(&key);
                projector.upsert(object)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// One object's routes changed among N, then the snapshot: what a
/// controller pass starts with. (The dropped snapshot's cost is inside the
/// measure, as in a pass.)
fn snapshot_after_route_change(c: &mut Criterion) {
    let mut group = c.benchmark_group("snapshot_after_route_change");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in [1_000, 10_000, 50_000] {
        let mut projector = Projector::from_objects(fleet::objects(n), ProjectionConfig::default()).unwrap();
        let mut version = 1;
        group.bench_function(format!("{n}"), |b| {
            b.iter(|| {
                version += 1;
                projector.upsert(fleet::object(n / 2, version));
                black_box(projector.snapshot())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, full_build, incremental, snapshot_after_route_change);
criterion_main!(benches);
