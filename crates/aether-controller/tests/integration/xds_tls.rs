//! The binary's xDS server over mutual TLS: which clients it serves, the
//! flags it refuses to start without, and its certificate replaced under
//! it without a restart.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aether_controller::outputs::ROUTE_CONFIGURATION_TYPE;
use aether_e2e::{Process, XdsPki, free_port};
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::envoy::service::route::v3::route_discovery_service_client::RouteDiscoveryServiceClient;
use prost::Message;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

const API: &str = "\
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: api, namespace: default}
spec:
  hosts: [api.example.com]
  routes:
  - match: {prefix: /}
    backend: {service: api, port: 8080}
";

/// The controller in local mode on one manifest, serving xDS on a free
/// port with `args` (the transport's flags).
struct Running {
    process: Process,
    addr: SocketAddr,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn start(args: &[std::ffi::OsString]) -> Running {
    let manifests = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(manifests.path().join("api.yaml"), API).unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let mut command =
        aether_e2e::Controller::new(env!("CARGO_BIN_EXE_aether-controller")).local_mode(manifests.path(), out.path());
    command.arg(format!("--xds-addr={addr}")).args(args);
    let process = Process::spawn("aether-controller", command, &out.path().join("controller.log"));
    Running {
        process,
        addr,
        _dirs: (manifests, out),
    }
}

/// A client configuration trusting `ca_pem`, presenting the certificate
/// in `dir` (`tls.crt`, `tls.key`) when given.
fn client_config(ca_pem: &str, dir: Option<&Path>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match dir {
        None => builder.with_no_client_auth(),
        Some(dir) => {
            let chain = CertificateDer::pem_file_iter(dir.join("tls.crt"))
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_file(dir.join("tls.key")).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Arc::new(config)
}

/// A TLS connection for `server_name`, handshake done.
async fn tls_connect(
    addr: SocketAddr,
    server_name: &str,
    config: Arc<rustls::ClientConfig>,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = ServerName::try_from(server_name.to_owned()).unwrap();
    tokio_rustls::TlsConnector::from(config).connect(name, tcp).await
}

/// One RDS request over a new TLS connection (a client as Envoy's: SNI
/// `server_name`, ALPN h2): the route configuration's domains, or why
/// there were none.
async fn fetch_routes(
    addr: SocketAddr,
    server_name: &str,
    config: Arc<rustls::ClientConfig>,
) -> Result<Vec<String>, String> {
    let server_name = server_name.to_owned();
    let connector = tower::service_fn(move |_: http::Uri| {
        let (config, server_name) = (config.clone(), server_name.clone());
        async move {
            tls_connect(addr, &server_name, config)
                .await
                .map(hyper_util::rt::TokioIo::new)
        }
    });
    let exchange = async {
        let channel = tonic::transport::Endpoint::from_static("http://xds.invalid")
            .connect_with_connector(connector)
            .await
            .map_err(|err| format!("connect: {err:?}"))?;
        let request = DiscoveryRequest {
            type_url: ROUTE_CONFIGURATION_TYPE.into(),
            resource_names: vec!["aether-edge".into()],
            ..DiscoveryRequest::default()
        };
        let mut responses = RouteDiscoveryServiceClient::new(channel)
            .stream_routes(tokio_stream::iter([request]))
            .await
            .map_err(|status| format!("stream: {status}"))?
            .into_inner();
        let response: DiscoveryResponse = responses
            .message()
            .await
            .map_err(|status| format!("response: {status}"))?
            .ok_or("the stream ended")?;
        Ok(response
            .resources
            .iter()
            .flat_map(|any| RouteConfiguration::decode(any.value.as_slice()).unwrap().virtual_hosts)
            .flat_map(|host| host.domains)
            .collect())
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .unwrap_or_else(|_| Err("no answer within 10 s".to_owned()))
}

/// Waits (60 s at most: the binary starts and runs its first pass) until
/// `config` gets the routes.
async fn wait_until_served(running: &Running, server_name: &str, config: Arc<rustls::ClientConfig>) {
    let started = Instant::now();
    loop {
        match fetch_routes(running.addr, server_name, config.clone()).await {
            Ok(domains) if domains == ["api.example.com"] => return,
            result if started.elapsed() > Duration::from_secs(60) => {
                panic!("not served within 60 s: {result:?}\n{}", running.process.log_tail(30))
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The serial of the certificate a new connection is served.
async fn served_serial(addr: SocketAddr, server_name: &str, config: Arc<rustls::ClientConfig>) -> String {
    let tls = tls_connect(addr, server_name, config).await.unwrap();
    aether_testing::pki::serial_of(tls.get_ref().1.peer_certificates().unwrap()[0].as_ref())
}

#[tokio::test]
async fn a_client_certificate_of_the_ca_gets_rds_and_other_clients_are_refused() {
    let pki = XdsPki::new();
    let running = start(&pki.controller_args());
    let envoy = client_config(&pki.ca_pem(), Some(&pki.client_dir()));
    wait_until_served(&running, &pki.server_name, envoy).await;

    // No client certificate.
    let without = fetch_routes(running.addr, &pki.server_name, client_config(&pki.ca_pem(), None)).await;
    assert!(without.is_err(), "a client without a certificate got {without:?}");
    // A certificate from another CA (trusting the server all the same).
    let other = XdsPki::new();
    let mut trust_both = pki.ca_pem();
    trust_both.push_str(&other.ca_pem());
    let foreign = fetch_routes(
        running.addr,
        &pki.server_name,
        client_config(&trust_both, Some(&other.client_dir())),
    )
    .await;
    assert!(foreign.is_err(), "a client certificate of another CA got {foreign:?}");
    // Plaintext HTTP/2, as before TLS.
    let plaintext = async {
        let mut client = RouteDiscoveryServiceClient::connect(format!("http://{}", running.addr))
            .await
            .map_err(|err| format!("{err}"))?;
        client
            .fetch_routes(DiscoveryRequest {
                type_url: ROUTE_CONFIGURATION_TYPE.into(),
                ..DiscoveryRequest::default()
            })
            .await
            .map_err(|status| format!("{status}"))
    };
    let plaintext = tokio::time::timeout(Duration::from_secs(20), plaintext)
        .await
        .expect("a plaintext client is answered or closed within 20 s");
    assert!(plaintext.is_err(), "a plaintext client was served");
}

#[tokio::test]
async fn a_replaced_certificate_serves_new_connections_without_a_restart_and_a_corrupt_one_keeps_the_last() {
    let pki = XdsPki::new();
    let running = start(&pki.controller_args());
    let envoy = client_config(&pki.ca_pem(), Some(&pki.client_dir()));
    wait_until_served(&running, &pki.server_name, envoy.clone()).await;
    let id = running.process.id();
    assert_eq!(served_serial(running.addr, &pki.server_name, envoy.clone()).await, "01");

    // cert-manager renews the certificate: the next connection gets it.
    let renewed = pki.issue_server(0x2a);
    assert_eq!(
        served_serial(running.addr, &pki.server_name, envoy.clone()).await,
        renewed
    );
    wait_until_served(&running, &pki.server_name, envoy.clone()).await;

    // A corrupt certificate file: the renewed one serves on, and says why.
    std::fs::write(
        pki.server_dir().join("tls.crt"),
        "-----BEGIN CERTIFICATE-----\ngarbage\n",
    )
    .unwrap();
    assert_eq!(
        served_serial(running.addr, &pki.server_name, envoy.clone()).await,
        renewed
    );
    wait_until_served(&running, &pki.server_name, envoy.clone()).await;
    let log = running.process.log();
    assert!(log.contains("keeping the previous TLS certificate"), "{log}");
    assert!(log.contains("tls.crt"), "{log}");

    // Repaired: served, by the same process all along.
    let repaired = pki.issue_server(0x2b);
    assert_eq!(
        served_serial(running.addr, &pki.server_name, envoy.clone()).await,
        repaired
    );
    assert_eq!(running.process.id(), id);
}

/// Without the three TLS files and without `--xds-plaintext`, the binary
/// does not start, and says which flags it needs.
#[test]
fn xds_without_tls_files_or_the_plaintext_flag_is_refused_naming_the_flags() {
    let manifests = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(manifests.path().join("api.yaml"), API).unwrap();
    // The exit code and standard error of the binary with `args`; a binary
    // still running after 30 s (it did not refuse) is killed and fails.
    let run = |args: &[&str]| {
        let mut child = aether_e2e::Controller::new(env!("CARGO_BIN_EXE_aether-controller"))
            .local_mode(manifests.path(), out.path())
            .arg(format!("--xds-addr=127.0.0.1:{}", free_port()))
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let output = child.wait_with_output().unwrap();
                panic!(
                    "{args:?}: still running after 30 s\n{}",
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let output = child.wait_with_output().unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&[]);
    assert_eq!(code, Some(2), "{stderr}");
    for flag in [
        "--xds-tls-cert",
        "--xds-tls-key",
        "--xds-tls-client-ca",
        "--xds-plaintext",
    ] {
        assert!(stderr.contains(flag), "the refusal names {flag}: {stderr}");
    }
    // Nothing ran: no pass wrote the output.
    assert!(!out.path().join("routes.json").exists());

    let (code, stderr) = run(&["--xds-tls-cert=/nonexistent/tls.crt"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("missing --xds-tls-key, --xds-tls-client-ca"),
        "{stderr}"
    );

    // Files that do not load: refused at start, naming the file.
    let (code, stderr) = run(&[
        "--xds-tls-cert=/nonexistent/tls.crt",
        "--xds-tls-key=/nonexistent/tls.key",
        "--xds-tls-client-ca=/nonexistent/ca.crt",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("/nonexistent/tls.crt"), "{stderr}");
}
