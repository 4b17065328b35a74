//! The resource's names (group, version, kind, plural, short name,
//! categories), its root description, its printer columns, and the kube-derive attributes written from them, so
//! that `VirtualHost::crd()` and the YAML cannot drift.

use super::node::{Node, Obj};

pub const GROUP: &str = "config.aether.io";
pub const VERSION: &str = "v1";
pub const KIND: &str = "VirtualHost";
pub const PLURAL: &str = "virtualhosts";
pub const SINGULAR: &str = "virtualhost";
pub const SHORT_NAME: &str = "vh";
/// The categories the resource belongs to: `kubectl get aether` lists every
/// resource of the `aether` category.
pub const CATEGORIES: [&str; 1] = ["aether"];
/// The root schema's description: what `kubectl explain virtualhost` prints.
/// The spec's and status's own descriptions come from the proto.
pub const DESCRIPTION: &str = "A VirtualHost routes HTTP requests for one or more external hostnames, \
by path prefix or exact path, to services of the mesh, with optional TLS termination at the edge. \
`spec` is the desired state; `status` is written by the controller.";
/// The proto messages behind `.spec` and `.status`.
pub const SPEC_MESSAGE: &str = "aether.config.v1.VirtualHostSpec";
pub const STATUS_MESSAGE: &str = "aether.config.v1.VirtualHostStatus";
/// The Rust name of the status type, in the same module as the spec.
pub const STATUS_RUST_TYPE: &str = "VirtualHostStatus";
/// The CRD file's name.
pub const CRD_FILE: &str = "virtualhosts.config.aether.io.yaml";
/// The schema file's name.
pub const SCHEMA_FILE: &str = "virtualhost.schema.json";

/// A custom resource: its names, and the proto messages behind `.spec` and
/// `.status`.
pub struct Resource {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub short_name: &'static str,
    /// `spec.names.categories`; may be empty.
    pub categories: &'static [&'static str],
    /// The root schema's description; empty for none.
    pub description: &'static str,
    pub spec_message: &'static str,
    /// The status message, served through the status subresource.
    pub status_message: Option<&'static str>,
    pub print_columns: &'static [PrintColumn],
}

impl Resource {
    /// `<plural>.<group>.yaml`.
    pub fn crd_file(&self) -> String {
        format!("{}.{}.yaml", self.plural, self.group)
    }

    /// `<singular>.schema.json`.
    pub fn schema_file(&self) -> String {
        format!("{}.schema.json", self.singular)
    }
}

impl Resource {
    /// `apiVersion` of its objects: `<group>/<version>`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// The names as Rust constants, for the module of the spec's type:
    /// written once here, read by every crate that names the resource.
    pub fn rust_constants(&self) -> String {
        let kind = self.kind;
        let names = [
            (
                "GROUP",
                format!("The API group of the `{kind}` custom resource."),
                self.group.to_owned(),
            ),
            (
                "VERSION",
                format!("The version of the `{kind}` custom resource."),
                self.version.to_owned(),
            ),
            (
                "API_VERSION",
                format!("The `apiVersion` of `{kind}` objects: `<group>/<version>`."),
                self.api_version(),
            ),
            ("KIND", format!("The `kind` of `{kind}` objects."), kind.to_owned()),
            (
                "PLURAL",
                format!("The plural name of the `{kind}` resource (its REST path, RBAC rules)."),
                self.plural.to_owned(),
            ),
            (
                "SINGULAR",
                format!("The singular name of the `{kind}` resource."),
                self.singular.to_owned(),
            ),
            (
                "SHORT_NAME",
                format!(
                    "The short name of the `{kind}` resource (`kubectl get {}`).",
                    self.short_name
                ),
                self.short_name.to_owned(),
            ),
        ];
        let mut code = String::new();
        for (name, doc, value) in names {
            code.push_str(&format!("/// {doc}\npub const {name}: &str = {value:?};\n"));
        }
        code
    }
}

/// The VirtualHost resource.
pub const VIRTUAL_HOST: Resource = Resource {
    group: GROUP,
    version: VERSION,
    kind: KIND,
    plural: PLURAL,
    singular: SINGULAR,
    short_name: SHORT_NAME,
    categories: &CATEGORIES,
    description: DESCRIPTION,
    spec_message: SPEC_MESSAGE,
    status_message: Some(STATUS_MESSAGE),
    print_columns: &PRINT_COLUMNS,
};

