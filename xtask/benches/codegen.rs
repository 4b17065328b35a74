//! Codegen wall time: everything `cargo xtask codegen` does but writing
//! (protoc twice, lowering, rules, every generator), in memory.
//!
//! `cargo bench -p xtask --bench codegen`

use criterion::{Criterion, criterion_group, criterion_main};

fn codegen(c: &mut Criterion) {
    let root = xtask::workspace_root();
    let mut group = c.benchmark_group("codegen");
    group.sample_size(20);
    group.bench_function("generate_all", |b| b.iter(|| xtask::codegen::generate(&root).unwrap()));
    group.finish();
}

criterion_group!(benches, codegen);
criterion_main!(benches);
