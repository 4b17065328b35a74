//! The invariants of the fuzz targets in `fuzz/`, one function per target.
//!
//! Each function takes the raw fuzz input, drives the code under test with it
//! and panics when an invariant breaks; not crashing is only the first of
//! them. The libFuzzer targets are one-line wrappers around these, and the
//! stable test `tests/replay.rs` runs every file of `fuzz/corpus/<target>/`
//! and `fuzz/regressions/<target>/` through the same functions, so CI checks
//! the corpus without nightly or cargo-fuzz.
//!
//! Each returns an [`Outcome`], so that the replay can tell that its inputs
//! reach past decoding (a corpus that only exercised error paths would check
//! almost nothing).

use aether_api::config::v1::{RouteOrder, SecretProvider, VirtualHostSpec, VirtualHostStatus};
use aether_api::reflect::{from_proto_json, to_proto_json};
use aether_api::validate::Validate;
use prost::Message;

mod actions;
mod re2_guard;
pub mod structured;

pub use re2_guard::{re2_guard, re2_parity};

/// How far an input got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Rejected by the decoder (cleanly: no panic).
    Rejected,
    /// Decoded, and every invariant on the decoded value held.
    Decoded,
}

/// A fuzz target: its name (the folder under `fuzz/corpus/`) and its check.
pub struct Target {
    /// As in `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/`.
    pub name: &'static str,
    /// Runs one input through the target's invariants.
    pub check: fn(&[u8]) -> Outcome,
}

/// Every target, for the replay test and the seed writer.
pub const TARGETS: &[Target] = &[
    Target {
        name: "binary_spec",
        check: binary_spec,
    },
    Target {
        name: "kubernetes_json",
        check: kubernetes_json,
    },
    Target {
        name: "proto_json",
        check: proto_json,
    },
    Target {
        name: "manifest_yaml",
        check: manifest_yaml,
    },
    Target {
        name: "validate_structured",
        check: validate_structured,
    },
    Target {
        name: "projection",
        check: projection,
    },
    Target {
        name: "admission_review",
        check: admission_review,
    },
    Target {
        name: "re2_guard",
        check: re2_guard,
    },
    Target {
        name: "re2_parity",
        check: re2_parity,
    },
];

/// Binary protobuf: whatever decodes as a spec (or a status) re-encodes to
/// what decodes to an equal value, in every form.
pub fn binary_spec(data: &[u8]) -> Outcome {
    // The status is small and shares the code paths; check it on the same
    // bytes rather than in a target of its own.
    if let Ok(status) = VirtualHostStatus::decode(data) {
        status_round_trips(&status);
    }
    match VirtualHostSpec::decode(data) {
        Ok(spec) => {
            spec_round_trips(&spec);
            validate_is_consistent(&spec);
            Outcome::Decoded
        }
        Err(_) => Outcome::Rejected,
    }
}

/// The Kubernetes JSON form (the serde impls, as manifests are read).
pub fn kubernetes_json(data: &[u8]) -> Outcome {
    match serde_json::from_slice::<VirtualHostSpec>(data) {
        Ok(spec) => {
            // The form has names only: nothing read from it holds an enum
            // number without one.
            assert!(
                !has_unknown_enum(&spec),
                "the Kubernetes form produced an unknown enum number: {spec:?}"
            );
            spec_round_trips(&spec);
            validate_is_consistent(&spec);
            Outcome::Decoded
        }
        Err(_) => Outcome::Rejected,
    }
}

/// The canonical proto3 JSON form (through prost-reflect).
pub fn proto_json(data: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(data) else {
        return Outcome::Rejected;
    };
    if let Ok(status) = from_proto_json::<VirtualHostStatus>(text) {
        status_round_trips(&status);
    }
    match from_proto_json::<VirtualHostSpec>(text) {
        Ok(spec) => {
            spec_round_trips(&spec);
            validate_is_consistent(&spec);
            Outcome::Decoded
        }
        Err(_) => Outcome::Rejected,
    }
}

