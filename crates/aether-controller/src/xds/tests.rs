//! The RDS server against envoy-types' tonic client on 127.0.0.1.

use std::time::Duration;

use aether_manifests::parse_manifests;
use aether_projection::{ProjectionConfig, project};
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::envoy::service::route::v3::route_discovery_service_client::RouteDiscoveryServiceClient;
use envoy_types::pb::google::rpc::Status as RpcStatus;
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Streaming};

use super::*;

fn snapshot(hosts: &[&str]) -> Snapshot {
    let mut text = String::new();
    for (index, host) in hosts.iter().enumerate() {
        text.push_str(&format!(
            "---\napiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: vh{index}, namespace: shop}}\n\
             spec:\n  hosts: [\"{host}\"]\n  routes:\n  - match: {{prefix: /}}\n    backend: {{service: web}}\n"
        ));
    }
    project(parse_manifests(&text).unwrap(), &ProjectionConfig::default()).unwrap()
}

/// A server on 127.0.0.1 and one open stream to it.
struct Session {
    publisher: Publisher,
    metrics: Arc<Metrics>,
    addr: std::net::SocketAddr,
    requests: mpsc::Sender<DiscoveryRequest>,
    responses: Streaming<DiscoveryResponse>,
}

async fn start() -> Session {
    logs::init();
    let metrics = Arc::new(Metrics::new());
    let (publisher, service) = channel("aether-edge", metrics.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(service.serve(listener));
    let (requests, responses) = open(addr).await;
    Session {
        publisher,
        metrics,
        addr,
        requests,
        responses,
    }
}

async fn open(addr: std::net::SocketAddr) -> (mpsc::Sender<DiscoveryRequest>, Streaming<DiscoveryResponse>) {
    let mut client = RouteDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let (requests, outbound) = mpsc::channel(8);
    let responses = client
        .stream_routes(ReceiverStream::new(outbound))
        .await
        .unwrap()
        .into_inner();
    (requests, responses)
}

fn request(names: &[&str], version: &str, nonce: &str) -> DiscoveryRequest {
    DiscoveryRequest {
        type_url: ROUTE_CONFIGURATION_TYPE.to_owned(),
        resource_names: names.iter().map(|name| (*name).to_owned()).collect(),
        version_info: version.to_owned(),
        response_nonce: nonce.to_owned(),
        ..DiscoveryRequest::default()
    }
}

async fn next(responses: &mut Streaming<DiscoveryResponse>) -> DiscoveryResponse {
    tokio::time::timeout(Duration::from_secs(10), responses.message())
        .await
        .expect("a response within 10 s")
        .unwrap()
        .expect("the stream is open")
}

/// No response comes within 300 ms (what "nothing is sent" can mean on a stream).
async fn silent(responses: &mut Streaming<DiscoveryResponse>) {
    if let Ok(message) = tokio::time::timeout(Duration::from_millis(300), responses.message()).await {
        panic!("expected no response, got {message:?}");
    }
}

fn domains(response: &DiscoveryResponse) -> Vec<String> {
    assert_eq!(response.type_url, ROUTE_CONFIGURATION_TYPE);
    response
        .resources
        .iter()
        .flat_map(|any| {
            assert_eq!(any.type_url, ROUTE_CONFIGURATION_TYPE);
            let config = RouteConfiguration::decode(any.value.as_slice()).unwrap();
            assert_eq!(config.name, "aether-edge");
            config.virtual_hosts.into_iter().flat_map(|host| host.domains)
        })
        .collect()
}

#[tokio::test]
async fn a_stream_gets_the_configuration_then_each_new_version_once() {
    let mut session = start().await;
    // Asked before the first pass: the answer waits for it.
    session.requests.send(request(&["aether-edge"], "", "")).await.unwrap();
    silent(&mut session.responses).await;
    session.publisher.publish(&snapshot(&["a.example.com"]));
    let first = next(&mut session.responses).await;
    assert_eq!(domains(&first), ["a.example.com"]);
    assert_eq!(first.version_info.len(), 16);
    assert_eq!(first.nonce, "1");

    // ACK; publishing the same configuration again sends nothing.
    session
        .requests
        .send(request(&["aether-edge"], &first.version_info, "1"))
        .await
        .unwrap();
    session.publisher.publish(&snapshot(&["a.example.com"]));
    silent(&mut session.responses).await;

    // A new configuration is pushed without being asked for.
    session
        .publisher
        .publish(&snapshot(&["a.example.com", "b.example.com"]));
    let second = next(&mut session.responses).await;
    assert_eq!(domains(&second), ["a.example.com", "b.example.com"]);
    assert_ne!(second.version_info, first.version_info);
    assert_eq!(second.nonce, "2");
    assert_eq!(session.metrics.xds_responses.get(), 2);

    // Another stream starts from the current version; the version is the
    // configuration's digest, the same on any server.
    let (requests, mut responses) = open(session.addr).await;
    requests.send(request(&["aether-edge"], "", "")).await.unwrap();
    let other = next(&mut responses).await;
    assert_eq!(other.version_info, second.version_info);
    assert_eq!(other.resources, second.resources);
    assert_eq!(session.metrics.xds_streams.get(), 2);

    // Envoy goes away: the stream ends and is counted down.
    drop((requests, responses));
    tokio::time::timeout(Duration::from_secs(10), async {
        while session.metrics.xds_streams.get() != 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the closed stream is counted down within 10 s");
}

#[tokio::test]
async fn a_nack_is_counted_and_the_rejected_version_is_not_sent_again() {
    let mut session = start().await;
    session.publisher.publish(&snapshot(&["a.example.com"]));
    session.requests.send(request(&["aether-edge"], "", "")).await.unwrap();
    let first = next(&mut session.responses).await;
    let mut nack = request(&["aether-edge"], "", &first.nonce);
    nack.error_detail = Some(RpcStatus {
        code: 3,
        message: "route: unknown cluster".into(),
        details: Vec::new(),
    });
    session.requests.send(nack).await.unwrap();
    silent(&mut session.responses).await;
    assert_eq!(session.metrics.xds_nacks.get(), 1);

    // A request carrying an old nonce is stale: ignored, not counted.
    let mut stale = request(&["aether-edge"], "", "0");
    stale.error_detail = Some(RpcStatus::default());
    session.requests.send(stale).await.unwrap();
    silent(&mut session.responses).await;
    assert_eq!(session.metrics.xds_nacks.get(), 1);

    // The next configuration goes out.
    session.publisher.publish(&snapshot(&["c.example.com"]));
    assert_eq!(domains(&next(&mut session.responses).await), ["c.example.com"]);
}

#[tokio::test]
async fn names_filter_the_resources_and_a_foreign_type_ends_the_stream() {
    let mut session = start().await;
    session.publisher.publish(&snapshot(&["a.example.com"]));
    session.requests.send(request(&["other-routes"], "", "")).await.unwrap();
    let response = next(&mut session.responses).await;
    assert!(response.resources.is_empty(), "{response:?}");
    // Asking for ours (new names) answers at once.
    session
        .requests
        .send(request(&["aether-edge"], "", &response.nonce))
        .await
        .unwrap();
    assert_eq!(domains(&next(&mut session.responses).await), ["a.example.com"]);

    let mut cluster_request = request(&[], "", "");
    cluster_request.type_url = "type.googleapis.com/envoy.config.cluster.v3.Cluster".into();
    session.requests.send(cluster_request).await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), session.responses.message())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("envoy.config.cluster.v3.Cluster"),
        "{}",
        status.message()
    );
}

