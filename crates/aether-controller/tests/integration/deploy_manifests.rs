//! The generated deployment (`generated/deploy/controller`) against the
//! binary: the leader election, run against a fake Lease, needs only what
//! the generated Role grants, and the Deployments (and the files-mode
//! edge's sidecar) start the binary with flags it accepts.

use std::time::Duration;

use aether_controller::cluster;
use http::{Method, Request, Response};
use kube::client::Body;
use serde_json::{Value, json};
use tokio::sync::mpsc;

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// A fake API server holding one Lease: GET (404 until created), POST, and
/// PATCH (apply or strategic merge, taken as a JSON merge of `spec`, which
/// is what those patches amount to on a Lease). Sends each request's method
/// and path on `report`.
fn serve_lease(mut handle: Handle, report: mpsc::UnboundedSender<(Method, String)>) {
    tokio::spawn(async move {
        let mut lease: Option<Value> = None;
        let mut version = 0;
        while let Some((request, respond)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let body = body.collect_bytes().await.unwrap();
            let _ = report.send((parts.method.clone(), parts.uri.path().to_owned()));
            let not_found = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                   "reason": "NotFound", "code": 404, "message": "leases not found"});
            let (code, answer) = match (parts.method.clone(), &mut lease) {
                (Method::GET, None) => (404, not_found),
                (Method::GET, Some(stored)) => (200, stored.clone()),
                (Method::POST, _) => {
                    let mut created: Value = serde_json::from_slice(&body).unwrap();
                    created["metadata"]["namespace"] = json!("aether-system");
                    created["spec"] = json!({});
                    lease = Some(created.clone());
                    (201, created)
                }
                (Method::PATCH, Some(stored)) => {
                    let patch: Value = serde_json::from_slice(&body).unwrap();
                    for (key, value) in patch["spec"].as_object().into_iter().flatten() {
                        if value.is_null() {
                            stored["spec"].as_object_mut().unwrap().remove(key);
                        } else {
                            stored["spec"][key] = value.clone();
                        }
                    }
                    (200, stored.clone())
                }
                (method, _) => panic!("unexpected {method} {}", parts.uri),
            };
            version += 1;
            let mut answer = answer;
            if answer["kind"] != "Status" {
                answer["metadata"]["resourceVersion"] = json!(version.to_string());
            }
            let response = Response::builder()
                .status(code)
                .body(Body::from(serde_json::to_vec(&answer).unwrap()));
            respond.send_response(response.unwrap());
        }
    });
}

/// The (verb, resource name) pairs a Role grants, from its checked-in YAML.
fn granted(role_file: &str) -> Vec<(String, Option<String>)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../generated/deploy/controller")
        .join(role_file);
    let role: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut pairs = Vec::new();
    for rule in role["rules"].as_array().unwrap() {
        assert_eq!(rule["apiGroups"], json!(["coordination.k8s.io"]));
        assert_eq!(rule["resources"], json!(["leases"]));
        let names: Vec<Option<String>> = match rule["resourceNames"].as_array() {
            Some(names) => names
                .iter()
                .map(|name| Some(name.as_str().unwrap().to_owned()))
                .collect(),
            None => vec![None],
        };
        for verb in rule["verbs"].as_array().unwrap() {
            for name in &names {
                pairs.push((verb.as_str().unwrap().to_owned(), name.clone()));
            }
        }
    }
    pairs
}