/// The manifest reader (aether-manifests, as aetherctl and the local modes
/// use it) on one YAML file of any number of documents, then its VirtualHost
/// decoding and validation, as `aetherctl validate` does.
pub fn manifest_yaml(data: &[u8]) -> Outcome {
    use aether_manifests::{Limits, parse};

    let limits = Limits::default();
    let file = std::path::Path::new("fuzz.yaml");
    let documents = match parse(file, data, &limits) {
        Ok(documents) => documents,
        Err(e) => {
            assert_eq!(e.file, file, "an error names its file");
            assert!(!e.message.is_empty(), "an error says what is wrong");
            return Outcome::Rejected;
        }
    };
    assert!(!documents.is_empty(), "a file read without error holds a document");
    assert!(documents.len() <= limits.max_documents, "the document limit holds");
    let mut decoded = false;
    for (index, document) in documents.iter().enumerate() {
        assert_eq!(document.index, index, "documents are numbered in order");
        assert!(!document.value.is_null(), "empty documents are skipped");
        let Ok(object) = aether_manifests::objects::decode(document) else {
            continue;
        };
        decoded = true;
        assert!(!object.name.is_empty() && !object.namespace.is_empty());
        spec_round_trips(&object.spec);
        validate_is_consistent(&object.spec);
        if let Some(status) = &object.status {
            status_round_trips(status);
            let _ = status.validate();
        }
        // The spec as the reader saw it is the spec its JSON reads back as,
        // when every value decoded; otherwise, the object is invalid.
        let spec_json = document.value["spec"].clone();
        if object.problems.is_empty() {
            let reread: VirtualHostSpec = serde_json::from_value(spec_json).expect("a decoded spec decodes again");
            assert_eq!(reread, *object.spec);
        } else {
            assert!(!object.violations().is_empty(), "an object with problems is invalid");
        }
    }
    if decoded { Outcome::Decoded } else { Outcome::Rejected }
}

/// `validate()` on specs built by [`structured::ArbitrarySpec`] from the
/// input, so that nearly every input becomes a spec (and many a valid one).
pub fn validate_structured(data: &[u8]) -> Outcome {
    let mut input = arbitrary::Unstructured::new(data);
    let Ok(spec) = input.arbitrary::<structured::ArbitrarySpec>() else {
        return Outcome::Rejected;
    };
    // The round trips are the decoding targets' business; here the run time
    // goes to validation.
    validate_is_consistent(&spec.build());
    Outcome::Decoded
}