#[tokio::test]
async fn fetch_answers_with_the_current_version() {
    let session = start().await;
    let mut client = RouteDiscoveryServiceClient::connect(format!("http://{}", session.addr))
        .await
        .unwrap();
    let status = client.fetch_routes(request(&[], "", "")).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    session.publisher.publish(&snapshot(&["a.example.com"]));
    let fetched = client.fetch_routes(request(&[], "", "")).await.unwrap().into_inner();
    assert_eq!(domains(&fetched), ["a.example.com"]);
    assert_eq!(
        Some(fetched.version_info),
        session.publisher.current().map(|v| v.version().to_owned())
    );
}

/// Captures the log lines of the thread that holds the capture (on a
/// current-thread runtime: every task's, the server's included). tracing
/// caches per call site whether any subscriber wants it, and a subscriber
/// set for one thread only (`set_default`) loses that race whenever another
/// test's thread reaches the same call site first; so one global subscriber,
/// set before any server starts ([`start`]), writes every warning to the
/// capture of the thread that logs it, if any.
mod logs {
    use std::cell::RefCell;
    use std::sync::{Arc, Mutex, Once};

    thread_local! {
        static CAPTURE: RefCell<Option<Arc<Mutex<Vec<u8>>>>> = const { RefCell::new(None) };
    }

    pub fn init() {
        static INIT: Once = Once::new();
        INIT.call_once(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_writer(|| ThisThread)
                .with_ansi(false)
                .with_max_level(tracing::Level::WARN)
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("no other global subscriber in these tests");
        });
    }

    /// The lines logged on this thread while it is alive.
    pub struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Capture {
        pub fn start() -> Self {
            init();
            let lines = Arc::new(Mutex::new(Vec::new()));
            CAPTURE.with(|capture| *capture.borrow_mut() = Some(lines.clone()));
            Self(lines)
        }

        pub fn lines_with(&self, text: &str) -> Vec<String> {
            let bytes = self.0.lock().unwrap().clone();
            String::from_utf8(bytes)
                .unwrap()
                .lines()
                .filter(|line| line.contains(text))
                .map(str::to_owned)
                .collect()
        }
    }

    impl Drop for Capture {
        fn drop(&mut self) {
            CAPTURE.with(|capture| capture.borrow_mut().take());
        }
    }

    struct ThisThread;

    impl std::io::Write for ThisThread {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            CAPTURE.with(|capture| {
                if let Some(lines) = &*capture.borrow() {
                    lines.lock().unwrap().extend_from_slice(bytes);
                }
            });
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}

