//! The CRD generator, through the xtask's public API: the VirtualHost CRD
//! it writes, and the mapping of small protos.

use anyhow::Result;
use serde_json::Value;
use xtask::generators::crd::{CRD_FILE, SCHEMA_FILE, generate, kube_attributes, message_schema};

use crate::common::{self, structural_problems};

/// The generator's files for the real API, in memory.
fn outputs() -> Vec<(String, Vec<u8>)> {
    generate(&common::api_context().api).unwrap()
}

fn file(outputs: &[(String, Vec<u8>)], name: &str) -> String {
    let (_, bytes) = outputs.iter().find(|(n, _)| n == name).unwrap();
    String::from_utf8(bytes.clone()).unwrap()
}

/// The CRD as a JSON value, parsed back from the YAML text.
fn crd() -> Value {
    serde_saphyr::from_str(&file(&outputs(), CRD_FILE)).unwrap()
}

fn schema(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
}

#[test]
fn the_schema_is_structural_and_its_cel_is_bounded() {
    let crd = crd();
    let mut problems = Vec::new();
    structural_problems(schema(&crd), "", false, &mut problems);
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_rule_kinds_crd_is_structural_and_its_cel_is_bounded() {
    // The CRD of the test API uses every rule kind's mapping.
    let path = xtask::workspace_root()
        .join(xtask::rule_kinds::OUT_DIR)
        .join("crds")
        .join(xtask::rule_kinds::RESOURCE.crd_file());
    let crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut problems = Vec::new();
    structural_problems(schema(&crd), "", false, &mut problems);
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_walk_catches_what_the_api_server_rejects() {
    // The structural check above must be able to fail.
    let bad = serde_json::json!({
        "type": "object",
        "properties": {
            "a": {"description": "no type"},
            "b": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "this == ''"}]},
                  "x-kubernetes-list-type": "atomic"},
            "c": {"type": "string", "oneOf": [{"type": "string"}]},
            "d": {"type": "array", "uniqueItems": true, "maxItems": 2, "items": {"type": "object", "properties": {}},
                  "x-kubernetes-list-type": "set"}
        },
        "required": ["e"]
    });
    let mut problems = Vec::new();
    structural_problems(&bad, "", false, &mut problems);
    let text = problems.join("\n");
    for expected in [
        ".a: type None",
        ".b[*]: CEL on an unbounded list or string",
        ".b[*]: CEL still says `this`",
        ".c: \"type\" inside oneOf",
        ".d: has uniqueItems",
        ".d: list type Some(\"set\")",
        ": requires e",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
}

#[test]
fn the_crd_names_the_resource_and_its_columns() {
    let crd = crd();
    assert_eq!(crd["metadata"]["name"], "virtualhosts.config.aether.io");
    let spec = &crd["spec"];
    assert_eq!(spec["group"], "config.aether.io");
    assert_eq!(spec["scope"], "Namespaced");
    assert_eq!(
        spec["names"],
        serde_json::json!({"kind": "VirtualHost", "plural": "virtualhosts", "singular": "virtualhost", "shortNames": ["vh"],
                           "categories": ["aether"]})
    );
    let version = &spec["versions"][0];
    assert_eq!(
        (
            version["name"].as_str(),
            version["served"].as_bool(),
            version["storage"].as_bool()
        ),
        (Some("v1"), Some(true), Some(true))
    );
    assert_eq!(version["subresources"], serde_json::json!({"status": {}}));
    let columns: Vec<_> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["jsonPath"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        columns,
        [
            ("Hosts", ".spec.hosts", "string"),
            ("Routes", ".status.routeCount", "integer"),
            (
                "Accepted",
                r#".status.conditions[?(@.type=="Accepted")].status"#,
                "string"
            ),
            (
                "Reason",
                r#".status.conditions[?(@.type=="Accepted")].reason"#,
                "string"
            ),
            (
                "Programmed",
                r#".status.conditions[?(@.type=="Programmed")].status"#,
                "string"
            ),
            ("Age", ".metadata.creationTimestamp", "date")
        ]
    );
}