/// The Envoy projection of a set of objects built by
/// [`structured::ArbitraryObjects`]: few namespaces, names and hosts, so that
/// keys and hosts collide often.
pub fn projection(data: &[u8]) -> Outcome {
    use aether_projection::{ProjectError, ProjectionConfig, Projector, project};
    use std::collections::{BTreeMap, BTreeSet};

    let mut input = arbitrary::Unstructured::new(data);
    let Ok(objects) = input.arbitrary::<structured::ArbitraryObjects>() else {
        return Outcome::Rejected;
    };
    let objects = objects.build();
    let config = ProjectionConfig::default();
    let mut by_key = BTreeMap::new();
    for object in &objects {
        by_key.insert(object.key(), object);
    }
    // Each object's spec judged once: the checks below ask twice per object.
    let spec_valid: BTreeMap<_, bool> = by_key
        .iter()
        .map(|(key, o)| (key.clone(), o.spec.validate().is_ok()))
        .collect();
    let snapshot = match project(&objects, &config) {
        Err(ProjectError::DuplicateObject(key)) => {
            assert!(by_key.len() < objects.len(), "{key} is not duplicated");
            return Outcome::Rejected;
        }
        Ok(snapshot) => snapshot,
    };
    assert_eq!(by_key.len(), objects.len(), "a duplicated key was projected");

    let routes = snapshot.route_configuration().expect("the route configuration decodes");
    let mut domains = BTreeSet::new();
    for virtual_host in &routes.virtual_hosts {
        let (key, object) = by_key
            .iter()
            .find(|(key, _)| key.to_string() == virtual_host.name)
            .unwrap_or_else(|| panic!("virtual host {} names no object", virtual_host.name));
        assert!(spec_valid[key], "{} is invalid yet projected", virtual_host.name);
        // Every route is served, but for those the edge cannot serve as
        // written (a regex RE2 refuses, an action Envoy would refuse): those
        // are reported left out, each problem naming its route, and are
        // exactly what the webhook denies (`edge_problems`).
        let left_out = snapshot
            .report
            .routes_left_out
            .iter()
            .find(|routes| routes.object == *key)
            .map(|routes| routes.problems.clone())
            .unwrap_or_default();
        assert_eq!(
            left_out,
            aether_edge_limits::edge_problems(&object.spec),
            "{}: the routes left out are the ones the webhook denies",
            virtual_host.name
        );
        let left_out_routes: BTreeSet<usize> = left_out
            .iter()
            .map(|problem| {
                route_index(&problem.field_path).unwrap_or_else(|| panic!("{} names no route", problem.field_path))
            })
            .collect();
        // v1's routes (a backend, a path prefix or exact path alone) are
        // never left out.
        for index in &left_out_routes {
            let route = &object.spec.routes[*index];
            let plain = actions::backend_only(route)
                && route.r#match.as_ref().is_some_and(|m| {
                    !matches!(m.path, Some(aether_api::config::v1::route_match::Path::Regex(_)))
                        && m.methods.is_empty()
                        && m.headers.is_empty()
                        && m.query_params.is_empty()
                });
            assert!(!plain, "{}: route {index} of v1's kind left out", virtual_host.name);
        }
        assert_eq!(
            virtual_host.routes.len() + left_out_routes.len(),
            object.spec.routes.len(),
            "{}: every route served or reported left out",
            virtual_host.name
        );
        for domain in &virtual_host.domains {
            assert!(
                object.spec.hosts.contains(domain),
                "{domain} is not a host of {}",
                virtual_host.name
            );
            assert!(domains.insert(domain.clone()), "the projection holds {domain} twice");
        }
    }
    // Every host of a valid object is served, by that object or an older one.
    let claimed: BTreeSet<String> = by_key
        .iter()
        .filter(|(key, o)| spec_valid[*key] && structured::valid_metadata(o))
        .flat_map(|(_, o)| o.spec.hosts.iter().cloned())
        .collect();
    assert_eq!(domains, claimed, "the served hosts are the valid objects' hosts");

    // Neither the input order nor building incrementally changes the result.
    let reversed = project(objects.iter().rev(), &config).expect("the same set projects");
    assert_eq!(reversed, snapshot, "the input order changed the snapshot");
    let mut projector = Projector::new(config);
    for object in &objects {
        projector.upsert(object.clone());
    }
    assert_eq!(projector.snapshot(), snapshot, "the incremental projector differs");
    snapshot.to_json().expect("a snapshot renders as JSON");
    Outcome::Decoded
}

/// The route index of a field path under `spec.routes[i]`.
fn route_index(field_path: &str) -> Option<usize> {
    let rest = field_path.strip_prefix("spec.routes[")?;
    rest[..rest.find(']')?].parse().ok()
}

/// The hosts already owned when the admission target runs, by
/// `default/owner`: one exact host and one wildcard, so that conflicts and
/// overlaps are reachable.
pub const OWNED_HOSTS: &[&str] = &["api.example.com", "*.example.com"];

