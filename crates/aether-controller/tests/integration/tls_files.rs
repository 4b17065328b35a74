//! Local mode with `--secrets`: the HTTPS listener and its SDS files, the
//! `ResolvedRefs` statuses, rotation and clean-up, without Envoy (the
//! real-Envoy suite runs the same files through Envoy).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use aether_controller::local::{Local, Options};
use aether_controller::outputs::LISTENERS_FILE;
use aether_controller::outputs::{DEPENDENCIES_FILE, ROUTES_FILE, STATUS_FILE};
use aether_testing::objects::object;
use aether_testing::pki::{Leaf, TestCa, write_secret};

use crate::common::{self, json, resolved_refs};

/// `default/NAME` claiming `host`, one route to `svc-NAME`, TLS from `secret`.
fn manifest(name: &str, host: &str, secret: Option<&str>) -> String {
    let object = object("default", name).hosts([host]).route("/", &format!("svc-{name}"));
    match secret {
        Some(secret) => object.tls(secret),
        None => object,
    }
    .manifest()
}

fn local(manifests: &Path, out: &Path, secrets: &Path) -> Local {
    Local::new(Options {
        secrets: Some(secrets.to_owned()),
        ..common::options(manifests, out)
    })
    .unwrap()
}

/// The manifest, output and secrets directories of a test.
fn dirs() -> (tempfile::TempDir, tempfile::TempDir, tempfile::TempDir) {
    (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    )
}