#[test]
fn maps_the_rules_of_the_api() {
    let crd = crd();
    let root = schema(&crd);
    assert_eq!(root["required"], serde_json::json!(["spec"]));
    let spec = &root["properties"]["spec"];
    assert_eq!(spec["required"], serde_json::json!(["hosts", "routes"]));
    assert!(
        spec["description"]
            .as_str()
            .unwrap()
            .starts_with("The desired state of a VirtualHost")
    );

    let hosts = &spec["properties"]["hosts"];
    assert_eq!(
        (hosts["minItems"].as_i64(), hosts["maxItems"].as_i64()),
        (Some(1), Some(16))
    );
    assert_eq!(hosts["x-kubernetes-list-type"], "set");
    assert_eq!(hosts["items"]["maxLength"], 253);
    let proto =
        std::fs::read_to_string(xtask::workspace_root().join("api/aether/config/v1/virtual_host.proto")).unwrap();
    let pattern = hosts["items"]["pattern"].as_str().unwrap();
    assert!(
        proto.contains(&pattern.replace('\\', "\\\\")),
        "{pattern} is not the proto's pattern"
    );
    assert!(
        hosts["description"]
            .as_str()
            .unwrap()
            .starts_with("The external hostnames")
    );

    let routes = &spec["properties"]["routes"];
    assert_eq!(routes["x-kubernetes-list-type"], "atomic");
    assert_eq!(routes["maxItems"], 128);
    let route = &routes["items"];
    // `backend` is one of three destinations: a message oneof rule, no
    // longer a required property.
    assert_eq!(route["required"], serde_json::json!(["match"]));
    assert_eq!(
        route["x-kubernetes-validations"][1],
        serde_json::json!({
            "rule": "[has(self.backend), (has(self.backends) && self.backends.size() > 0), has(self.redirect)]\
                     .filter(x, x).size() >= 1",
            "message": "one of backend, backends, redirect must be set [message.oneof]"
        })
    );
    let route_match = &route["properties"]["match"];
    assert_eq!(
        route_match["x-kubernetes-validations"],
        serde_json::json!([{
            "rule": "[has(self.prefix), has(self.exact), has(self.regex)].filter(x, x).size() == 1",
            "message": "exactly one of `prefix`, `exact`, `regex` must be set (oneof path) [required]"
        }])
    );
    let regex = &route_match["properties"]["regex"];
    assert_eq!(
        (
            regex["minLength"].as_i64(),
            regex["maxLength"].as_i64(),
            regex["pattern"].as_str()
        ),
        (Some(1), Some(1024), Some("^[ -~]*$"))
    );
    let methods = &route_match["properties"]["methods"];
    assert_eq!(
        (methods["maxItems"].as_i64(), methods["x-kubernetes-list-type"].as_str()),
        (Some(9), Some("set"))
    );
    assert_eq!(
        methods["items"]["enum"],
        serde_json::json!([
            "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"
        ])
    );
    let header = &route_match["properties"]["headers"]["items"];
    assert_eq!(route_match["properties"]["headers"]["maxItems"], 16);
    assert_eq!(header["required"], serde_json::json!(["name"]));
    assert_eq!(
        header["x-kubernetes-validations"][0]["rule"],
        "[has(self.exact), has(self.prefix), has(self.regex), has(self.present)].filter(x, x).size() == 1"
    );
    // `bool.const = true` on a oneof member: only `true` may be written.
    assert_eq!(header["properties"]["present"]["enum"], serde_json::json!([true]));
    assert_eq!(header["properties"]["exact"]["maxLength"], 4096);
    let query = &route_match["properties"]["queryParams"];
    assert_eq!(query["maxItems"], 16);
    assert_eq!(query["items"]["properties"]["exact"]["maxLength"], 1024);
    assert_eq!(
        spec["properties"]["routeOrder"]["enum"],
        serde_json::json!(["UNSPECIFIED", "LISTED", "SPECIFICITY"])
    );
    let prefix = &route_match["properties"]["prefix"];
    assert_eq!(
        (prefix["minLength"].as_i64(), prefix["maxLength"].as_i64()),
        (Some(1), Some(1024))
    );
    let cel = &prefix["x-kubernetes-validations"][0];
    assert_eq!(cel["rule"], "!self.contains('//')");
    assert_eq!(
        cel["message"],
        "must not contain an empty path segment (//) [path.no_empty_segment]"
    );
    // Oneof members are optional properties: never in `required`.
    assert!(route_match.get("required").is_none());

    let backend = &route["properties"]["backend"];
    assert_eq!(backend["required"], serde_json::json!(["service"]));
    // `required` on an implicit-presence string: present and non-empty.
    assert_eq!(backend["properties"]["service"]["minLength"], 1);
    let port = &backend["properties"]["port"];
    assert_eq!(
        (
            port["type"].as_str(),
            port["minimum"].as_i64(),
            port["maximum"].as_i64()
        ),
        (Some("integer"), Some(0), Some(65535))
    );

    let tls = &spec["properties"]["tls"];
    assert_eq!(tls["required"], serde_json::json!(["provider", "secretName"]));
    assert_eq!(
        tls["properties"]["provider"]["enum"],
        serde_json::json!(["KUBERNETES", "AWS_SECRETS_MANAGER"])
    );
    assert!(!spec["required"].as_array().unwrap().contains(&"tls".into()));

    let condition = &root["properties"]["status"]["properties"]["conditions"]["items"];
    let generation = &condition["properties"]["observedGeneration"];
    assert_eq!(
        (generation["format"].as_str(), generation["minimum"].as_i64()),
        (Some("int64"), Some(0))
    );
    assert_eq!(
        condition["properties"]["status"]["enum"],
        serde_json::json!(["True", "False", "Unknown"])
    );
    assert_eq!(
        condition["required"],
        serde_json::json!(["lastTransitionTime", "reason", "status", "type"])
    );
}

