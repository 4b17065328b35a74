//! One controller pass at scale, among N objects: the projector's snapshot
//! and [`plan`] (render the files that may have changed, compare them with
//! what was written, derive the statuses of the objects the projection
//! touched, as local mode does, and compare them with the stored ones).
//!
//! - `pass_after_route_change`: one object's routes changed, so
//!   `routes.json` is rendered again (Envoy's JSON of every route);
//! - `pass_without_route_change`: the pass a watch event that changes
//!   nothing at the edge causes (the echo of a status write, a label
//!   change): `routes.json` is known current and not rendered;
//! - `pass_after_route_change_xds_only`: the same with `--xds-only`
//!   (Envoy's files left out, as the Deployment runs): nothing is
//!   rendered as JSON;
//! - `publish_after_route_change`: what an Envoy over gRPC waits for, the
//!   pass up to its xDS publish (the pass publishes before it renders files
//!   or statuses): the change, the snapshot, the new version handed to the
//!   streams.
//!
//! Both passes publish to an xDS server too, as a controller with
//! `--xds-addr` does.
//!
//! ```text
//! cargo bench -p aether-controller --bench pass
//! AETHER_PASS_SIZES=50000 cargo bench -p aether-controller --bench pass -- --profile-time 20
//! ```
//!
//! `AETHER_PASS_SIZES` (comma-separated) picks the fleet sizes: a criterion
//! filter skips the measurement but not the steady state each size builds.
//! `AETHER_PASS_PLOT=FILE` draws the medians against the sizes into the SVG
//! file `FILE` at the end (`docs/pass-scale.svg` is such a drawing).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use aether_controller::outputs::plan;
use aether_controller::{Files, Observed, Written, outputs, xds};
use aether_projection::{ObjectKey, ProjectionConfig, Projector};
use aether_testing::fleet;
use criterion::{Criterion, criterion_group};
use jiff::Timestamp;

/// A projector over `n` objects and what a steady state has written and
/// stored for it.
fn steady_state(
    n: usize,
    now: Timestamp,
    envoy_files: bool,
) -> (Projector, BTreeMap<ObjectKey, Observed>, Written, tempfile::TempDir) {
    let mut projector = Projector::from_objects(fleet::objects(n), ProjectionConfig::default()).unwrap();
    // The first plan derives every status.
    projector.take_touched();
    let snapshot = projector.snapshot();
    let mut observed: BTreeMap<ObjectKey, Observed> = fleet::objects(n)
        .iter()
        .map(|object| {
            (
                object.key(),
                Observed {
                    generation: 1,
                    status: None,
                    programmed: None,
                },
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut written = if envoy_files {
        Written::default()
    } else {
        Written::default().without_envoy_files()
    };
    let first = plan(&snapshot, &no_tls(), &observed, &written, now).unwrap();
    let files: Files = first.writes.into_iter().collect();
    outputs::write_changed(
        dir.path(),
        &files,
        &[],
        &first.chain_files,
        &mut written,
        snapshot.routes(),
    )
    .unwrap();
    for patch in first.patches {
        observed.get_mut(&patch.key).unwrap().status = Some(patch.status);
    }
    (projector, observed, written, dir)
}

fn pass(c: &mut Criterion) {
    let now = Timestamp::from_second(1_800_000_000).unwrap();
    for (group_name, changes_routes, envoy_files) in [
        ("pass_after_route_change", true, true),
        ("pass_without_route_change", false, true),
        ("pass_after_route_change_xds_only", true, false),
    ] {
        let mut group = c.benchmark_group(group_name);
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(5));
        for n in sizes() {
            let (mut projector, observed, written, _dir) = steady_state(n, now, envoy_files);
            let (publisher, _service) = xds::channel("aether-edge", Default::default());
            let mut version = 1;
            group.bench_function(format!("{n}"), |b| {
                b.iter(|| {
                    if changes_routes {
                        version += 1;
                    }
                    projector.upsert(fleet::object(n / 2, version));
                    let snapshot = projector.snapshot();
                    publisher.publish(&snapshot);
                    let touched: BTreeMap<ObjectKey, Observed> = projector
                        .take_touched()
                        .into_iter()
                        .map(|key| {
                            let observed = observed[&key].clone();
                            (key, observed)
                        })
                        .collect();
                    let plan = plan(&snapshot, &no_tls(), &touched, &written, now).unwrap();
                    assert_eq!(plan.writes.len(), usize::from(changes_routes && envoy_files));
                    assert_eq!(plan.patches, []);
                    black_box(plan)
                })
            });
        }
        group.finish();
    }
}

/// The pass up to the xDS publish, after a route change.
fn publish(c: &mut Criterion) {
    let now = Timestamp::from_second(1_800_000_000).unwrap();
    let mut group = c.benchmark_group("publish_after_route_change");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for n in sizes() {
        let (mut projector, _observed, _written, _dir) = steady_state(n, now, false);
        let (publisher, _service) = xds::channel("aether-edge", Default::default());
        publisher.publish(&projector.snapshot());
        let mut version = 1;
        group.bench_function(format!("{n}"), |b| {
            b.iter(|| {
                version += 1;
                projector.upsert(fleet::object(n / 2, version));
                let snapshot = projector.snapshot();
                publisher.publish(&snapshot);
                black_box(publisher.current())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, pass, publish);

#[path = "pass/plot.rs"]
mod plot;

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    if let Some(out) = std::env::var_os("AETHER_PASS_PLOT") {
        let lines = [
            plot::Line {
                group: "pass_after_route_change",
                label: "whole pass after a route change (routes.json rendered)",
            },
            plot::Line {
                group: "pass_after_route_change_xds_only",
                label: "the same with --xds-only",
            },
            plot::Line {
                group: "publish_after_route_change",
                label: "until the xDS publish (what Envoy over gRPC waits for)",
            },
            plot::Line {
                group: "pass_without_route_change",
                label: "whole pass without a route change",
            },
        ];
        let out = std::path::PathBuf::from(out);
        match plot::draw(&out, &sizes(), &lines) {
            Ok(()) => println!("drew {}", out.display()),
            Err(err) => eprintln!("drawing {}: {err}", out.display()),
        }
    }
}

/// The fleet sizes measured: `AETHER_PASS_SIZES`, or 1k to 100k.
fn sizes() -> Vec<usize> {
    match std::env::var("AETHER_PASS_SIZES") {
        Ok(sizes) => sizes
            .split(',')
            .map(|n| n.trim().parse().expect("AETHER_PASS_SIZES: comma-separated numbers"))
            .collect(),
        Err(_) => vec![1_000, 10_000, 50_000, 100_000],
    }
}

/// No secret read: every referenced one is refused.
fn no_tls() -> aether_controller::EdgeTls {
    aether_controller::EdgeTls {
        settings: aether_controller::TlsSettings::new("/var/run/aether"),
        resolutions: Default::default(),
    }
}
