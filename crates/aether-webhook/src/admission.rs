//! One AdmissionReview in, one out: the shared validator, then the host index.

use aether_api::config::v1::API_VERSION;
use aether_api::object::{DEFAULT_NAMESPACE, Judged, RULE_UNSUPPORTED, Reading, SET_ASIDE_MORE, VirtualHostObject};
use aether_api::validate::{self, Violation};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};

use crate::index::HostIndex;
use crate::twice::identity_given_twice;

/// The only AdmissionReview version served (the webhook configuration asks for it).
pub const REVIEW_API_VERSION: &str = "admission.k8s.io/v1";
pub const REVIEW_KIND: &str = "AdmissionReview";
pub use aether_api::config::v1::{GROUP, KIND};

/// Deepest JSON nesting accepted in a request body. A VirtualHost is about 6
/// levels deep inside the review; 64 leaves room for annotations and managed
/// fields while rejecting nesting bombs before any parser recurses.
pub const MAX_JSON_DEPTH: usize = 64;

/// Most JSON nodes (mappings, sequences, scalars, keys among them) in a
/// request body, counted before anything is built from it. A VirtualHost
/// at every one of its schema's list bounds is about 55,000 nodes (an
/// estimate, from the bounds); an UPDATE carries two objects, with their
/// managed fields: 200,000 leaves room for two of 100,000. What it bounds:
/// kube's types read the reviewed objects as JSON trees, up to about 230
/// bytes a node (a small mapping is a 630-byte BTreeMap leaf); any body within
/// it was answered within 45 MB over the idle size (debug build,
/// `examples/largest_body.rs`). The 3.5 MiB body limit alone allowed 1.2
/// million empty routes, 1.5 GB; 500,000 nodes of routes with an unknown
/// field took 115 MB.
pub const MAX_JSON_NODES: usize = 200_000;

/// Why a body is not a review we can answer: the HTTP 400 message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRequest(pub String);

/// How a review was decided, for metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    AllowedWithWarnings,
    DeniedUndecodable,
    DeniedInvalid,
    /// It uses what this build cannot act on (from a newer API version).
    DeniedUnsupported,
    DeniedConflict,
}

impl Decision {
    pub fn label(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::AllowedWithWarnings => "allowed_with_warnings",
            Decision::DeniedUndecodable => "denied_undecodable",
            Decision::DeniedInvalid => "denied_invalid",
            Decision::DeniedUnsupported => "denied_unsupported",
            Decision::DeniedConflict => "denied_conflict",
        }
    }
}