/// `(chain name, server names)` of listeners.json.
fn chains(out: &Path) -> Vec<(String, Vec<String>)> {
    let listener = &json(&out.join(LISTENERS_FILE))["resources"][0];
    // Envoy's JSON omits an empty list.
    listener["filterChains"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|chain| {
            let names = chain["filterChainMatch"]["serverNames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|name| name.as_str().unwrap().to_owned())
                .collect();
            (chain["name"].as_str().unwrap().to_owned(), names)
        })
        .collect()
}

#[test]
fn good_secrets_get_a_chain_and_an_owner_only_sds_file_bad_ones_a_status() {
    let (manifests, out, secrets) = dirs();
    let ca = TestCa::new();
    let good = ca.issue(&Leaf::new(&["api.example.com", "*.example.com"], 0x10));
    let other = ca.issue(&Leaf::new(&["x.example.org"], 0x11));
    write_secret(secrets.path(), "default", "good", &good.chain_pem, &good.key_pem);
    write_secret(secrets.path(), "default", "mismatched", &good.chain_pem, &other.key_pem);
    let text = [
        manifest("api", "api.example.com", Some("good")),
        manifest("tenants", "*.example.com", Some("good")),
        manifest("broken", "broken.example.com", Some("mismatched")),
        manifest("missing", "missing.example.com", Some("absent")),
        manifest("plain", "plain.example.com", None),
    ]
    .concat();
    std::fs::write(manifests.path().join("all.yaml"), text).unwrap();
    let mut local = local(manifests.path(), out.path(), secrets.path());
    let summary = local.reconcile().unwrap();
    assert!(summary.written.contains(&"secrets/"), "{summary:?}");

    // A chain per object, each on its own routes in chains/NS.NAME/.
    assert_eq!(
        chains(out.path()),
        [
            ("default/api".to_owned(), vec!["api.example.com".to_owned()]),
            ("default/tenants".to_owned(), vec!["*.example.com".to_owned()]),
            (
                "refused".to_owned(),
                vec![
                    "broken.example.com".to_owned(),
                    "missing.example.com".to_owned(),
                    "plain.example.com".to_owned()
                ]
            ),
        ]
    );
    let chain_routes = |name: &str| out.path().join(format!("chains/default.{name}/routes.json"));
    let routes = &json(&chain_routes("tenants"))["resources"][0];
    assert_eq!(routes["name"], "aether-edge/default/tenants");
    assert_eq!(
        routes["virtualHosts"][0]["domains"],
        serde_json::json!(["*.example.com"])
    );
    // The hosts of others under its wildcard are misdirected by name.
    assert_eq!(routes["virtualHosts"][1]["name"], "misdirected");
    assert_eq!(
        routes["virtualHosts"][1]["domains"],
        serde_json::json!([
            "api.example.com",
            "broken.example.com",
            "missing.example.com",
            "plain.example.com",
            "*"
        ])
    );
    assert!(chain_routes("api").exists());
    let sds = out.path().join("secrets/default.good.json");
    assert_eq!(std::fs::metadata(&sds).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(out.path().join("secrets"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    let secret = &json(&sds)["resources"][0];
    assert_eq!(secret["name"], "kubernetes://default/good");
    assert!(secret["tlsCertificate"]["privateKey"]["inlineBytes"].is_string());
    // Only the good secret reaches a file.
    assert_eq!(std::fs::read_dir(out.path().join("secrets")).unwrap().count(), 1);

    let (status, reason, message) = resolved_refs(out.path(), "default/api");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "ResolvedRefs"));
    assert!(message.contains(&format!("serial {}", good.serial)), "{message}");
    let (status, reason, message) = resolved_refs(out.path(), "default/broken");
    assert_eq!((status.as_str(), reason.as_str()), ("False", "InvalidCertificateRef"));
    assert!(
        message.starts_with("secret default/mismatched: tls.key is not the key of the first certificate"),
        "{message}"
    );
    let (status, _, message) = resolved_refs(out.path(), "default/missing");
    assert_eq!(status, "False");
    assert!(message.contains("secret default/absent: not found"), "{message}");
    assert_eq!(resolved_refs(out.path(), "default/plain").0, "True");
    // No key material in the status report.
    let key_body: String = good.key_pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let report = std::fs::read_to_string(out.path().join(STATUS_FILE)).unwrap();
    assert!(!report.contains(&key_body[..20]));

    // Rotation: the SDS file changes, the listener does not.
    let listener = std::fs::read(out.path().join(LISTENERS_FILE)).unwrap();
    let rotated = ca.issue(&Leaf::new(&["api.example.com", "*.example.com"], 0x20));
    write_secret(secrets.path(), "default", "good", &rotated.chain_pem, &rotated.key_pem);
    let summary = local.reconcile().unwrap();
    assert_eq!(summary.written, ["secrets/", "status.json"], "{summary:?}");
    assert_eq!(std::fs::read(out.path().join(LISTENERS_FILE)).unwrap(), listener);
    assert!(
        resolved_refs(out.path(), "default/api")
            .2
            .contains(&format!("serial {}", rotated.serial))
    );

    // An edit of one object's routes rewrites its chain's file alone (and
    // routes.json); the listener and the other chains stay.
    let tenants = std::fs::read(chain_routes("tenants")).unwrap();
    let text = [
        object("default", "api")
            .hosts(["api.example.com"])
            .route("/v2", "svc-api")
            .tls("good")
            .manifest(),
        manifest("tenants", "*.example.com", Some("good")),
        manifest("broken", "broken.example.com", Some("mismatched")),
        manifest("missing", "missing.example.com", Some("absent")),
        manifest("plain", "plain.example.com", None),
    ]
    .concat();
    std::fs::write(manifests.path().join("all.yaml"), text).unwrap();
    let summary = local.reconcile().unwrap();
    assert_eq!(summary.written, ["chains/", "routes.json"], "{summary:?}");
    assert_eq!(std::fs::read(chain_routes("tenants")).unwrap(), tenants);
    assert!(std::fs::read_to_string(chain_routes("api")).unwrap().contains("/v2"));
    // A restarted controller finds every chain's file current.
    let summary = local_again(manifests.path(), out.path(), secrets.path())
        .reconcile()
        .unwrap();
    assert!(!summary.written.contains(&"chains/"), "{summary:?}");

    // Fixed: the broken object's chain appears; the good one stays.
    write_secret(
        secrets.path(),
        "default",
        "mismatched",
        &other.chain_pem,
        &other.key_pem,
    );
    local.reconcile().unwrap();
    let names: Vec<String> = chains(out.path()).into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["default/api", "default/broken", "default/tenants", "refused"]);

    // No longer referenced: its file goes, after the listener that named it.
    std::fs::write(
        manifests.path().join("all.yaml"),
        manifest("plain", "plain.example.com", None),
    )
    .unwrap();
    local.reconcile().unwrap();
    assert_eq!(std::fs::read_dir(out.path().join("secrets")).unwrap().count(), 0);
    assert!(chains(out.path()).is_empty());
    // And so do the chains' directories.
    assert_eq!(std::fs::read_dir(out.path().join("chains")).unwrap().count(), 0);

    // A restart finds no stale file to keep, and a key file left by an
    // earlier run for a secret no longer named is removed at once.
    std::fs::write(out.path().join("secrets/default.old.json"), b"{}").unwrap();
    let mut restarted = local_again(manifests.path(), out.path(), secrets.path());
    restarted.reconcile().unwrap();
    assert!(!out.path().join("secrets/default.old.json").exists());
}

fn local_again(manifests: &Path, out: &Path, secrets: &Path) -> Local {
    local(manifests, out, secrets)
}

/// `--xds-only`: Envoy takes the routes, the listener and the certificates
/// over xDS, so none of its files is written and a key an earlier run wrote
/// goes; what Envoy does not read (the lists, the statuses) is written as
/// before.
#[test]
fn without_envoy_files_no_route_listener_or_key_file_is_written_and_earlier_keys_go() {
    let (manifests, out, secrets) = dirs();
    let ca = TestCa::new();
    let good = ca.issue(&Leaf::new(&["api.example.com"], 0x30));
    write_secret(secrets.path(), "default", "good", &good.chain_pem, &good.key_pem);
    std::fs::write(
        manifests.path().join("all.yaml"),
        manifest("api", "api.example.com", Some("good")),
    )
    .unwrap();
    // An earlier run wrote Envoy's files.
    local(manifests.path(), out.path(), secrets.path()).reconcile().unwrap();
    let routes = std::fs::read(out.path().join(ROUTES_FILE)).unwrap();
    let listeners = std::fs::read(out.path().join(LISTENERS_FILE)).unwrap();
    assert_eq!(std::fs::read_dir(out.path().join("secrets")).unwrap().count(), 1);

    let mut local = local(manifests.path(), out.path(), secrets.path()).without_envoy_files();
    let summary = local.reconcile().unwrap();
    assert_eq!(summary.written, ["secrets/"], "{summary:?}");
    assert_eq!(std::fs::read_dir(out.path().join("secrets")).unwrap().count(), 0);
    // What an Envoy still reading them serves is left as it was.
    assert_eq!(std::fs::read(out.path().join(ROUTES_FILE)).unwrap(), routes);
    assert_eq!(std::fs::read(out.path().join(LISTENERS_FILE)).unwrap(), listeners);
    assert_eq!(resolved_refs(out.path(), "default/api").0, "True");

    // A change of routes and backends: the lists and the statuses follow,
    // Envoy's files do not.
    let text = [
        manifest("api", "api.example.com", Some("good")),
        manifest("web", "web.example.com", None),
    ]
    .concat();
    std::fs::write(manifests.path().join("all.yaml"), text).unwrap();
    let summary = local.reconcile().unwrap();
    assert_eq!(summary.written, [DEPENDENCIES_FILE, STATUS_FILE], "{summary:?}");
    assert_eq!(std::fs::read(out.path().join(ROUTES_FILE)).unwrap(), routes);
    assert_eq!(std::fs::read(out.path().join(LISTENERS_FILE)).unwrap(), listeners);
    assert!(!out.path().join("secrets/default.good.json").exists());
    assert!(
        std::fs::read_to_string(out.path().join(DEPENDENCIES_FILE))
            .unwrap()
            .contains("svc-web")
    );
    assert_eq!(resolved_refs(out.path(), "default/web").0, "True");
}