/// The webhook's handler from HTTP request body to response body, as the
/// server calls it for `POST /validate-virtualhost` (no network): either a
/// well-formed AdmissionReview answering the request's uid, or a clean 400.
pub fn admission_review(data: &[u8]) -> Outcome {
    use aether_webhook::admission::{Decision, REVIEW_API_VERSION, REVIEW_KIND, review};
    use aether_webhook::index::{HostIndex, ObjectKey};
    use std::sync::LazyLock;

    static INDEX: LazyLock<HostIndex> = LazyLock::new(|| {
        let index = HostIndex::new();
        index.upsert(
            ObjectKey::new("default", "owner"),
            OWNED_HOSTS.iter().map(|h| (*h).to_owned()).collect(),
        );
        index
    });
    let (json, decision) = match review(data, &INDEX) {
        Ok(answer) => answer,
        Err(bad) => {
            assert!(!bad.0.is_empty(), "a 400 says why");
            return Outcome::Rejected;
        }
    };
    // The request as the handler read it. (An answered body is UTF-8 throughout:
    // regressions/admission_review/ keeps the body with invalid UTF-8 in an
    // unknown field that was once answered; it is a 400 now.)
    assert!(std::str::from_utf8(data).is_ok(), "an answered body is UTF-8");
    let request = aether_webhook::admission::parse(data).expect("an answered body parses");
    let answer: serde_json::Value = serde_json::from_slice(&json).expect("the answer is JSON");
    assert_eq!(answer["apiVersion"], REVIEW_API_VERSION, "{answer}");
    assert_eq!(answer["kind"], REVIEW_KIND, "{answer}");
    let response = &answer["response"];
    assert_eq!(response["uid"], request.uid.as_str(), "the answer names the request");
    let allowed = response["allowed"].as_bool().expect("allowed is a boolean");
    assert_eq!(
        allowed,
        matches!(decision, Decision::Allowed | Decision::AllowedWithWarnings),
        "{decision:?} but {answer}"
    );
    if !allowed {
        let message = response["status"]["message"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "a denial says why: {answer}");
    }
    // The spec as the handler reads it: tolerantly, fields this build does
    // not know set aside (a newer writer's), so a spec with one still
    // decodes and is judged.
    let spec = request.object.as_ref().and_then(|o| o.data.get("spec"));
    let spec: Option<VirtualHostSpec> =
        spec.and_then(|spec| aether_api::tolerant::spec(spec).ok().map(|read| read.value));
    match decision {
        // Invalid: a spec that breaks a rule, one with a value that does not
        // decode (denied naming it, as the API server's schema would), or a
        // valid one with a regular expression the edge's RE2 refuses (denied
        // naming each such field, with the `re2` rule).
        Decision::DeniedInvalid => {
            if let Some(spec) = spec
                && spec.validate().is_ok()
            {
                let refused = aether_edge_limits::regex_problems(&spec);
                assert!(!refused.is_empty(), "denied as invalid, yet valid: {answer}");
                let message = response["status"]["message"].as_str().unwrap_or_default();
                for problem in &refused {
                    assert!(
                        message.contains(&format!("{}: ", problem.field_path)),
                        "the denial does not name {}: {answer}",
                        problem.field_path
                    );
                }
            }
        }
        Decision::DeniedConflict => {
            let spec = spec.expect("a spec judged in conflict was read");
            assert!(spec.validate().is_ok(), "a conflict is judged after validation");
            assert!(
                spec.hosts.iter().any(|h| OWNED_HOSTS.contains(&h.as_str())),
                "a conflict without an owned host: {answer}"
            );
        }
        // Admitted: valid, and every regular expression one the edge's
        // Envoy compiles (admitted, a refused one would lose its route).
        Decision::Allowed | Decision::AllowedWithWarnings => {
            let spec = spec.expect("an admitted spec was read");
            assert!(spec.validate().is_ok(), "admitted, yet invalid: {answer}");
            assert!(
                aether_edge_limits::regex_problems(&spec).is_empty(),
                "admitted with a regular expression the edge refuses: {answer}"
            );
        }
        _ => {}
    }
    Outcome::Decoded
}

/// Whether `spec` holds an enum number that has no name.
pub fn has_unknown_enum(spec: &VirtualHostSpec) -> bool {
    RouteOrder::try_from(spec.route_order).is_err()
        || spec
            .tls
            .as_ref()
            .is_some_and(|tls| SecretProvider::try_from(tls.provider).is_err())
}

