// A binary of its own: it lowers the process's open-file limit, which would fail tests running beside it.
//! Accept under a real descriptor shortage (EMFILE): this test lowers its
//! own process's limit, so it is alone in its test binary.

mod common;

use std::time::Duration;

use aether_http_server::{ListenerMetrics, Server};
use common::{HTTP1, TestService, config, get};
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_backs_off_while_descriptors_run_out_and_accepts_again_when_they_come_back() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Twenty connections wait in the backlog before the server runs.
    let mut clients = Vec::new();
    for _ in 0..20 {
        clients.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    // Room for ten more descriptors in this whole process.
    let original = getrlimit(Resource::Nofile);
    let room = open_descriptors() + 10;
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(room),
            maximum: original.maximum,
        },
    )
    .unwrap();

    let metrics = ListenerMetrics::default();
    let mut config = config(HTTP1);
    // Far above what the descriptors allow: accept is what fails.
    config.max_connections = 1000;
    config.first_request_timeout = Duration::from_secs(2);
    let server = Server::new(config).metrics(metrics.clone());
    tokio::spawn(server.serve(listener, TestService::new(), std::future::pending()));

    // The descriptors run out with connections still pending, and accept
    // fails; measured over 1.5 s, the retries are paced.
    tokio::time::timeout(Duration::from_secs(10), async {
        while metrics.accept_errors.get() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("accept failed for want of descriptors");
    let errors = metrics.accept_errors.get();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let retries = metrics.accept_errors.get() - errors;
    // Pauses of 5, 10, 20 ... 640 ms: at most 8 retries in 1.5 s (a loop
    // without pauses retries millions of times).
    assert!(retries <= 9, "{retries} failed accepts in 1.5 s");
    assert!(metrics.accepted.get() < 20, "all accepted: the limit was not reached");

    // The accepted connections say nothing and are closed after 2 s; their
    // descriptors let the pending ones in, within the 1 s longest pause.
    tokio::time::timeout(Duration::from_secs(20), async {
        while metrics.accepted.get() < 20 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("every pending connection accepted once descriptors came back");
    // And it serves.
    drop(clients);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(get(&mut client, "/").await.ends_with("ok"));
    setrlimit(Resource::Nofile, original).unwrap();
}
