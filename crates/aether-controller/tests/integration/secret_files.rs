//! Local mode's `--secrets` files as a hostile environment leaves them: a
//! FIFO, a device, an oversized file, and a served pair that turns
//! unreadable or invalid. Every secret file is opened as a manifest is
//! (no wait, regular files only, bounded); a served certificate is kept
//! until a valid newer pair arrives or its secret is deleted.
//!
//! The tests run as root here, where `chmod 000` does not stop a read, so
//! a file is made unreadable by putting a directory, a FIFO or a dangling
//! link in its place.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use aether_controller::local::{Local, Options};
use aether_controller::metrics::Metrics;
use aether_controller::outputs::LISTENERS_FILE;
use aether_testing::objects::object;
use aether_testing::pki::{Leaf, TestCa, write_secret};

use crate::common::{self, json, resolved_refs};

/// The most a pass may take here before it counts as blocked.
const HANG_GUARD: Duration = Duration::from_secs(20);

fn manifest(name: &str, host: &str, secret: &str) -> String {
    object("default", name)
        .hosts([host])
        .route("/", &format!("svc-{name}"))
        .tls(secret)
        .manifest()
}

fn local(manifests: &Path, out: &Path, secrets: &Path) -> Local {
    Local::new(Options {
        secrets: Some(secrets.to_owned()),
        ..common::options(manifests, out)
    })
    .unwrap()
}

/// The chains `listeners.json` names.
fn chain_names(out: &Path) -> Vec<String> {
    json(&out.join(LISTENERS_FILE))["resources"][0]["filterChains"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|chain| chain["name"].as_str().unwrap().to_owned())
        .collect()
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs one pass on another thread, failing if it takes over [`HANG_GUARD`]
/// (a blocked `open` never returns: the thread is left behind).
fn pass_within_guard(mut local: Local) -> Local {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let result = local.reconcile().map(|_| ());
        let _ = sender.send((local, result));
    });
    let (local, result) = receiver
        .recv_timeout(HANG_GUARD)
        .expect("the pass blocked on a secret file");
    result.unwrap();
    local
}

#[test]
fn a_fifo_or_a_device_as_a_secret_file_is_refused_without_blocking_the_pass() {
    let (manifests, out, secrets) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let ca = TestCa::new();
    let good = ca.issue(&Leaf::new(&["good.example.com"], 0x40));
    write_secret(secrets.path(), "default", "good", &good.chain_pem, &good.key_pem);
    let fifo_dir = secrets.path().join("default/fifo");
    std::fs::create_dir_all(&fifo_dir).unwrap();
    mkfifo(&fifo_dir.join("tls.crt"));
    std::fs::write(fifo_dir.join("tls.key"), &good.key_pem).unwrap();
    let zero_dir = secrets.path().join("default/zero");
    std::fs::create_dir_all(&zero_dir).unwrap();
    std::os::unix::fs::symlink("/dev/zero", zero_dir.join("tls.crt")).unwrap();
    std::fs::write(zero_dir.join("tls.key"), &good.key_pem).unwrap();
    let text = [
        manifest("good", "good.example.com", "good"),
        manifest("fifo", "fifo.example.com", "fifo"),
        manifest("zero", "zero.example.com", "zero"),
    ]
    .concat();
    std::fs::write(manifests.path().join("all.yaml"), text).unwrap();

    let local = pass_within_guard(local(manifests.path(), out.path(), secrets.path()));
    let (status, reason, message) = resolved_refs(out.path(), "default/fifo");
    assert_eq!((status.as_str(), reason.as_str()), ("False", "InvalidCertificateRef"));
    assert!(message.contains("tls.crt") && message.contains("a FIFO"), "{message}");
    let (status, _, message) = resolved_refs(out.path(), "default/zero");
    assert_eq!(status, "False");
    assert!(
        message.contains("tls.crt") && message.contains("a character device"),
        "{message}"
    );
    assert_eq!(resolved_refs(out.path(), "default/good").0, "True");

    // Another tenant's edit is served on the next pass, the FIFO still there.
    let text = [
        manifest("good", "good.example.com", "good"),
        manifest("fifo", "fifo.example.com", "fifo"),
        manifest("zero", "zero.example.com", "zero"),
        manifest("later", "later.example.com", "good"),
    ]
    .concat();
    std::fs::write(manifests.path().join("all.yaml"), text).unwrap();
    pass_within_guard(local);
    assert_eq!(resolved_refs(out.path(), "default/later").0, "True");
}