#[tokio::test]
async fn the_election_takes_the_lease_releases_it_and_needs_only_what_the_generated_role_grants() {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "aether-system");
    let (report, mut requests) = mpsc::unbounded_channel();
    serve_lease(handle, report);

    let (mut leading, task) = aether_controller::leader::join(
        client,
        "aether-system",
        cluster::DEFAULT_LEASE_NAME,
        Some("edge-0".to_owned()),
    )
    .await
    .unwrap();
    tokio::time::timeout(Duration::from_secs(20), leading.wait_for(|leading| *leading))
        .await
        .expect("the Lease is taken within 20 s")
        .unwrap();
    drop(leading);
    aether_controller::leader::leave(task, Duration::from_secs(10)).await;

    let granted = granted("lease-role.yaml");
    let collection = "/apis/coordination.k8s.io/v1/namespaces/aether-system/leases";
    let mut verbs = std::collections::BTreeSet::new();
    while let Ok((method, path)) = requests.try_recv() {
        let (verb, name) = match method {
            Method::POST => ("create", None),
            Method::GET => ("get", path.strip_prefix(&format!("{collection}/"))),
            Method::PATCH => ("patch", path.strip_prefix(&format!("{collection}/"))),
            other => panic!("unexpected {other} {path}"),
        };
        if verb == "create" {
            assert_eq!(path, collection);
        } else {
            assert_eq!(name, Some(cluster::DEFAULT_LEASE_NAME), "{method} {path}");
        }
        let allowed = granted.iter().any(|(granted_verb, granted_name)| {
            granted_verb == verb && granted_name.as_deref().is_none_or(|n| Some(n) == name)
        });
        assert!(
            allowed,
            "{method} {path} is not granted by lease-role.yaml: {granted:?}"
        );
        verbs.insert(verb);
    }
    // Created (it did not exist), read, taken, and released on leaving.
    assert_eq!(verbs.into_iter().collect::<Vec<_>>(), ["create", "get", "patch"]);
}

/// The binary accepts `args` (clap rejects an unknown flag before it
/// reaches a later `--help`).
fn assert_accepted(args: &[&str]) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_aether-controller"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The files-mode edge's Deployment (`generated/deploy/edge-files`) starts
/// the controller sidecar with flags it accepts.
#[test]
fn the_generated_edge_deployment_starts_the_sidecar_with_flags_it_accepts() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../generated/deploy/edge-files/deployment.yaml");
    let deployment: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let sidecar = deployment["spec"]["template"]["spec"]["initContainers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|container| container["name"] == "controller")
        .unwrap();
    let args: Vec<&str> = sidecar["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    assert!(args.iter().any(|arg| arg.starts_with("--out=")), "{args:?}");
    assert_accepted(&args);
}

/// The generated Deployment starts the binary with flags it accepts, and
/// its Service, account and ports line up.
#[test]
fn the_generated_deployment_starts_the_binary_with_flags_it_accepts() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../generated/deploy/controller");
    let read =
        |file: &str| -> Value { serde_saphyr::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap() };
    let deployment = read("deployment.yaml");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    assert_accepted(&args);
    assert!(
        std::panic::catch_unwind(|| assert_accepted(&["--no-such-flag"])).is_err(),
        "the check can fail"
    );

    let port = |name: &str| {
        container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|port| port["name"] == name)
            .unwrap_or_else(|| panic!("no port {name}"))["containerPort"]
            .as_u64()
            .unwrap()
    };
    assert!(
        args.contains(&format!("--xds-addr=0.0.0.0:{}", port("xds")).as_str()),
        "{args:?}"
    );
    assert!(
        args.contains(&format!("--metrics-addr=0.0.0.0:{}", port("metrics")).as_str()),
        "{args:?}"
    );
    assert_eq!(
        container["env"][0]["name"], "POD_NAME",
        "the replica's name in the Lease"
    );
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    // Alive while not ready: not /readyz, which is 503 until every scope is listed.
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(
        pod["serviceAccountName"],
        read("service-account.yaml")["metadata"]["name"]
    );
    let out = args.iter().find_map(|arg| arg.strip_prefix("--out=")).unwrap();
    assert_eq!(container["volumeMounts"][0]["mountPath"], out);
    let service = read("service.yaml");
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "xds");
    for (key, value) in service["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&deployment["spec"]["template"]["metadata"]["labels"][key], value);
    }
}