/// A spec survives every form: binary and proto3 JSON exactly (both carry
/// unknown enum numbers), the Kubernetes form for everything but an unknown
/// enum number, which it refuses to write rather than writing something else.
pub fn spec_round_trips(spec: &VirtualHostSpec) {
    let bytes = spec.encode_to_vec();
    assert_eq!(bytes.len(), spec.encoded_len(), "encoded_len is the encoded length");
    let back = VirtualHostSpec::decode(bytes.as_slice()).expect("a re-encoded spec decodes");
    assert_eq!(&back, spec, "binary round trip");

    let json = to_proto_json(spec);
    let back: VirtualHostSpec =
        from_proto_json(&json).unwrap_or_else(|e| panic!("proto3 JSON written for {spec:?} does not read back: {e}"));
    assert_eq!(&back, spec, "proto3 JSON round trip of {json}");

    // The Kubernetes form cannot carry an unknown enum number: compare what
    // it can, the spec with the unknown numbers cleared.
    let carried = if has_unknown_enum(spec) {
        assert!(
            serde_json::to_string(spec).is_err(),
            "the Kubernetes form wrote an unknown enum number: {spec:?}"
        );
        let mut carried = spec.clone();
        if let Some(tls) = carried.tls.as_mut()
            && SecretProvider::try_from(tls.provider).is_err()
        {
            tls.provider = SecretProvider::Unspecified.into();
        }
        if RouteOrder::try_from(carried.route_order).is_err() {
            carried.route_order = RouteOrder::Unspecified.into();
        }
        carried
    } else {
        // Its reader takes proto3 JSON too (full enum names).
        let from_proto: VirtualHostSpec = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("the Kubernetes reader refuses proto3 JSON {json}: {e}"));
        assert_eq!(&from_proto, spec, "the Kubernetes reader on proto3 JSON {json}");
        spec.clone()
    };
    let json = serde_json::to_string(&carried).expect("a spec with named enums writes in the Kubernetes form");
    let back: VirtualHostSpec =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("Kubernetes JSON {json} does not read back: {e}"));
    assert_eq!(back, carried, "Kubernetes JSON round trip of {json}");
}

/// A status survives binary and proto3 JSON exactly, and the Kubernetes form
/// (it has no enum).
pub fn status_round_trips(status: &VirtualHostStatus) {
    let bytes = status.encode_to_vec();
    let back = VirtualHostStatus::decode(bytes.as_slice()).expect("a re-encoded status decodes");
    assert_eq!(&back, status, "binary round trip");
    let json = to_proto_json(status);
    let back: VirtualHostStatus =
        from_proto_json(&json).unwrap_or_else(|e| panic!("proto3 JSON {json} does not read back: {e}"));
    assert_eq!(&back, status, "proto3 JSON round trip");
    let json = serde_json::to_string(status).expect("a status writes in the Kubernetes form");
    let back: VirtualHostStatus = serde_json::from_str(&json).expect("Kubernetes JSON of a status reads back");
    assert_eq!(&back, status, "Kubernetes JSON round trip of {json}");
}

/// `validate()` never panics, reports well-formed violations, and agrees
/// with an independent reading of the rules that need no pattern: a spec it
/// accepts has the counts, the required fields and the ranges the proto asks
/// for.
pub fn validate_is_consistent(spec: &VirtualHostSpec) {
    let result = spec.validate();
    if let Err(violations) = &result {
        assert!(!violations.is_empty(), "an error holds a violation");
        for violation in violations {
            assert!(!violation.rule_id.is_empty() && !violation.message.is_empty());
            assert!(
                violation.field_path.starts_with("spec."),
                "a spec's violation names a field under spec: {violation}"
            );
        }
    }
    if result.is_err() {
        return;
    }
    // Accepted: check the rules a reader of the proto can count by hand.
    assert!((1..=16).contains(&spec.hosts.len()), "hosts: 1 to 16, {spec:?}");
    for (i, host) in spec.hosts.iter().enumerate() {
        assert!(!host.is_empty() && host.len() <= 253, "host length, {spec:?}");
        assert!(!spec.hosts[i + 1..].contains(host), "unique hosts, {spec:?}");
        assert!(host.is_ascii() && !host.ends_with('.'), "host form, {spec:?}");
    }
    assert!((1..=128).contains(&spec.routes.len()), "routes: 1 to 128, {spec:?}");
    for route in &spec.routes {
        use aether_api::config::v1::route_match::Path;
        let route_match = route.r#match.as_ref().expect("an accepted route has a match");
        match route_match.path.as_ref() {
            Some(Path::Prefix(path) | Path::Exact(path)) => {
                assert!(path.starts_with('/') && path.len() <= 1024, "path form, {spec:?}");
                assert!(
                    !path.contains("//") && !path.contains("/../") && !path.to_ascii_lowercase().contains("%2f"),
                    "path segments, {spec:?}"
                );
            }
            Some(Path::Regex(regex)) => assert!(is_regex_text(regex), "regex form, {spec:?}"),
            None => panic!("an accepted match has a path, {spec:?}"),
        }
        match_fields_are_consistent(route_match, spec);
        actions::are_consistent(route, spec);
    }
    assert!((0..=2).contains(&spec.route_order), "route order, {spec:?}");
    if let Some(tls) = &spec.tls {
        assert!(!tls.secret_name.is_empty(), "secret name, {spec:?}");
        assert!(
            matches!(
                SecretProvider::try_from(tls.provider),
                Ok(SecretProvider::Kubernetes | SecretProvider::AwsSecretsManager)
            ),
            "provider, {spec:?}"
        );
    }
}

