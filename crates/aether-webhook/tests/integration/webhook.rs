//! The real server on 127.0.0.1, over HTTPS, with a real client.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use aether_webhook::index::{HostIndex, ObjectKey};
use aether_webhook::sources;
use serde_json::{Value, json};

use crate::common::{self, Pki, raw, review, spec, start, test_limits, update};

fn hosts(list: &[&str]) -> Vec<String> {
    list.iter().map(|h| (*h).to_owned()).collect()
}

fn index_with(objects: &[(&str, &str, &[&str])]) -> Arc<HostIndex> {
    let index = Arc::new(HostIndex::new());
    for (namespace, name, list) in objects {
        index.upsert(ObjectKey::new(*namespace, *name), hosts(list));
    }
    index
}

fn response(review: &Value) -> &Value {
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1", "{review}");
    assert_eq!(review["kind"], "AdmissionReview", "{review}");
    &review["response"]
}

fn message(response: &Value) -> &str {
    response["status"]["message"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn admits_rejects_duplicates_and_admits_self_updates() {
    let server = start(index_with(&[("team-a", "api", &["api.example.com"])]), test_limits()).await;
    let client = server.pki.client();

    let out = server
        .ask(&client, "CREATE", "uid-1", "team-b", "web", &["web.example.com"])
        .await;
    let r = response(&out);
    assert_eq!(r["uid"], "uid-1");
    assert_eq!(r["allowed"], true, "{out}");
    assert!(r.get("warnings").is_none(), "{out}");

    let out = server
        .ask(
            &client,
            "CREATE",
            "uid-2",
            "team-b",
            "copy",
            &["new.example.com", "api.example.com"],
        )
        .await;
    let r = response(&out);
    assert_eq!(r["uid"], "uid-2");
    assert_eq!(r["allowed"], false, "{out}");
    let text = message(r);
    assert!(
        text.contains("host \"api.example.com\" is already claimed by VirtualHost team-a/api"),
        "{text}"
    );
    assert!(
        !text.contains("new.example.com"),
        "only the claimed host is named: {text}"
    );

    // The owner itself, updating its hosts: its own claim is not a conflict.
    let grow = update(
        "uid-3",
        "team-a",
        "api",
        spec(&["api.example.com"]),
        spec(&["api.example.com", "api2.example.com"]),
    );
    let out = server.review(&client, &grow).await;
    assert_eq!(response(&out)["allowed"], true, "{out}");
    // Another object's update claiming it is.
    let claim = update(
        "uid-4",
        "team-b",
        "web",
        spec(&["web.example.com"]),
        spec(&["api.example.com"]),
    );
    let out = server.review(&client, &claim).await;
    assert_eq!(response(&out)["allowed"], false, "{out}");

    // DELETE is allowed, whatever the object.
    let out = server
        .ask(&client, "DELETE", "uid-5", "team-a", "api", &["api.example.com"])
        .await;
    assert_eq!(response(&out)["allowed"], true, "{out}");
    assert_eq!(response(&out)["uid"], "uid-5");
    server.stop().await;
}

#[tokio::test]
async fn warns_on_a_wildcard_overlap_both_ways() {
    let server = start(
        index_with(&[
            ("edge", "wild", &["*.example.com"]),
            ("shop", "store", &["store.example.org"]),
        ]),
        test_limits(),
    )
    .await;
    let client = server.pki.client();

    let out = server
        .ask(&client, "CREATE", "u1", "team", "api", &["api.example.com"])
        .await;
    let r = response(&out);
    assert_eq!(r["allowed"], true, "{out}");
    let warnings = r["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{out}");
    let warning = warnings[0].as_str().unwrap();
    assert!(warning.contains("wildcard overlap"), "{warning}");
    assert!(
        warning.contains("edge/wild") && warning.contains("*.example.com"),
        "{warning}"
    );

    let out = server
        .ask(&client, "CREATE", "u2", "team", "wild-org", &["*.example.org"])
        .await;
    let r = response(&out);
    assert_eq!(r["allowed"], true, "{out}");
    let warning = r["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains("shop/store") && warning.contains("store.example.org"),
        "{warning}"
    );

    // The same wildcard again is an exact-string conflict, not a warning.
    let out = server
        .ask(&client, "CREATE", "u3", "team", "wild2", &["*.example.com"])
        .await;
    assert_eq!(response(&out)["allowed"], false, "{out}");
    // An unrelated host has no warning.
    let out = server
        .ask(&client, "CREATE", "u4", "team", "other", &["example.com"])
        .await;
    assert!(response(&out).get("warnings").is_none(), "{out}");
    server.stop().await;
}

#[tokio::test]
async fn denies_an_invalid_spec_listing_every_violation() {
    let server = start(index_with(&[]), test_limits()).await;
    let client = server.pki.client();
    let bad = json!({"hosts": ["API.example.com", "ok.example.com", "ok.example.com"], "routes": []});
    let out = server.review(&client, &review("CREATE", "u", "ns", "bad", bad)).await;
    let r = response(&out);
    assert_eq!(r["allowed"], false, "{out}");
    let text = message(r);
    for expected in [
        "spec.hosts[0]",
        "string.pattern",
        "spec.hosts",
        "repeated.unique",
        "spec.routes",
        "repeated.min_items",
    ] {
        assert!(text.contains(expected), "{expected} missing from: {text}");
    }

    // A spec that does not decode (a value of the wrong type) is denied
    // naming the path. An unknown field is not: it is from a newer API
    // version, admitted with a warning (skew.rs).
    let undecodable = json!({"hosts": ["a.example.com"], "routes": {"color": "blue"}});
    let out = server
        .review(&client, &review("CREATE", "u2", "ns", "bad2", undecodable))
        .await;
    let r = response(&out);
    assert_eq!(r["allowed"], false, "{out}");
    assert!(message(r).contains("spec.routes: must be a list"), "{}", message(r));
    server.stop().await;
}

/// An update that changes only the routes reaches the webhook (the
/// generated matchConditions send every spec change: match_conditions.rs)
/// and is judged whole: a regular expression RE2 refuses is denied.
#[tokio::test]
async fn a_routes_only_update_with_a_regex_re2_refuses_is_denied() {
    let server = start(index_with(&[("shop", "api", &["api.example.com"])]), test_limits()).await;
    let client = server.pki.client();
    let routes = |regex: &str| {
        let mut new = spec(&["api.example.com"]);
        new["routes"] = json!([
            {"match": {"regex": regex}, "backend": {"service": "svc-x"}},
            {"match": {"prefix": "/"}, "backend": {"service": "svc-web", "port": 8080}}
        ]);
        new
    };
    let refused = update(
        "u1",
        "shop",
        "api",
        spec(&["api.example.com"]),
        routes("(?:(?:a{2}){501}){0}x"),
    );
    let out = server.review(&client, &refused).await;
    let r = response(&out);
    assert_eq!(r["allowed"], false, "{out}");
    assert!(message(r).contains("spec.routes[0].match.regex"), "{}", message(r));

    // The same update with a regex RE2 accepts is admitted.
    let accepted = update("u2", "shop", "api", spec(&["api.example.com"]), routes("/x[0-9]+"));
    let out = server.review(&client, &accepted).await;
    assert_eq!(response(&out)["allowed"], true, "{out}");
    server.stop().await;
}

#[tokio::test]
async fn bad_bodies_get_clear_errors_and_the_server_keeps_serving() {
    let server = start(index_with(&[]), test_limits()).await;
    let client = server.pki.client();
    let url = server.url("/validate-virtualhost");
    let limit = test_limits().max_body_bytes;

    // Oversized, declared in Content-Length: refused before reading.
    let big = vec![b' '; limit + 1];
    let r = client
        .post(&url)
        .header("content-type", "application/json")
        .body(big.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    assert!(r.text().await.unwrap().contains("limit"));
    // Oversized, chunked (no length): cut off while reading.
    let stream = futures_util::stream::iter((0..=limit / 1024).map(|_| Ok::<_, std::io::Error>(vec![b' '; 1024])));
    let r = client
        .post(&url)
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);

    // Wrong content type.
    let r = client
        .post(&url)
        .header("content-type", "application/yaml")
        .body("apiVersion: v1\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);

    // Invalid UTF-8, even inside a field the handler would otherwise skip.
    let mut not_utf8 = serde_json::to_vec(&review("CREATE", "u", "team", "api", spec(&["api.example.com"]))).unwrap();
    not_utf8.splice(1..1, b"\"note\":\"caf\xe9\",".iter().copied());
    let bad_bodies = [
        ("{\"apiVersion\": ".to_owned(), "malformed JSON"),
        ("not json".to_owned(), "malformed JSON"),
        (
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{}}"#.to_owned(),
            "expected apiVersion",
        ),
        (r#"{"hello":"world"}"#.to_owned(), "AdmissionReview"),
        (
            r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}}"#.to_owned(),
            "not an admission.k8s.io/v1 AdmissionReview",
        ),
        (
            format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
            "nested deeper than 64",
        ),
        (
            format!("{{\"apiVersion\":{}1{}}}", "{\"a\":".repeat(65), "}".repeat(65)),
            "nested deeper than 64",
        ),
    ]
    .map(|(body, expected)| (body.into_bytes(), expected));
    for (body, expected) in bad_bodies
        .into_iter()
        .chain([(not_utf8, "not UTF-8 (invalid byte at offset 12)")])
    {
        let r = client
            .post(&url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{expected}");
        let text = r.text().await.unwrap();
        assert!(text.contains(expected), "{expected}: {text}");
    }

    // Truncated: Content-Length promises more than is sent before the client closes.
    let (status, text) = raw(
        &server,
        b"POST /validate-virtualhost HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"apiVersion\"",
    )
    .await;
    assert_eq!(status, Some(400), "{text}");
    assert!(text.contains("could not read the request body"), "{text}");

    // Slow body: headers then nothing; answered 408 after the body timeout.
    let connector = tokio_rustls::TlsConnector::from(Arc::new(server.pki.client_config()));
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut tls = connector
        .connect(rustls::pki_types::ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    tls.write_all(b"POST /validate-virtualhost HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n{")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), tls.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 408"));

    // Slow headers: the connection is closed after the header timeout.
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut tls = connector
        .connect(rustls::pki_types::ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    tls.write_all(b"POST /validate-virtualhost HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = vec![0u8; 4096];
        // Bounded by the timeout; each read returns data or ends.
        loop {
            match tls.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "a connection stuck in its headers is closed");

    // Unknown path and wrong method.
    assert_eq!(client.get(server.url("/nope")).send().await.unwrap().status(), 404);
    assert_eq!(client.get(&url).send().await.unwrap().status(), 405);

    // Still serving reviews.
    let out = server
        .ask(&client, "CREATE", "after", "ns", "ok", &["ok.example.com"])
        .await;
    assert_eq!(response(&out)["allowed"], true);
    assert_eq!(client.get(server.url("/healthz")).send().await.unwrap().status(), 200);
    assert_eq!(client.get(server.url("/readyz")).send().await.unwrap().status(), 200);
    let metrics = client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(r#"aether_webhook_admission_decisions_total{decision="bad_request"} 8"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"aether_webhook_http_responses_total{route="/validate-virtualhost",code="413"} 2"#),
        "{metrics}"
    );
    // The connection stuck in its headers, closed by the listener.
    assert!(
        metrics.contains(r#"aether_webhook_connections_closed_total{reason="first_request_timeout"} 1"#),
        "{metrics}"
    );
    server.stop().await;
}

/// The serial of the certificate the server presents, in hex.
async fn handshake_serial(server: &common::Running) -> String {
    let connector = tokio_rustls::TlsConnector::from(Arc::new(server.pki.client_config()));
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let tls = connector
        .connect(rustls::pki_types::ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    aether_testing::pki::serial_of(tls.get_ref().1.peer_certificates().unwrap()[0].as_ref())
}

#[tokio::test]
async fn rotated_certificates_serve_on_the_next_handshake() {
    let server = start(index_with(&[]), test_limits()).await;
    assert_eq!(handshake_serial(&server).await, "01");
    server.pki.rotate(0x2a);
    assert_eq!(handshake_serial(&server).await, "2a");

    // A key that does not match the certificate is not loaded: the last good pair serves on.
    let other = Pki::new(99);
    std::fs::copy(&other.key, &server.pki.key).unwrap();
    assert_eq!(handshake_serial(&server).await, "2a");
    server.pki.rotate(0x2b);
    assert_eq!(handshake_serial(&server).await, "2b");
    let metrics = server.metrics.encode();
    assert!(
        metrics.contains(r#"aether_webhook_tls_reloads_total{result="ok"} 2"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"aether_webhook_tls_reloads_total{result="error"} 1"#),
        "{metrics}"
    );
    server.stop().await;
}

#[tokio::test]
async fn shutdown_lets_an_in_flight_request_finish() {
    let server = start(index_with(&[]), test_limits()).await;
    let body = serde_json::to_vec(&review("CREATE", "u", "ns", "n", spec(&["a.example.com"]))).unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(server.pki.client_config()));
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut tls = connector
        .connect(rustls::pki_types::ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let head = format!(
        "POST /validate-virtualhost HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    tls.write_all(&body[..10]).await.unwrap();
    tls.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let addr = server.addr;
    let stopping = tokio::spawn(server.stop());
    tokio::time::sleep(Duration::from_millis(50)).await;
    // No new connections once shutdown began.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    tls.write_all(&body[10..]).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut out))
        .await
        .unwrap()
        .ok();
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"allowed\":true"), "{text}");
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn local_mode_indexes_a_watched_directory() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = |name: &str, host: &str| {
        format!(
            "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: {name}, namespace: team}}\nspec:\n  hosts: [{host}]\n  routes: [{{match: {{prefix: /}}, backend: {{service: svc}}}}]\n"
        )
    };
    std::fs::write(dir.path().join("a.yaml"), manifest("a", "a.example.com")).unwrap();
    let index = Arc::new(HostIndex::new());
    let ready = Arc::new(AtomicBool::new(false));
    let watch = tokio::spawn(sources::watch_directory(
        dir.path().to_path_buf(),
        Duration::from_millis(20),
        aether_manifests::Limits::default(),
        index.clone(),
        ready.clone(),
        Arc::new(aether_webhook::metrics::Metrics::new()),
    ));
    let server = start(index.clone(), test_limits()).await;
    let client = server.pki.client();
    let until = |what: &'static str, f: Box<dyn Fn() -> bool>| async move {
        for _ in 0..250 {
            if f() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("not within 5 s: {what}");
    };
    let ready_ = ready.clone();
    until("ready", Box::new(move || ready_.load(Ordering::Acquire))).await;
    let claim_b = review("CREATE", "u", "other", "x", spec(&["b.example.com"]));
    let claim_a = review("CREATE", "u", "other", "x", spec(&["a.example.com"]));
    assert_eq!(response(&server.review(&client, &claim_a).await)["allowed"], false);
    assert_eq!(response(&server.review(&client, &claim_b).await)["allowed"], true);

    // A new file is picked up; a removed one is forgotten.
    std::fs::write(dir.path().join("b.yaml"), manifest("b", "b.example.com")).unwrap();
    let index_ = index.clone();
    until("b indexed", Box::new(move || index_.len() == (2, 2))).await;
    assert_eq!(response(&server.review(&client, &claim_b).await)["allowed"], false);
    std::fs::remove_file(dir.path().join("a.yaml")).unwrap();
    let index_ = index.clone();
    until("a forgotten", Box::new(move || index_.len() == (1, 1))).await;
    assert_eq!(response(&server.review(&client, &claim_a).await)["allowed"], true);
    watch.abort();
    server.stop().await;
}

/// Two replicas whose reflectors have not yet seen each other's admission
/// both admit the same new host: admission alone cannot prevent it. Once
/// their indexes catch up, a third claimant is denied; the two admitted
/// objects remain, which is why the projection dedups at run time.
#[tokio::test]
async fn two_replicas_racing_both_admit_then_catch_up() {
    let (one, two) = (
        start(index_with(&[]), test_limits()).await,
        start(index_with(&[]), test_limits()).await,
    );
    let (c1, c2) = (one.pki.client(), two.pki.client());
    let first = review("CREATE", "r1", "team-a", "first", spec(&["race.example.com"]));
    let second = review("CREATE", "r2", "team-b", "second", spec(&["race.example.com"]));
    let (a, b) = tokio::join!(one.review(&c1, &first), two.review(&c2, &second));
    assert_eq!(response(&a)["allowed"], true, "{a}");
    assert_eq!(response(&b)["allowed"], true, "{b}");

    // The reflectors catch up: both replicas now index both objects.
    for replica in [&one, &two] {
        replica
            .index
            .upsert(ObjectKey::new("team-a", "first"), hosts(&["race.example.com"]));
        replica
            .index
            .upsert(ObjectKey::new("team-b", "second"), hosts(&["race.example.com"]));
    }
    let third = review("CREATE", "r3", "team-c", "third", spec(&["race.example.com"]));
    let out = one.review(&c1, &third).await;
    let text = message(response(&out)).to_owned();
    assert!(
        text.contains("team-a/first") && text.contains("team-b/second"),
        "{text}"
    );
    // Each of the two may still change its routes: an update that leaves
    // spec.hosts as it was claims nothing new, and the index is not asked.
    let mut routes = spec(&["race.example.com"]);
    routes["routes"][0]["backend"]["service"] = json!("svc-new");
    let out = two
        .review(
            &c2,
            &update("r4", "team-a", "first", spec(&["race.example.com"]), routes),
        )
        .await;
    assert_eq!(response(&out)["allowed"], true, "{out}");
    // An update changing its hosts is judged against the index: its rival's
    // claim is a conflict.
    let more = update(
        "r5",
        "team-a",
        "first",
        spec(&["race.example.com"]),
        spec(&["race.example.com", "more.example.com"]),
    );
    let out = two.review(&c2, &more).await;
    assert!(message(response(&out)).contains("team-b/second"), "{out}");

    // The edge's dedup of the two: crates/aetherctl/tests/cli/race.rs.
    one.stop().await;
    two.stop().await;
}
