//! Validations per second: the proposal's manifest, the largest spec the
//! rules allow (16 hosts, 128 routes), and a spec with every phase 2 field. Throughput is in elements, one element
//! being one `validate()` call, so criterion prints validations per second.

use aether_testing::specs;

use aether_api::validate::Validate;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use specs::{phase2, proposal, worst_case};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("validate");
    group.throughput(Throughput::Elements(1));
    for (name, spec) in [
        ("proposal", proposal()),
        ("16_hosts_128_routes", worst_case()),
        ("phase2_every_field", phase2()),
    ] {
        assert_eq!(
            spec.validate(),
            Ok(()),
            "the {name} spec must be valid, or the bench measures error paths"
        );
        group.bench_function(name, |b| b.iter(|| black_box(&spec).validate().is_ok()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