#[tokio::test]
async fn names_not_served_are_warned_about_once_per_stream_and_request_and_counted() {
    let logs = logs::Capture::start();
    let unknown = || logs.lines_with("does not serve");
    let mut session = start().await;
    let count = |session: &Session| session.metrics.xds_unknown_resource_requests.get();
    session.publisher.publish(&snapshot(&["a.example.com"]));
    session.requests.send(request(&["edge-routes"], "", "")).await.unwrap();
    let first = next(&mut session.responses).await;
    assert!(first.resources.is_empty(), "{first:?}");
    assert_eq!(count(&session), 1);
    let warnings = unknown();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains(r#"requested=["edge-routes"]"#) && warnings[0].contains("served=aether-edge"),
        "{warnings:?}"
    );

    // Envoy ACKs (twice): the same request each time, no new warning. A
    // new version changes nothing it asked for: nothing is pushed.
    for _ in 0..2 {
        let ack = request(&["edge-routes"], &first.version_info, &first.nonce);
        session.requests.send(ack).await.unwrap();
    }
    silent(&mut session.responses).await;
    session.publisher.publish(&snapshot(&["b.example.com"]));
    silent(&mut session.responses).await;
    assert_eq!((count(&session), unknown().len()), (1, 1));

    // Other names are another request; ours alone, or all, are served.
    let both = request(&["aether-edge", "edge-routes-2"], &first.version_info, &first.nonce);
    session.requests.send(both).await.unwrap();
    let third = next(&mut session.responses).await;
    assert_eq!(domains(&third), ["b.example.com"]);
    let warnings = unknown();
    assert_eq!((count(&session), warnings.len()), (2, 2), "{warnings:?}");
    assert!(
        warnings[1].contains(r#"requested=["aether-edge", "edge-routes-2"]"#),
        "{warnings:?}"
    );
    let ours = request(&["aether-edge"], &third.version_info, &third.nonce);
    session.requests.send(ours).await.unwrap();
    let fourth = next(&mut session.responses).await;
    session
        .requests
        .send(request(&[], &fourth.version_info, &fourth.nonce))
        .await
        .unwrap();
    assert_eq!(domains(&next(&mut session.responses).await), ["b.example.com"]);
    assert_eq!(count(&session), 2);

    // Another stream, and a fetch, asking for it are warned about too.
    let (requests, mut responses) = open(session.addr).await;
    requests.send(request(&["edge-routes"], "", "")).await.unwrap();
    next(&mut responses).await;
    let mut client = RouteDiscoveryServiceClient::connect(format!("http://{}", session.addr))
        .await
        .unwrap();
    let fetched = client.fetch_routes(request(&["edge-routes"], "", "")).await.unwrap();
    assert!(fetched.into_inner().resources.is_empty());
    assert_eq!((count(&session), unknown().len()), (4, 4));

    // 10,000 names make one warning of a few of them and their count.
    let many: Vec<String> = (0..10_000).map(|i| format!("edge-routes-{i:05}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    requests.send(request(&many, "", "")).await.unwrap();
    next(&mut responses).await;
    let warnings = unknown();
    assert_eq!((count(&session), warnings.len()), (5, 5), "{warnings:?}");
    assert!(
        warnings[4].contains("names=10000") && warnings[4].len() < 2_000,
        "{}",
        &warnings[4][..warnings[4].len().min(2_000)]
    );
}

#[test]
fn the_envoys_the_fleet_left_out_are_said_on_the_object_the_first_few_by_name() {
    let left_out: Vec<String> = (0..7).map(|i| format!("edge-{i} (not answering)")).collect();
    let said = crate::programmed::Programmed::from(aether_xds::fleet::Applied::All { envoys: 2, left_out });
    let crate::programmed::Programmed::Programmed { envoys: 2, left_out } = &said else {
        panic!("{said:?}");
    };
    assert_eq!(left_out.len(), crate::programmed::MAX_NAMED_ENVOYS + 1);
    assert_eq!(left_out.last().map(String::as_str), Some("and 2 more"));
    let (_, _, message) = crate::programmed::condition(true, &said);
    assert!(
        message.starts_with("applied by 2 Envoys; left out: edge-0 (not answering), edge-1"),
        "{message}"
    );
}

mod create;
mod delta;
mod needs;
mod serving;