#[test]
fn output_is_deterministic_and_the_json_schema_is_the_yaml_one() {
    let first = outputs();
    assert_eq!(first, outputs());
    assert!(file(&first, CRD_FILE).starts_with("# @generated by cargo xtask codegen"));
    let crd: Value = serde_saphyr::from_str(&file(&first, CRD_FILE)).unwrap();
    let json: Value = serde_json::from_str(&file(&first, SCHEMA_FILE)).unwrap();
    assert_eq!(schema(&crd), &json);
}

#[test]
fn the_names_are_generated_as_rust_constants_once() {
    // The constants the Rust crates read, and the CRD's names, from one place.
    let context = common::api_context();
    let files = xtask::generators::run(
        &context,
        &xtask::plan::Plan::load(&xtask::workspace_root())
            .unwrap()
            .steps
            .into_iter()
            .find(|s| s.generator == xtask::plan::Generator::Prost)
            .unwrap(),
    )
    .unwrap();
    let types = files.iter().find(|f| f.path.ends_with("aether.config.v1.rs")).unwrap();
    let code = std::str::from_utf8(&types.contents).unwrap();
    for expected in [
        "pub const GROUP: &str = \"config.aether.io\";",
        "pub const VERSION: &str = \"v1\";",
        "pub const API_VERSION: &str = \"config.aether.io/v1\";",
        "pub const KIND: &str = \"VirtualHost\";",
        "pub const PLURAL: &str = \"virtualhosts\";",
        "pub const SHORT_NAME: &str = \"vh\";",
    ] {
        assert!(code.contains(expected), "{expected} not in the generated types");
    }
    let crd = crd();
    assert_eq!(crd["spec"]["group"], "config.aether.io");
    assert_eq!(crd["spec"]["names"]["plural"], "virtualhosts");
}

#[test]
fn kube_attributes_carry_the_crd_constants() {
    let attributes = kube_attributes().join("\n");
    for expected in [
        "group = \"config.aether.io\"",
        "version = \"v1\"",
        "kind = \"VirtualHost\"",
        "plural = \"virtualhosts\"",
        "shortname = \"vh\"",
        "namespaced",
        "status = \"VirtualHostStatus\"",
        "schema = \"manual\"",
        r#"printcolumn = "{\"name\":\"Routes\",\"type\":\"integer\",\"jsonPath\":\".status.routeCount\""#,
    ] {
        assert!(attributes.contains(expected), "{expected} not in {attributes}");
    }
}