/// Checks that `body` nests no deeper than `max`, in one pass over the bytes,
/// skipping string contents. Malformed JSON passes here and fails in the parser.
pub fn check_depth(body: &[u8], max: usize) -> Result<(), BadRequest> {
    // No deeper than it has brackets: most bodies have fewer than `max`
    // in all, counted (strings and all) far faster than walked.
    if memchr::memchr2_iter(b'{', b'[', body).nth(max).is_none() {
        return Ok(());
    }
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(&b) = body.get(at) {
        at += 1;
        match b {
            // Most of a review is inside strings: jump from quote or
            // backslash to the next (memchr) rather than byte by byte. A
            // backslash escapes the byte after it; an unterminated string
            // ends the check.
            b'"' => loop {
                let Some(rest) = body.get(at..) else {
                    return Ok(());
                };
                match memchr::memchr2(b'"', b'\\', rest) {
                    Some(offset) if rest[offset] == b'\\' => at += offset + 2,
                    Some(offset) => {
                        at += offset + 1;
                        break;
                    }
                    None => return Ok(()),
                }
            },
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return Err(BadRequest(format!("JSON nested deeper than {max} levels")));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Parses an AdmissionReview request body with kube's types, once the
/// bounds are checked (depth, JSON nodes, UTF-8) and no identity is given
/// twice. Every failure is a [`BadRequest`] saying what was wrong; nothing
/// here panics on any input.
pub fn parse(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, BadRequest> {
    let text = check_body(body)?;
    // kube's types keep the last of a field given twice.
    if let Some(field) = identity_given_twice(text) {
        return Err(BadRequest(format!(
            "{field} is given twice (the API server never sends a field twice)"
        )));
    }
    let review: AdmissionReview<DynamicObject> = serde_json::from_str(text).map_err(|e| {
        use serde_json::error::Category;
        BadRequest(match e.classify() {
            Category::Syntax | Category::Eof | Category::Io => format!("malformed JSON: {e}"),
            Category::Data => format!("not an {REVIEW_API_VERSION} {REVIEW_KIND}: {e}"),
        })
    })?;
    if review.types.api_version != REVIEW_API_VERSION || review.types.kind != REVIEW_KIND {
        return Err(BadRequest(format!(
            "expected apiVersion {REVIEW_API_VERSION:?} and kind {REVIEW_KIND:?}, found {:?} and {:?}",
            review.types.api_version, review.types.kind
        )));
    }
    review
        .try_into()
        .map_err(|_| BadRequest(format!("the {REVIEW_KIND} has no `request`")))
}

/// What is checked of a body before any parser reads it; the body as text.
fn check_body(body: &[u8]) -> Result<&str, BadRequest> {
    check_depth(body, MAX_JSON_DEPTH)?;
    if aether_manifests::json_nodes_above(body, MAX_JSON_NODES) {
        return Err(BadRequest(format!(
            "the body holds more than {MAX_JSON_NODES} JSON nodes"
        )));
    }
    // JSON is UTF-8 (RFC 8259). serde_json checks the strings it decodes but
    // skips the contents of unknown fields, so check the whole body first:
    // with SIMD (simdutf8), and with std again only to say where a body
    // that is not UTF-8 goes wrong.
    if let Ok(text) = simdutf8::basic::from_utf8(body) {
        return Ok(text);
    }
    std::str::from_utf8(body).map_err(|e| {
        BadRequest(format!(
            "malformed JSON: not UTF-8 (invalid byte at offset {})",
            e.valid_up_to()
        ))
    })
}

/// The reviewed object as the shared decoder reads it, its identity taken
/// from the request where the object names none (as the API server fills
/// it in). Its spec only: the webhook judges what routes requests, and the
/// API server keeps a status written with the object as it was. Read
/// tolerantly: a CRD newer than this webhook lets objects carry fields and
/// values it does not know, and denying them all would block every use of
/// the new API.
fn read_object(request: &AdmissionRequest<DynamicObject>, object: &DynamicObject) -> Result<VirtualHostObject, String> {
    let namespace = request
        .namespace
        .as_deref()
        .or(object.metadata.namespace.as_deref())
        .unwrap_or(DEFAULT_NAMESPACE);
    let name = object.metadata.name.as_deref().unwrap_or(&request.name);
    let mut value = serde_json::json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"namespace": namespace, "name": name},
    });
    if let Some(spec) = object.data.get("spec") {
        value["spec"] = spec.clone();
    }
    VirtualHostObject::from_value(value, Reading::Tolerant).map_err(|e| format!("VirtualHost does not read: {e}"))
}

/// The denial of an object that uses what this build cannot act on: every
/// problem, the unsupported parts (field and value) among them.
pub fn unsupported_message(problems: &[Violation]) -> String {
    // `PATH: MESSAGE [RULE]`, an empty path (the count of those left out) too.
    let list: Vec<String> = problems
        .iter()
        .map(|p| format!("{}: {} [{}]", p.field_path, p.message, p.rule_id))
        .collect();
    format!(
        "Unsupported: VirtualHost uses what this webhook cannot judge (from a newer API version): {}",
        list.join("; ")
    )
}

/// The denial of an object that breaks the API's rules (or does not
/// decode); also what `aetherctl admit` says of such a manifest.
pub fn invalid_message(problems: &[Violation]) -> String {
    format!("VirtualHost is invalid: {}", validate::describe_all(problems))
}

/// Decides one request against the shared validator and `index`.
pub fn decide(request: &AdmissionRequest<DynamicObject>, index: &HostIndex) -> (AdmissionResponse, Decision) {
    let response = AdmissionResponse::from(request);
    match request.operation {
        Operation::Create | Operation::Update => {}
        // Deleting frees hosts; connecting carries no spec.
        Operation::Delete | Operation::Connect => return (response, Decision::Allowed),
    }
    // A subresource (status) write cannot change spec.hosts.
    if request.sub_resource.is_some() {
        return (response, Decision::Allowed);
    }
    if request.kind.group != GROUP || request.kind.kind != KIND {
        let message = format!(
            "this webhook judges {GROUP} {KIND} objects only, not {}/{} {}",
            request.kind.group, request.kind.version, request.kind.kind
        );
        return (response.deny(message), Decision::DeniedUndecodable);
    }
    let Some(object) = &request.object else {
        return (
            response.deny("the request carries no object"),
            Decision::DeniedUndecodable,
        );
    };
    let host = match read_object(request, object) {
        Ok(host) => host,
        Err(message) => return (response.deny(message), Decision::DeniedUndecodable),
    };
    let mut problems = host.problems(Judged::Admitted);
    if problems.iter().any(|p| p.rule_id == RULE_UNSUPPORTED) {
        return (
            response.deny(unsupported_message(&problems)),
            Decision::DeniedUnsupported,
        );
    }
    // Regular expressions the edge's Envoy would refuse (RE2 syntax it
    // reads otherwise, or a program above its limit), and actions it would
    // refuse: no CRD rule can say it, and admitted, the edge would leave
    // their routes out. Judged only on a spec that keeps its rules (whose
    // bounds the guard's work relies on), and listed beside a bad name, so
    // that one denial names everything to fix.
    if !problems
        .iter()
        .any(|p| p.field_path == "spec" || p.field_path.starts_with("spec."))
    {
        problems.extend(aether_edge_limits::edge_problems(&host.spec));
    }
    if !problems.is_empty() {
        return (response.deny(invalid_message(&problems)), Decision::DeniedInvalid);
    }
    // Admitted all the same (the object means the same here without them),
    // but the person applying it should know this webhook did not judge them.
    // At most 100 named, then the count (the reading caps the list).
    let mut warnings: Vec<String> = host
        .set_aside
        .iter()
        .map(|path| match path.strip_prefix(SET_ASIDE_MORE) {
            Some(more) => format!("and {} unknown fields not judged", more.trim_end_matches(')')),
            None => format!("unknown field {path} not judged (from a newer API version than this webhook's)"),
        })
        .collect();
    // An update that leaves spec.hosts as it was claims nothing new (the
    // object holds those hosts already, whatever another object claimed
    // since, as in a race of two replicas): the index is not asked, so a
    // change of routes alone costs no cross-object work.
    if request.operation == Operation::Update
        && request
            .old_object
            .as_ref()
            .is_some_and(|old| hosts_of(old) == hosts_of(object))
    {
        return answer(response, warnings);
    }
    // The object's identity: ignored in the index, so an update is not judged
    // against its own previous hosts (nor a create against a stale entry of
    // an object of the same name the source has not yet seen deleted).
    let key = host.key();
    let findings = index.check(&key, &host.spec.hosts);
    if !findings.conflicts.is_empty() {
        let list: Vec<String> = findings
            .conflicts
            .iter()
            .map(|c| format!("host {:?} is already claimed by VirtualHost {}", c.host, c.owner))
            .collect();
        return (
            response.deny(format!("VirtualHost {key} conflicts: {}", list.join("; "))),
            Decision::DeniedConflict,
        );
    }
    warnings.extend(findings.overlaps.iter().map(|o| {
        format!(
            "wildcard overlap: host {:?} overlaps {:?} of VirtualHost {}",
            o.host, o.other_host, o.owner
        )
    }));
    answer(response, warnings)
}

/// `spec.hosts` as written in `object` (`None` when absent), compared as
/// the webhook configuration's match condition compares specs.
fn hosts_of(object: &DynamicObject) -> Option<&serde_json::Value> {
    object.data.get("spec")?.get("hosts")
}

/// Admitted, with `warnings` if any.
fn answer(mut response: AdmissionResponse, warnings: Vec<String>) -> (AdmissionResponse, Decision) {
    if warnings.is_empty() {
        return (response, Decision::Allowed);
    }
    response.warnings = Some(warnings);
    (response, Decision::AllowedWithWarnings)
}

/// The JSON answer to a request body: the review to send back, or why the
/// body is a bad request.
pub fn review(body: &[u8], index: &HostIndex) -> Result<(Vec<u8>, Decision), BadRequest> {
    let request = parse(body)?;
    let (response, decision) = decide(&request, index);
    let json = serde_json::to_vec(&response.into_review())
        .map_err(|e| BadRequest(format!("could not encode the response: {e}")))?;
    Ok((json, decision))
}

/// The AdmissionReview the API server sends this webhook when `object` (a
/// VirtualHost, as JSON) is written: a CREATE, or an UPDATE of `old`. For
/// running the webhook's judgement offline (`aetherctl admit`); pass it to
/// [`review`] as bytes, as the HTTP handler does.
pub fn review_for(uid: &str, object: &serde_json::Value, old: Option<&serde_json::Value>) -> serde_json::Value {
    let metadata = &object["metadata"];
    serde_json::json!({
        "apiVersion": REVIEW_API_VERSION,
        "kind": REVIEW_KIND,
        "request": {
            "uid": uid,
            "kind": {"group": GROUP, "version": aether_api::config::v1::VERSION, "kind": KIND},
            "resource": {"group": GROUP, "version": aether_api::config::v1::VERSION, "resource": aether_api::config::v1::PLURAL},
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "operation": if old.is_some() { "UPDATE" } else { "CREATE" },
            "userInfo": {},
            "object": object,
            "oldObject": old,
            "dryRun": false
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::ObjectKey;

    #[test]
    fn depth_counts_brackets_outside_strings_only() {
        assert!(check_depth(br#"{"a":[[1]]}"#, 3).is_ok());
        assert!(check_depth(br#"{"a":[[[1]]]}"#, 3).is_err());
        assert!(check_depth(br#"{"a":"[[[[[[\"[[[["}"#, 1).is_ok());
        let deep = "[".repeat(100_000);
        let err = check_depth(deep.as_bytes(), MAX_JSON_DEPTH).unwrap_err();
        assert!(err.0.contains("nested deeper than 64"), "{err:?}");
    }

    /// The byte-by-byte check `check_depth` replaced, as the reference.
    fn depth_byte_by_byte(body: &[u8], max: usize) -> bool {
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        for &b in body {
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => {
                    depth += 1;
                    if depth > max {
                        return false;
                    }
                }
                b'}' | b']' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        true
    }

    #[test]
    fn depth_skipping_strings_agrees_with_the_byte_by_byte_check() {
        let alphabet = b"{}[]\"\\a";
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            let len = (state % 40) as usize;
            let body: Vec<u8> = (0..len)
                .map(|_| {
                    // xorshift: deterministic, no dependency.
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            for max in [1, 3] {
                assert_eq!(
                    check_depth(&body, max).is_ok(),
                    depth_byte_by_byte(&body, max),
                    "{:?}",
                    String::from_utf8_lossy(&body)
                );
            }
        }
    }

    #[test]
    fn non_reviews_are_bad_requests_with_a_reason() {
        for (body, expected) in [
            (&b"{"[..], "malformed JSON"),
            (b"[]", "not an admission.k8s.io/v1 AdmissionReview"),
            (
                b"{\"apiVersion\":\"admission.k8s.io/v1\",\"x\":\"\xff\"}",
                "not UTF-8 (invalid byte at offset 41)",
            ),
            (br#"{"apiVersion":"v1","kind":"Pod"}"#, "expected apiVersion"),
            (
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
                "has no `request`",
            ),
        ] {
            let err = parse(body).unwrap_err();
            assert!(err.0.contains(expected), "{expected}: {err:?}");
        }
    }

    #[test]
    fn review_for_builds_what_the_api_server_sends() {
        let object = serde_json::json!({
            "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
            "metadata": {"name": "api", "namespace": "shop"},
            "spec": {"hosts": ["api.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web"}}]}
        });
        let body = serde_json::to_vec(&review_for("u1", &object, None)).unwrap();
        let create = parse(&body).unwrap();
        assert_eq!(create.operation, Operation::Create);
        assert_eq!(
            (create.name.as_str(), create.namespace.as_deref()),
            ("api", Some("shop"))
        );
        assert!(create.old_object.is_none());
        let update = parse(&serde_json::to_vec(&review_for("u2", &object, Some(&object))).unwrap()).unwrap();
        assert_eq!(update.operation, Operation::Update);
        assert_eq!(update.old_object.unwrap().metadata.name.as_deref(), Some("api"));

        let index = HostIndex::new();
        index.upsert(ObjectKey::new("other", "web"), vec!["api.example.com".to_owned()]);
        assert_eq!(decide(&create, &index).1, Decision::DeniedConflict);
        assert_eq!(decide(&create, &HostIndex::new()).1, Decision::Allowed);
    }

    #[test]
    fn a_regex_envoy_would_refuse_is_denied_naming_its_field() {
        let object = |regex: &str| {
            serde_json::json!({
                "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
                "metadata": {"name": "api", "namespace": "shop"},
                "spec": {"hosts": ["api.example.com"], "routes": [
                    {"match": {"prefix": "/"}, "backend": {"service": "web"}},
                    {"match": {"prefix": "/", "queryParams": [{"name": "q", "regex": regex}]}, "backend": {"service": "web"}}
                ]}
            })
        };
        let index = HostIndex::new();
        let judge = |regex: &str| {
            let body = serde_json::to_vec(&review_for("u", &object(regex), None)).unwrap();
            let (response, decision) = decide(&parse(&body).unwrap(), &index);
            (decision, response.result.message)
        };
        assert_eq!(judge("[0-9]{1,8}").0, Decision::Allowed);
        let (decision, message) = judge("[a-z]{200}");
        assert_eq!(decision, Decision::DeniedInvalid);
        assert!(
            message.starts_with("VirtualHost is invalid: 1 validation error:")
                && message.contains("- spec.routes[1].match.queryParams[0].regex: RE2 may compile")
                && message.contains("Envoy refuses programs above 100 (simplify it")
                && message.ends_with("[re2]"),
            "{message}"
        );
        let (decision, message) = judge("[[:alpha:]&&[a-f]]");
        assert_eq!(decision, Decision::DeniedInvalid);
        assert!(message.contains("a class set operation"), "{message}");
        // The hosts are judged as before: a conflict is still a conflict.
        index.upsert(ObjectKey::new("other", "web"), vec!["api.example.com".to_owned()]);
        assert_eq!(judge("[0-9]+").0, Decision::DeniedConflict);
    }

    #[test]
    fn a_bad_name_and_a_regex_envoy_would_refuse_are_both_named() {
        let object = serde_json::json!({
            "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
            "metadata": {"name": "api", "namespace": "Shop_1"},
            "spec": {"hosts": ["api.example.com"], "routes": [
                {"match": {"regex": "(?:(?:a{2}){501}){0}x"}, "backend": {"service": "web"}}
            ]}
        });
        let body = serde_json::to_vec(&review_for("u", &object, None)).unwrap();
        let (response, decision) = decide(&parse(&body).unwrap(), &HostIndex::new());
        let message = response.result.message;
        assert_eq!(decision, Decision::DeniedInvalid);
        assert!(
            message.starts_with("VirtualHost is invalid: 2 validation errors:")
                && message.contains("- metadata.namespace: ")
                && message.contains("- spec.routes[0].match.regex: "),
            "{message}"
        );
    }
}