#[test]
fn a_secret_file_over_the_limit_is_refused_naming_the_file_and_the_limit() {
    let (manifests, out, secrets) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let ca = TestCa::new();
    let good = ca.issue(&Leaf::new(&["big.example.com"], 0x41));
    // A valid chain padded past the limit with PEM comments (text a PEM
    // reader skips), so only the size can refuse it.
    let limit = aether_controller::tls::local::MAX_SECRET_FILE_BYTES as usize;
    let padding = "# padding\n".repeat(limit / 10 + 1);
    write_secret(
        secrets.path(),
        "default",
        "big",
        &format!("{padding}{}", good.chain_pem),
        &good.key_pem,
    );
    std::fs::write(
        manifests.path().join("all.yaml"),
        manifest("big", "big.example.com", "big"),
    )
    .unwrap();
    pass_within_guard(local(manifests.path(), out.path(), secrets.path()));
    let (status, _, message) = resolved_refs(out.path(), "default/big");
    assert_eq!(status, "False");
    assert!(message.contains("tls.crt"), "{message}");
    assert!(
        message.contains(&format!("larger than the {limit} byte limit")),
        "{message}"
    );
}

/// Replaces `file` by what `how` makes in its place.
fn replace(file: &Path, how: &str) {
    clear(file);
    match how {
        "directory" => std::fs::create_dir(file).unwrap(),
        "fifo" => mkfifo(file),
        "dangling link" => std::os::unix::fs::symlink(file.with_extension("gone"), file).unwrap(),
        "half-written" => std::fs::write(file, "-----BEGIN CERTIFICATE-----\nMIIB").unwrap(),
        _ => unreachable!(),
    }
}

/// Removes whatever is at `file`.
fn clear(file: &Path) {
    let _ = std::fs::remove_file(file);
    let _ = std::fs::remove_dir(file);
}

/// The SDS resource names an xDS client gets, as published.
fn xds_secrets(publisher: &aether_controller::xds::Publisher) -> Vec<String> {
    publisher.published_secrets()
}

#[test]
fn a_served_certificate_whose_files_turn_unreadable_or_invalid_keeps_its_last_good_chain() {
    let (manifests, out, secrets) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let ca = TestCa::new();
    let first = ca.issue(&Leaf::new(&["api.example.com"], 0x50));
    write_secret(secrets.path(), "default", "api", &first.chain_pem, &first.key_pem);
    std::fs::write(
        manifests.path().join("all.yaml"),
        manifest("api", "api.example.com", "api"),
    )
    .unwrap();
    let (publisher, _discovery) = aether_controller::xds::channel("aether-edge", Arc::new(Metrics::new()));
    let mut local = local(manifests.path(), out.path(), secrets.path()).with_xds(publisher.clone());
    local.reconcile().unwrap();
    let sds = out.path().join("secrets/default.api.json");
    let served = std::fs::read(&sds).unwrap();
    assert_eq!(chain_names(out.path()), ["default/api"]);
    assert_eq!(xds_secrets(&publisher), ["kubernetes://default/api"]);
    assert_eq!(local.metrics.tls_secrets_kept.get(), 0);

    let dir = secrets.path().join("default/api");
    for (file, how) in [
        ("tls.key", "directory"),
        ("tls.key", "fifo"),
        ("tls.key", "dangling link"),
        ("tls.crt", "half-written"),
        ("tls.crt", "directory"),
    ] {
        replace(&dir.join(file), how);
        local = pass_within_guard(local);
        assert_eq!(
            std::fs::read(&sds).unwrap(),
            served,
            "{file} {how}: the SDS file changed"
        );
        assert_eq!(chain_names(out.path()), ["default/api"], "{file} {how}");
        assert_eq!(xds_secrets(&publisher), ["kubernetes://default/api"], "{file} {how}");
        let (status, reason, message) = resolved_refs(out.path(), "default/api");
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "InvalidCertificateRef"),
            "{file} {how}"
        );
        assert!(message.contains(file), "{file} {how}: {message}");
        assert!(
            message.contains(&format!(
                "still serving its last good certificate, serial {}",
                first.serial
            )),
            "{file} {how}: {message}"
        );
        // Counted beside its log line.
        assert_eq!(local.metrics.tls_secrets_kept.get(), 1, "{file} {how}");
        clear(&dir.join(file));
        write_secret(secrets.path(), "default", "api", &first.chain_pem, &first.key_pem);
    }

    // A valid newer pair replaces it.
    let second = ca.issue(&Leaf::new(&["api.example.com"], 0x51));
    replace(&dir.join("tls.key"), "directory");
    local = pass_within_guard(local);
    clear(&dir.join("tls.key"));
    write_secret(secrets.path(), "default", "api", &second.chain_pem, &second.key_pem);
    local.reconcile().unwrap();
    assert_ne!(std::fs::read(&sds).unwrap(), served);
    let (status, _, message) = resolved_refs(out.path(), "default/api");
    assert_eq!(status, "True");
    assert!(message.contains(&format!("serial {}", second.serial)), "{message}");
    assert_eq!(local.metrics.tls_secrets_kept.get(), 0);

    // Deleting the secret (its directory) stops serving it.
    std::fs::remove_dir_all(&dir).unwrap();
    local.reconcile().unwrap();
    assert!(!sds.exists());
    // SDS keeps a secret one pass after the listener stopped naming it.
    local.reconcile().unwrap();
    assert!(xds_secrets(&publisher).is_empty());
    let (status, _, message) = resolved_refs(out.path(), "default/api");
    assert_eq!(status, "False");
    assert!(message.contains("not found"), "{message}");
}