/// Maps message `t.M` of a small proto, as codegen would.
fn map_source(body: &str) -> Result<Value> {
    let context = common::small_proto(body)?;
    message_schema(&context.api, "t.M")
}

fn refusal(body: &str) -> String {
    match map_source(body) {
        Ok(node) => panic!("mapped {body} to {node:?}"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn an_unmappable_rule_fails_naming_the_rule_and_the_field() {
    let err = refusal(
        "message I { string s = 1; }\n\
         message M { repeated I items = 1 [(buf.validate.field).repeated.unique = true]; }\n",
    );
    assert!(err.contains("repeated.unique") && err.contains("t.M.items"), "{err}");

    let err = refusal(
        "message M { string host = 1 [(buf.validate.field).required = true, \
         (buf.validate.field).string.max_len = 9, (buf.validate.field).cel = \
         {id: \"host.valid\", message: \"a host\", expression: \"this.isHostname()\"}]; }\n",
    );
    assert!(
        err.contains("host.valid") && err.contains("t.M.host") && err.contains("isHostname"),
        "{err}"
    );

    let err = refusal("message M { bytes b = 1 [(buf.validate.field).bytes.prefix = \"x\"]; }\n");
    assert!(err.contains("bytes.prefix") && err.contains("t.M.b"), "{err}");
}

#[test]
fn cel_on_an_unbounded_string_fails_naming_the_rule() {
    let err = refusal(
        "message M { string name = 1 [features.field_presence = EXPLICIT, (buf.validate.field).cel = \
         {id: \"name.lower\", message: \"lower case\", expression: \"this.lowerAscii() == this\"}]; }\n",
    );
    assert!(err.contains("name.lower") && err.contains("lowerAscii"), "{err}");
    let err = refusal(
        "message M { string name = 1 [features.field_presence = EXPLICIT, (buf.validate.field).cel = \
         {id: \"name.short\", message: \"short\", expression: \"this.size() < 9\"}]; }\n",
    );
    assert!(
        err.contains("name.short") && err.contains("t.M.name") && err.contains("max_len"),
        "{err}"
    );
}

#[test]
fn maps_required_and_bounds_of_other_scalars() {
    let node = map_source(
        "enum Color { COLOR_UNSPECIFIED = 0; COLOR_RED = 1; }\n\
         message M {\n\
           int32 signed = 1 [(buf.validate.field).required = true];\n\
           uint32 count = 2 [(buf.validate.field).required = true, (buf.validate.field).uint32.lt = 10];\n\
           int64 above = 3 [(buf.validate.field).int64.gt = 5];\n\
           Color color = 4;\n\
           oneof choice { string a = 5; string b = 6; string c = 7; }\n\
         }\n",
    )
    .unwrap();
    let value = &node;
    let p = &value["properties"];
    assert_eq!(p["signed"]["x-kubernetes-validations"][0]["rule"], "self != 0");
    assert_eq!(
        (p["count"]["minimum"].as_i64(), p["count"]["maximum"].as_i64()),
        (Some(1), Some(10))
    );
    assert_eq!(p["count"]["exclusiveMaximum"], true);
    assert_eq!(
        (p["above"]["minimum"].as_i64(), p["above"]["exclusiveMinimum"].as_bool()),
        (Some(5), Some(true))
    );
    // Not required: the zero value stays allowed.
    assert_eq!(p["color"]["enum"], serde_json::json!(["UNSPECIFIED", "RED"]));
    // gt 5 rejects the default 0, so the property must be present.
    assert_eq!(value["required"], serde_json::json!(["above", "count", "signed"]));
    assert_eq!(
        value["x-kubernetes-validations"][0]["rule"],
        "[has(self.a), has(self.b), has(self.c)].filter(x, x).size() <= 1"
    );
}
