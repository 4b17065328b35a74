//! Renderings of a [`Snapshot`]: Envoy's canonical proto3 JSON for the route
//! configuration (through Envoy's own descriptors), serde for the rest, and
//! binary protobuf.

use std::fmt;

use prost_reflect::DynamicMessage;
use serde::ser::{Error as _, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::snapshot::Snapshot;
use aether_edge_envoy::descriptors;

/// A snapshot could not be rendered.
#[derive(Debug)]
pub enum RenderError {
    /// The route configuration did not fit Envoy's descriptors (a mismatch
    /// between envoy-types' code and the checked-in descriptor set).
    Descriptor(String),
    /// JSON serialization failed.
    Json(serde_json::Error),
    /// YAML serialization failed.
    Yaml(String),
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Descriptor(err) => write!(f, "the route configuration does not fit Envoy's descriptors: {err}"),
            Self::Json(err) => write!(f, "rendering JSON: {err}"),
            Self::Yaml(err) => write!(f, "rendering YAML: {err}"),
        }
    }
}

impl std::error::Error for RenderError {}

/// The output formats of [`Snapshot::render`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The whole snapshot as pretty JSON.
    Json,
    /// The whole snapshot as YAML.
    Yaml,
    /// The route configuration alone, as binary protobuf (the other parts
    /// have no protobuf form).
    Binary,
}

impl Snapshot {
    /// The route configuration as a message of Envoy's descriptor, which
    /// serializes to Envoy's canonical proto3 JSON (lowerCamelCase names,
    /// default values omitted, wrappers as plain numbers).
    pub fn route_configuration_dynamic(&self) -> Result<DynamicMessage, RenderError> {
        DynamicMessage::decode(descriptors::route_configuration(), self.route_configuration_binary())
            .map_err(|err| RenderError::Descriptor(err.to_string()))
    }

    /// The route configuration alone, in Envoy's canonical JSON.
    pub fn route_configuration_json(&self) -> Result<String, RenderError> {
        serde_json::to_string_pretty(&self.route_configuration_dynamic()?).map_err(RenderError::Json)
    }

    /// The whole snapshot as pretty JSON: `routeConfiguration` (Envoy's
    /// canonical JSON), `dependencies`, `tlsSecrets` and `report`.
    ///
    /// ```
    /// use aether_projection::{ProjectionConfig, VirtualHostObject, project};
    ///
    /// let snapshot = project(Vec::<VirtualHostObject>::new(), &ProjectionConfig::default()).unwrap();
    /// let json: serde_json::Value = serde_json::from_str(&snapshot.to_json().unwrap()).unwrap();
    /// assert_eq!(json["routeConfiguration"]["name"], "aether-edge");
    /// ```
    pub fn to_json(&self) -> Result<String, RenderError> {
        serde_json::to_string_pretty(self).map_err(RenderError::Json)
    }

    /// The whole snapshot as YAML, with the same content as [`Snapshot::to_json`].
    pub fn to_yaml(&self) -> Result<String, RenderError> {
        // Through a JSON value: Envoy's JSON form decides the shape, and
        // numbers and strings are then written the way JSON typed them.
        let value = serde_json::to_value(self).map_err(RenderError::Json)?;
        serde_saphyr::to_string(&value).map_err(|err| RenderError::Yaml(err.to_string()))
    }

    /// The snapshot in `format`, as bytes to write out.
    pub fn render(&self, format: Format) -> Result<Vec<u8>, RenderError> {
        Ok(match format {
            Format::Json => {
                let mut json = self.to_json()?;
                json.push('\n');
                json.into_bytes()
            }
            Format::Yaml => self.to_yaml()?.into_bytes(),
            Format::Binary => self.route_configuration_binary().to_vec(),
        })
    }
}

impl Serialize for Snapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let route_configuration = self.route_configuration_dynamic().map_err(S::Error::custom)?;
        let mut snapshot = serializer.serialize_struct("Snapshot", 4)?;
        snapshot.serialize_field("routeConfiguration", &route_configuration)?;
        snapshot.serialize_field("dependencies", &*self.dependencies)?;
        snapshot.serialize_field("tlsSecrets", &*self.tls_secrets)?;
        snapshot.serialize_field("report", &*self.report)?;
        snapshot.end()
    }
}
