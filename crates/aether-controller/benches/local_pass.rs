//! Local mode's pass after one manifest file changes, among N objects in
//! files of 100: reading the changed file, feeding the projector, the
//! xDS publication and, with Envoy's files left out (`--xds-only`), the
//! statuses. Every object names a TLS secret and every secret is given
//! (the edge bench's HTTPS fleet), plain HTTP redirecting to HTTPS. This is
//! the controller's share of the edge bench's edit → served in local mode.
//!
//! ```text
//! cargo bench -p aether-controller --bench local_pass
//! AETHER_LOCAL_SIZES=50000 cargo bench -p aether-controller --bench local_pass -- --profile-time 20
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aether_controller::local::{Local, Options};
use aether_controller::metrics::Metrics;
use aether_controller::{TlsSettings, xds};
use aether_manifests::{Limits, Reading};
use aether_projection::{PlainHttp, ProjectionConfig};
use aether_testing::fleet;
use aether_testing::pki::{Leaf, TestCa, write_secret};
use criterion::{Criterion, criterion_group};

/// Objects per manifest file, as in the edge bench.
const PER_FILE: usize = 100;

fn local_pass(c: &mut Criterion) {
    let mut group = c.benchmark_group("local_pass_after_file_edit");
    group.sample_size(20).measurement_time(Duration::from_secs(10));
    for n in sizes() {
        let (manifests, out, secrets) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        for (f, chunk) in fleet::objects(n).chunks(PER_FILE).enumerate() {
            let text = fleet::manifest(chunk.iter().cloned());
            std::fs::write(manifests.path().join(format!("objects-{f:04}.yaml")), text).unwrap();
        }
        let ca = TestCa::new();
        let certificate = ca.issue(&Leaf::new(&["*.example.com", "*.example.net"], 0x0b01));
        for (namespace, name) in fleet::secrets(n) {
            write_secret(
                secrets.path(),
                &namespace,
                &name,
                &certificate.chain_pem,
                &certificate.key_pem,
            );
        }
        let (publisher, _service) = xds::channel("aether-edge", Arc::new(Metrics::new()));
        let mut local = Local::new(Options {
            manifests: manifests.path().to_owned(),
            out: out.path().to_owned(),
            poll: Duration::from_millis(20),
            quiet: Duration::ZERO,
            max_delay: Duration::ZERO,
            once: false,
            projection: ProjectionConfig {
                tls_hosts_over_plain_http: PlainHttp::Redirect,
                ..ProjectionConfig::default()
            },
            secrets: Some(secrets.path().to_owned()),
            tls: TlsSettings::new(out.path().to_string_lossy()),
        })
        .unwrap()
        // The file is whole when written: no settle time.
        .with_limits(Limits {
            settle: Duration::ZERO,
            reading: Reading::Tolerant,
            ..Limits::default()
        })
        .with_xds(publisher)
        .without_envoy_files();
        local.reconcile().unwrap();
        let edited = n / 2;
        let file = manifests.path().join(format!("objects-{:04}.yaml", edited / PER_FILE));
        let start = edited / PER_FILE * PER_FILE;
        let mut version = 1;
        group.bench_function(format!("{n}"), |b| {
            b.iter_custom(|iterations| {
                let mut spent = Duration::ZERO;
                for _ in 0..iterations {
                    version += 1;
                    let objects = (start..(start + PER_FILE).min(n))
                        .map(|i| fleet::object(i, if i == edited { version } else { 1 }));
                    // A whole new file, of another size than the last: the
                    // reader sees the change however coarse the clock.
                    std::fs::write(&file, fleet::manifest(objects) + &"#".repeat(version as usize % 7)).unwrap();
                    let clock = Instant::now();
                    black_box(local.reconcile().unwrap());
                    spent += clock.elapsed();
                }
                spent
            })
        });
    }
    group.finish();
}

criterion_group!(benches, local_pass);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}

/// The fleet sizes measured: `AETHER_LOCAL_SIZES`, or 1k and 10k.
fn sizes() -> Vec<usize> {
    match std::env::var("AETHER_LOCAL_SIZES") {
        Ok(sizes) => sizes
            .split(',')
            .map(|n| n.trim().parse().expect("AETHER_LOCAL_SIZES: comma-separated numbers"))
            .collect(),
        Err(_) => vec![1_000, 10_000],
    }
}