/// The rules of a `regex` member: 1 to 1024 printable ASCII characters.
fn is_regex_text(regex: &str) -> bool {
    (1..=1024).contains(&regex.len()) && regex.bytes().all(|b| (b' '..=b'~').contains(&b))
}

/// The counts and required parts of an accepted match's methods, headers and
/// query parameters.
fn match_fields_are_consistent(route_match: &aether_api::config::v1::RouteMatch, spec: &VirtualHostSpec) {
    use aether_api::config::v1::{header_match, query_param_match};
    const METHODS: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ];
    let methods = &route_match.methods;
    assert!(methods.len() <= 9, "methods: at most 9, {spec:?}");
    for (i, method) in methods.iter().enumerate() {
        assert!(METHODS.contains(&method.as_str()), "a listed method, {spec:?}");
        assert!(!methods[i + 1..].contains(method), "unique methods, {spec:?}");
    }
    assert!(route_match.headers.len() <= 16, "headers: at most 16, {spec:?}");
    for header in &route_match.headers {
        let name = &header.name;
        assert!(
            (1..=256).contains(&name.len()) && !name.bytes().any(|b| b.is_ascii_uppercase() || b == b':'),
            "header name, {spec:?}"
        );
        match header.value.as_ref() {
            Some(header_match::Value::Exact(v) | header_match::Value::Prefix(v)) => {
                assert!((1..=4096).contains(&v.len()) && v.is_ascii(), "header value, {spec:?}");
                assert!(!v.starts_with([' ', '\t']), "header value start, {spec:?}");
            }
            Some(header_match::Value::Regex(regex)) => assert!(is_regex_text(regex), "header regex, {spec:?}"),
            Some(header_match::Value::Present(present)) => assert!(present, "present is true, {spec:?}"),
            None => panic!("an accepted header match has a value, {spec:?}"),
        }
    }
    assert!(
        route_match.query_params.len() <= 16,
        "query parameters: at most 16, {spec:?}"
    );
    for param in &route_match.query_params {
        let name = &param.name;
        assert!(
            (1..=256).contains(&name.len()) && !name.contains(['&', '=', '#', ' ']),
            "query parameter name, {spec:?}"
        );
        match param.value.as_ref() {
            Some(query_param_match::Value::Exact(v)) => {
                assert!(
                    (1..=1024).contains(&v.len()) && !v.contains(['&', '#', ' ']),
                    "query value, {spec:?}"
                );
            }
            Some(query_param_match::Value::Regex(regex)) => assert!(is_regex_text(regex), "query regex, {spec:?}"),
            Some(query_param_match::Value::Present(present)) => assert!(present, "present is true, {spec:?}"),
            None => panic!("an accepted query parameter match has a value, {spec:?}"),
        }
    }
}

/// One seed input: the target it is for, a file name, and its bytes.
#[derive(Debug, Clone)]
pub struct Seed {
    pub target: &'static str,
    pub name: String,
    pub bytes: Vec<u8>,
}

