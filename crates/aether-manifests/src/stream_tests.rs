//! Streams (standard input) and documents of other kinds.

use std::path::{Path, PathBuf};

use super::*;

const HOST: &str = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: a}\n\
                    spec: {hosts: [a.example.com], routes: [{match: {prefix: /}, backend: {service: web}}]}\n";

fn limits() -> Limits {
    Limits::default()
}

fn skip() -> Limits {
    Limits {
        other_kinds: OtherKinds::Skip,
        ..Limits::default()
    }
}

fn stdin() -> PathBuf {
    PathBuf::from("<stdin>")
}

/// Everything `text` holds, read as standard input is.
fn read_text(text: &str, limits: &Limits) -> Load {
    let name = stdin();
    let stream = &mut text.as_bytes();
    read(Input::Stream { name: &name, stream }, limits)
}

/// What `kustomize build` writes for an app and its edge: other kinds
/// around a VirtualHost, and a List holding one more of each.
fn mixed() -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings}}\ndata: {{a: b}}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec: {{replicas: 2}}\n---\n\
         {HOST}---\n\
         apiVersion: v1\nkind: List\nitems:\n- {{apiVersion: v1, kind: Service, metadata: {{name: web}}}}\n\
         - {{apiVersion: config.aether.io/v1, kind: VirtualHost, metadata: {{name: b}}, spec: {{hosts: [b.example.com], routes: [{{match: {{prefix: /}}, backend: {{service: web}}}}]}}}}\n\
         ---\n\
         apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {{name: mesh}}\n"
    )
}

#[test]
fn other_kinds_are_errors_by_default_and_skipped_when_asked() {
    let text = mixed();
    let strict = read_text(&text, &limits());
    assert_eq!(strict.objects.len(), 2);
    assert!(strict.skipped.is_empty());
    let errors: Vec<String> = strict.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [
            "<stdin>: document 0: apiVersion: expected \"config.aether.io/v1\", found \"v1\"",
            "<stdin>: document 1: apiVersion: expected \"config.aether.io/v1\", found \"apps/v1\"",
            "<stdin>: document 3: apiVersion: expected \"config.aether.io/v1\", found \"v1\"",
            "<stdin>: document 5: apiVersion: expected \"config.aether.io/v1\", found \"networking.istio.io/v1\"",
        ]
    );

    let skipping = read_text(&text, &skip());
    assert!(skipping.errors.is_empty(), "{:?}", skipping.errors);
    let found: Vec<(usize, String)> = skipping
        .objects
        .iter()
        .map(|l| (l.document, l.object.key().to_string()))
        .collect();
    assert_eq!(found, [(2, "default/a".to_owned()), (4, "default/b".to_owned())]);
    let skipped: Vec<String> = skipping.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(
        skipped,
        [
            "<stdin>: document 0: ConfigMap settings (v1)",
            "<stdin>: document 1: Deployment web (apps/v1)",
            "<stdin>: document 3: Service web (v1)",
            "<stdin>: document 5: VirtualService mesh (networking.istio.io/v1)",
        ]
    );
}

#[test]
fn what_may_be_a_virtualhost_typed_wrong_is_never_skipped() {
    for (document, error) in [
        // This API's group at another version: a VirtualHost this build cannot read.
        (
            HOST.replace("config.aether.io/v1", "config.aether.io/v2"),
            "apiVersion: expected \"config.aether.io/v1\", found \"config.aether.io/v2\"",
        ),
        // Another kind of this API's group.
        (
            HOST.replace("VirtualHost", "Gateway"),
            "kind: expected \"VirtualHost\", found \"Gateway\"",
        ),
        // A VirtualHost of another group: most likely its apiVersion mistyped.
        (
            HOST.replace("config.aether.io/v1", "config.aether.com/v1"),
            "apiVersion: expected \"config.aether.io/v1\", found \"config.aether.com/v1\"",
        ),
        // Not a Kubernetes object at all.
        (
            "kind: Deployment\nmetadata: {name: x}\n".to_owned(),
            "apiVersion: required",
        ),
        (
            "apiVersion: v1\nmetadata: {name: x}\n".to_owned(),
            "apiVersion: expected",
        ),
        ("apiVersion: v1\nkind: 3\n".to_owned(), "apiVersion: expected"),
        ("[a, b]\n".to_owned(), "expected a mapping"),
    ] {
        let load = read_text(&document, &skip());
        assert!(load.skipped.is_empty(), "{document}");
        assert_eq!(load.errors.len(), 1, "{document}");
        assert!(
            load.errors[0].to_string().contains(error),
            "{document}: {}",
            load.errors[0]
        );
    }
}

#[test]
fn files_and_their_directories_skip_other_kinds_as_streams_do() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("all.yaml"), mixed()).unwrap();
    std::fs::write(
        dir.path().join("pod.json"),
        r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}"#,
    )
    .unwrap();
    let settled = Limits {
        settle: std::time::Duration::ZERO,
        ..skip()
    };
    let load = read(Input::Paths(&[dir.path().to_path_buf()]), &settled).first_copies();
    assert!(load.errors.is_empty(), "{:?}", load.errors);
    assert_eq!(load.objects.len(), 2);
    assert_eq!(load.skipped.len(), 5);
    assert_eq!(load.skipped[4].file, dir.path().join("pod.json"));
    assert_eq!(load.skipped[4].kind, "Pod");
}

#[test]
fn a_stream_is_json_when_it_starts_with_a_brace_and_yaml_otherwise() {
    let json = r#"  {"apiVersion": "v1", "kind": "ConfigMap"} {"apiVersion": "v1", "kind": "Secret"}"#;
    let documents = read_stream(&stdin(), json.as_bytes(), &limits()).unwrap();
    assert_eq!(documents.len(), 2);
    assert_eq!(documents[1].value["kind"], "Secret");
    // A YAML flow mapping starts with a brace too.
    let flow = "{apiVersion: v1, kind: ConfigMap}\n---\nkind: Secret\n";
    let documents = read_stream(&stdin(), flow.as_bytes(), &limits()).unwrap();
    assert_eq!(documents.len(), 2);
    assert_eq!(documents[0].value["kind"], "ConfigMap");
    // Neither: both parsers' errors.
    let e = read_stream(&stdin(), &b"{\"a\": ["[..], &limits()).unwrap_err();
    assert!(e.message.starts_with("invalid JSON: "), "{}", e.message);
    assert!(e.message.contains("(and as YAML: invalid YAML: "), "{}", e.message);
    assert_eq!(e.file, Path::new("<stdin>"));
}

#[test]
fn a_stream_is_read_no_further_than_one_byte_past_the_size_limit() {
    let limits = Limits {
        max_file_bytes: HOST.len() as u64,
        ..limits()
    };
    assert_eq!(read_stream(&stdin(), HOST.as_bytes(), &limits).unwrap().len(), 1);
    // An endless stream: reading it whole would never end.
    let endless = std::io::repeat(b'#');
    let e = read_stream(&stdin(), endless, &limits).unwrap_err();
    assert_eq!(e.message, format!("larger than the {} byte limit", HOST.len()));
    assert_eq!(e.failure, Failure::Content);
}
