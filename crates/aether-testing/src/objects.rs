//! VirtualHost objects and manifests as tests write them, built one way.

use aether_api::object::VirtualHostObject;
use serde_json::{Map, Value, json};

/// A VirtualHost in the Kubernetes form, under construction.
#[derive(Clone, Debug)]
pub struct ObjectBuilder {
    metadata: Map<String, Value>,
    spec: Value,
}

/// VirtualHost `namespace/name` with an empty spec.
pub fn object(namespace: &str, name: &str) -> ObjectBuilder {
    let mut metadata = Map::new();
    metadata.insert("name".into(), name.into());
    metadata.insert("namespace".into(), namespace.into());
    ObjectBuilder {
        metadata,
        spec: json!({}),
    }
}

impl ObjectBuilder {
    /// Sets `metadata.creationTimestamp`.
    pub fn created(self, timestamp: &str) -> Self {
        self.metadata("creationTimestamp", timestamp.into())
    }

    /// Sets a `metadata` field (`generation`, `uid`, `resourceVersion`).
    pub fn metadata(mut self, field: &str, value: Value) -> Self {
        self.metadata.insert(field.into(), value);
        self
    }

    /// As an API server stores it: `metadata.generation` and a `resourceVersion`.
    pub fn stored(self, generation: i64) -> Self {
        self.metadata("generation", generation.into())
            .metadata("resourceVersion", "1".into())
    }

    /// Replaces the whole spec.
    pub fn spec(mut self, spec: Value) -> Self {
        self.spec = spec;
        self
    }

    /// Sets `spec.hosts`.
    pub fn hosts<S: AsRef<str>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.spec["hosts"] = hosts.into_iter().map(|host| Value::from(host.as_ref())).collect();
        self
    }

    /// Appends a route: `prefix` to `service` on its default port.
    pub fn route(self, prefix: &str, service: &str) -> Self {
        self.route_value(json!({"match": {"prefix": prefix}, "backend": {"service": service}}))
    }

    /// Appends a route as written (any match and action).
    pub fn route_value(mut self, route: Value) -> Self {
        match self.spec["routes"].as_array_mut() {
            Some(routes) => routes.push(route),
            None => self.spec["routes"] = json!([route]),
        }
        self
    }

    /// Sets one spec field (`tls`, `routeOrder`) as written.
    pub fn spec_field(mut self, field: &str, value: Value) -> Self {
        self.spec[field] = value;
        self
    }

    /// Sets `spec.tls`: the Kubernetes Secret `secret` of the namespace.
    pub fn tls(self, secret: &str) -> Self {
        self.spec_field("tls", json!({"secretName": secret, "provider": "KUBERNETES"}))
    }

    /// The whole object as an API server stores it.
    pub fn document(&self) -> Value {
        json!({
            "apiVersion": "config.aether.io/v1",
            "kind": "VirtualHost",
            "metadata": self.metadata,
            "spec": self.spec,
        })
    }

    /// One manifest document (JSON is YAML), with its `---` separator.
    pub fn manifest(&self) -> String {
        format!("---\n{}\n", self.document())
    }

    /// The object as readers hand it to consumers.
    pub fn build(&self) -> VirtualHostObject {
        let mut value = json!({"spec": self.spec});
        for field in ["namespace", "name", "creationTimestamp", "generation"] {
            if let Some(v) = self.metadata.get(field) {
                value[field] = v.clone();
            }
        }
        serde_json::from_value(value).expect("a VirtualHost object")
    }
}

impl From<&VirtualHostObject> for ObjectBuilder {
    /// The builder of an object already held (its identity, creation time and spec).
    fn from(held: &VirtualHostObject) -> Self {
        let builder = object(&held.namespace, &held.name).spec(serde_json::to_value(&held.spec).expect("a spec"));
        match held.creation_timestamp {
            Some(created) => builder.created(&created.to_string()),
            None => builder,
        }
    }
}

/// The manifest text of `objects`, one document each.
pub fn manifests<'a>(objects: impl IntoIterator<Item = &'a ObjectBuilder>) -> String {
    objects.into_iter().map(ObjectBuilder::manifest).collect()
}