/// The seeds for the decoding targets, made from the repository's manifests
/// (`examples/*.yaml` and the fixtures under `fixtures/`, both found from the
/// workspace root `root`): each file as it is for the manifest reader, all of
/// them in one multi-document file, and each decoded spec in binary, in
/// Kubernetes JSON and in proto3 JSON. The structured validate target takes
/// no seeds: its inputs are not in any of these forms.
pub fn seeds(root: &std::path::Path) -> std::io::Result<Vec<Seed>> {
    use aether_manifests::{Limits, parse};

    let mut files = Vec::new();
    for dir in [
        "examples",
        "crates/aether-api/tests/fixtures/valid",
        "crates/aether-api/tests/fixtures/invalid",
    ] {
        for entry in std::fs::read_dir(root.join(dir))? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();

    let mut seeds = Vec::new();
    let mut all = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path)?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("manifest");
        let dir = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|s| s.to_str())
            .unwrap_or("");
        let name = format!("{dir}-{stem}");
        all.extend_from_slice(b"---\n");
        all.extend_from_slice(&bytes);
        let documents = parse(path, &bytes, &Limits::default())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
        seeds.push(Seed {
            target: "manifest_yaml",
            name: format!("{name}.yaml"),
            bytes,
        });
        for document in &documents {
            let object = aether_manifests::objects::decode(document).map_err(|e| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {e}", path.display()))
            })?;
            let spec: &VirtualHostSpec = &object.spec;
            seeds.push(Seed {
                target: "admission_review",
                name: format!("{name}.json"),
                bytes: serde_json::to_vec(&admission_review_of(&document.value)).expect("JSON writes"),
            });
            seeds.push(Seed {
                target: "binary_spec",
                name: format!("{name}.binpb"),
                bytes: spec.encode_to_vec(),
            });
            seeds.push(Seed {
                target: "kubernetes_json",
                name: format!("{name}.json"),
                bytes: serde_json::to_vec(spec).expect("a decoded spec writes"),
            });
            seeds.push(Seed {
                target: "proto_json",
                name: format!("{name}.json"),
                bytes: to_proto_json(spec).into_bytes(),
            });
            for (i, regex) in regexes(spec).into_iter().enumerate() {
                seeds.push(Seed {
                    target: "re2_guard",
                    name: format!("{name}-{i}.re"),
                    bytes: regex.as_bytes().to_vec(),
                });
            }
        }
    }
    seeds.push(Seed {
        target: "manifest_yaml",
        name: "all-documents.yaml".into(),
        bytes: all,
    });
    // Expressions of every construct the guard reads or refuses, as its
    // comparison with RE2 generates them.
    let mut expressions = aether_edge_limits::re2::testing::Expressions::new(16);
    for i in 0..64 {
        seeds.push(Seed {
            target: "re2_guard",
            name: format!("generated-{i}.re"),
            bytes: expressions.next_expression().into_bytes(),
        });
    }
    // And, for the comparison with RE2 itself, expressions at its limits.
    let mut expressions = aether_edge_limits::re2::testing::Expressions::near_limits(31);
    for i in 0..64 {
        seeds.push(Seed {
            target: "re2_parity",
            name: format!("generated-{i}.re"),
            bytes: expressions.next_expression().into_bytes(),
        });
    }
    Ok(seeds)
}

/// Every regular expression of `spec`: paths, header and query values.
fn regexes(spec: &VirtualHostSpec) -> Vec<&str> {
    use aether_api::config::v1::{header_match, query_param_match, route_match::Path};
    let mut regexes = Vec::new();
    for route_match in spec.routes.iter().filter_map(|r| r.r#match.as_ref()) {
        if let Some(Path::Regex(regex)) = &route_match.path {
            regexes.push(regex.as_str());
        }
        for header in &route_match.headers {
            if let Some(header_match::Value::Regex(regex)) = &header.value {
                regexes.push(regex.as_str());
            }
        }
        for param in &route_match.query_params {
            if let Some(query_param_match::Value::Regex(regex)) = &param.value {
                regexes.push(regex.as_str());
            }
        }
    }
    regexes
}

/// A CREATE AdmissionReview carrying `object`, as the API server sends it.
fn admission_review_of(object: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "config.aether.io", "version": "v1", "kind": "VirtualHost"},
            "resource": {"group": "config.aether.io", "version": "v1", "resource": "virtualhosts"},
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {"username": "fuzz"},
            "object": object,
            "dryRun": false,
        }
    })
}