/// One `additionalPrinterColumns` entry.
pub struct PrintColumn {
    pub name: &'static str,
    pub type_: &'static str,
    pub json_path: &'static str,
    pub description: &'static str,
    /// 0: always shown; 1: only with `kubectl get -o wide`.
    pub priority: i32,
}

/// The columns `kubectl get virtualhosts` shows. Setting any column replaces
/// the default Age column, so Age is listed again.
///
/// Kubernetes' column JSONPath has no functions (no `length()`), so the
/// Routes column reads the count the controller writes to the status
/// (`status.routeCount`), as Deployments show their replica counts.
///
/// Accepted and Reason read the `Accepted` condition with a JSONPath filter,
/// Programmed the `Programmed` condition, as Gateway API's resources show
/// theirs; `status.conditions` is a list
/// map keyed by `type`, so the filter finds at most one condition.
pub const PRINT_COLUMNS: [PrintColumn; 6] = [
    PrintColumn {
        name: "Hosts",
        type_: "string",
        json_path: ".spec.hosts",
        description: "The hostnames this VirtualHost serves.",
        priority: 0,
    },
    PrintColumn {
        name: "Routes",
        type_: "integer",
        json_path: ".status.routeCount",
        description: "How many routes the edge serves (written by the controller).",
        priority: 0,
    },
    PrintColumn {
        name: "Accepted",
        type_: "string",
        json_path: ".status.conditions[?(@.type==\"Accepted\")].status",
        description: "Whether the controller accepted the VirtualHost: True, False or Unknown.",
        priority: 0,
    },
    PrintColumn {
        name: "Reason",
        type_: "string",
        json_path: ".status.conditions[?(@.type==\"Accepted\")].reason",
        description: "Why the VirtualHost is or is not accepted (such as HostConflict).",
        priority: 0,
    },
    PrintColumn {
        name: "Programmed",
        type_: "string",
        json_path: ".status.conditions[?(@.type==\"Programmed\")].status",
        description: "Whether the edge's Envoys serve the VirtualHost's current generation: True, False or Unknown.",
        priority: 0,
    },
    PrintColumn {
        name: "Age",
        type_: "date",
        json_path: ".metadata.creationTimestamp",
        description: "",
        priority: 0,
    },
];

/// The attributes that make `VirtualHostSpec` a kube `CustomResource` (message
/// `SPEC_MESSAGE`), written from the constants above.
pub fn kube_attributes() -> Vec<String> {
    let mut kube = vec![
        format!("group = {GROUP:?}"),
        format!("version = {VERSION:?}"),
        format!("kind = {KIND:?}"),
        format!("plural = {PLURAL:?}"),
        format!("singular = {SINGULAR:?}"),
        format!("shortname = {SHORT_NAME:?}"),
    ];
    kube.extend(CATEGORIES.iter().map(|c| format!("category = {c:?}")));
    kube.extend([
        "namespaced".to_owned(),
        format!("status = {STATUS_RUST_TYPE:?}"),
        // The schema is the generated one (crates/aether-api/src/kube.rs),
        // not one schemars derives from the Rust structs.
        "schema = \"manual\"".to_owned(),
        format!(
            "doc = {:?}",
            "A VirtualHost custom resource: `VirtualHostSpec` and `VirtualHostStatus` with Kubernetes metadata."
        ),
    ]);
    for column in &PRINT_COLUMNS {
        // The JSON form kube-derive accepts: the list form repeats `type_`
        // and friends per column, which clippy reports as duplicated attributes.
        let json = serde_json::to_string(&Node::from(column_definition(column))).expect("a map of strings");
        kube.push(format!("printcolumn = {json:?}"));
    }
    vec![
        "#[cfg_attr(feature = \"kube\", derive(::kube::CustomResource))]".to_owned(),
        format!("#[cfg_attr(feature = \"kube\", kube({}))]", kube.join(", ")),
    ]
}

/// One `additionalPrinterColumns` entry, as the CRD and kube-derive spell it.
pub fn column_definition(column: &PrintColumn) -> Obj {
    let mut definition = Obj::new();
    definition.set("name", column.name);
    definition.set("type", column.type_);
    definition.set("jsonPath", column.json_path);
    if !column.description.is_empty() {
        definition.set("description", column.description);
    }
    if column.priority != 0 {
        definition.set("priority", Node::Int(column.priority.into()));
    }
    definition
}
