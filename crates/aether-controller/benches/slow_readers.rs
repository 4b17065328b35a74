//! Memory of the controller binary's xDS server with streams that never
//! read: its resident set (`/proc/PID/status`) before the slow streams,
//! once they have asked, after each new version, at its peak, and after
//! they close. Figures, not timings: the numbers are in docs/benchmarks.md.
//!
//! `cargo bench -p aether-controller --bench slow_readers`; environment:
//! `BENCH_OBJECTS` (5000, 10 routes each), `BENCH_STREAMS` (128, 16 per
//! connection), `BENCH_VERSIONS` (5), `BENCH_BINARY` (another build of the
//! controller to measure, e.g. one from before a change; default the one
//! cargo built).

#[path = "../tests/integration/common/serving.rs"]
mod serving;

use std::time::Duration;

use envoy_types::pb::envoy::service::route::v3::route_discovery_service_client::RouteDiscoveryServiceClient;
use serving::{Controller, domains, manifest, request, wait_until_served};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn mb(bytes: u64) -> String {
    format!("{:.0} MB", bytes as f64 / 1e6)
}

fn main() {
    // `cargo bench` passes `--bench`; there is nothing to filter.
    let objects = setting("BENCH_OBJECTS", 5000);
    let streams = setting("BENCH_STREAMS", 128);
    let versions = setting("BENCH_VERSIONS", 5);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
        .block_on(run(objects, streams, versions));
}

async fn run(objects: usize, streams: usize, versions: usize) {
    let text: String = (0..objects).map(|i| manifest(&format!("o{i}"), 10)).collect();
    let controller = match std::env::var_os("BENCH_BINARY") {
        Some(binary) => Controller::start_binary(binary.as_ref(), &[("objects.yaml", text)], None),
        None => Controller::start(&[("objects.yaml", text)], None),
    };
    let first = wait_until_served(controller.addr).await;
    let size = first.resources[0].value.len() as u64;
    let rss = || controller.memory_kb("VmRSS") * 1024;
    let settle = || tokio::time::sleep(Duration::from_secs(2));
    settle().await;
    println!("objects: {objects}; configuration: {size} bytes; slow streams: {streams}; new versions: {versions}");
    println!("| moment | resident |\n|---|---:|");
    println!("| served, no slow stream | {} |", mb(rss()));

    // Streams that ask and never read, 64 KiB receive windows.
    let mut slow = Vec::new();
    let mut channel = None;
    for stream in 0..streams {
        if stream % 16 == 0 {
            channel = Some(
                tonic::transport::Endpoint::from_shared(format!("http://{}", controller.addr))
                    .unwrap()
                    .initial_stream_window_size(65_535)
                    .initial_connection_window_size(1 << 20)
                    .connect()
                    .await
                    .unwrap(),
            );
        }
        let mut client = RouteDiscoveryServiceClient::new(channel.clone().unwrap());
        let (requests, outbound) = mpsc::channel(1);
        requests.send(request("", "")).await.unwrap();
        let responses = client.stream_routes(ReceiverStream::new(outbound)).await.unwrap();
        slow.push((requests, responses));
    }
    settle().await;
    println!("| {streams} slow streams have asked | {} |", mb(rss()));

    let mut reader = serving::open(controller.addr).await.unwrap();
    reader.next().await.unwrap();
    for version in 0..versions {
        let name = format!("extra{version}");
        controller.write("extra.yaml", &manifest(&name, 1));
        let host = format!("{name}.example.com");
        tokio::time::timeout(Duration::from_secs(120), async {
            while !domains(&reader.next().await.unwrap()).contains(&host) {}
        })
        .await
        .expect("each version is served within 120 s");
        settle().await;
        println!("| after new version {} | {} |", version + 1, mb(rss()));
    }
    println!("| peak (VmHWM) | {} |", mb(controller.memory_kb("VmHWM") * 1024));
    drop(slow);
    settle().await;
    settle().await;
    println!("| slow streams closed | {} |", mb(rss()));
}
