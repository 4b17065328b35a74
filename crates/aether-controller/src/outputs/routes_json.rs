//! `routes.json` rendered one virtual host at a time.
//!
//! Envoy's JSON of a route configuration is, like its binary form, its
//! virtual hosts one after another inside a fixed frame. Rendering every
//! route through prost-reflect was most of a pass's cost at scale (3.4 s at
//! 50,000 objects), though a change touches one virtual host or a few. So
//! the JSON of each virtual host is kept, keyed by the buffer the projection
//! shares for it between snapshots ([`Snapshot::virtual_hosts`]), and only
//! virtual hosts new to this snapshot are rendered; the frame (version, name,
//! the settings after the virtual hosts) is rendered each time, around a
//! marker virtual host whose place gives the indentation. The bytes are the
//! ones [`whole`] writes for the whole message (tested on every change).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use aether_edge_envoy::descriptors;
use aether_projection::{RenderError, RouteTable, Snapshot};
use envoy_types::pb::envoy::config::route::v3::VirtualHost;
use prost::Message as _;
use prost::bytes::Bytes;
use prost_reflect::{DynamicMessage, Value as ReflectValue};

use super::{ROUTE_CONFIGURATION_TYPE, pretty};

/// The marker virtual host's name: no object is named so (a key is
/// `namespace/name`, both DNS labels).
const MARKER: &str = "\u{1}virtual hosts go here\u{1}";

/// The JSON of the virtual hosts of the last rendering, reused by the next.
///
/// Clones share one memo: what it holds is a function of the bytes it is
/// keyed by, so sharing it changes no output.
#[derive(Clone, Default)]
pub struct RoutesJson {
    memo: Arc<Mutex<Memo>>,
}

#[derive(Default)]
struct Memo {
    /// The indentation the entries are rendered with (the frame's).
    indent: Vec<u8>,
    /// Keyed by the encoded virtual host's address and length.
    entries: HashMap<(usize, usize), Rendered>,
}

/// One virtual host's JSON, indented as in the file, so that a rendering
/// is a concatenation.
struct Rendered {
    /// Held so that its address, part of the key, is not reused while the
    /// entry lives.
    _source: Bytes,
    json: Box<[u8]>,
}

impl std::fmt::Debug for RoutesJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.memo.lock().unwrap_or_else(PoisonError::into_inner).entries.len();
        f.debug_struct("RoutesJson").field("virtual_hosts_held", &held).finish()
    }
}

impl RoutesJson {
    /// `routes.json` for `snapshot`: [`whole`]'s bytes, rendering only the
    /// virtual hosts not rendered for the previous call. Afterwards the memo
    /// holds exactly this snapshot's virtual hosts.
    pub fn render(&self, snapshot: &Snapshot) -> Result<Vec<u8>, RenderError> {
        let table = snapshot.routes();
        let version = table.version();
        if table.is_empty() {
            // No `virtualHosts` field at all; nothing to keep.
            self.memo.lock().unwrap_or_else(PoisonError::into_inner).entries.clear();
            return whole(&version, &table.encode());
        }
        let virtual_hosts = table.virtual_hosts();
        let Frame { head, indent, tail } = frame(&version, table)?;
        let mut memo = std::mem::take(&mut *self.memo.lock().unwrap_or_else(PoisonError::into_inner));
        if memo.indent != indent {
            memo.entries.clear();
        }
        let mut next = HashMap::with_capacity(virtual_hosts.len());
        let mut size = head.len() + tail.len();
        for virtual_host in virtual_hosts {
            let key = (virtual_host.as_ptr() as usize, virtual_host.len());
            let rendered = match memo.entries.remove(&key) {
                Some(rendered) => rendered,
                None => Rendered {
                    _source: virtual_host.clone(),
                    json: indented(&virtual_host_json(virtual_host)?, &indent).into(),
                },
            };
            size += rendered.json.len() + 2 + indent.len();
            next.insert(key, rendered);
        }
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&head);
        for (i, virtual_host) in table.virtual_hosts().enumerate() {
            if i > 0 {
                out.extend_from_slice(b",\n");
                out.extend_from_slice(&indent);
            }
            let key = (virtual_host.as_ptr() as usize, virtual_host.len());
            out.extend_from_slice(&next[&key].json);
        }
        out.extend_from_slice(&tail);
        *self.memo.lock().unwrap_or_else(PoisonError::into_inner) = Memo { indent, entries: next };
        Ok(out)
    }
}

/// `routes.json` rendered whole: `{"versionInfo": …, "resources":
/// [RouteConfiguration with "@type"]}`. The resource is a
/// `google.protobuf.Any` of Envoy's descriptors, which prost-reflect writes
/// as Envoy's JSON with `@type` first; serialized straight to bytes, since
/// going through a `serde_json::Value` tree cost about twice as much.
pub fn whole(version: &str, route_configuration: &[u8]) -> Result<Vec<u8>, RenderError> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct DiscoveryResponse<'a> {
        version_info: &'a str,
        resources: [&'a DynamicMessage; 1],
    }
    let any = descriptors::pool()
        .get_message_by_name("google.protobuf.Any")
        .ok_or_else(|| RenderError::Descriptor("google.protobuf.Any is not in Envoy's descriptors".into()))?;
    let mut resource = DynamicMessage::new(any);
    resource.set_field_by_name("type_url", ReflectValue::String(ROUTE_CONFIGURATION_TYPE.into()));
    resource.set_field_by_name(
        "value",
        ReflectValue::Bytes(Bytes::copy_from_slice(route_configuration)),
    );
    pretty(&DiscoveryResponse {
        version_info: version,
        resources: [&resource],
    })
}

/// The whole file's bytes before the first virtual host, the indentation of
/// the virtual hosts' lines, and the bytes after the last: [`whole`] of the
/// route configuration with its virtual hosts replaced by the marker.
fn frame(version: &str, table: &RouteTable) -> Result<Frame, RenderError> {
    let marker = VirtualHost {
        name: MARKER.to_owned(),
        ..Default::default()
    };
    let with_marker = table.encode_with(&[&marker.encode_to_vec()]);
    let rendered = whole(version, &with_marker)?;

    let marker_json = virtual_host_json(&marker.encode_to_vec())?;
    let name_json = serde_json::to_vec(MARKER).map_err(RenderError::Json)?;
    let at = rendered
        .windows(name_json.len())
        .position(|window| window == name_json)
        .and_then(|name_at| rendered[..name_at].iter().rposition(|byte| *byte == b'{'))
        .ok_or_else(|| RenderError::Descriptor("the marker virtual host is not in the rendered frame".into()))?;
    let line_start = rendered[..at]
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(0, |i| i + 1);
    let indent = rendered[line_start..at].to_vec();
    let marker_indented = indented(&marker_json, &indent);
    if !rendered[at..].starts_with(&marker_indented) {
        return Err(RenderError::Descriptor(
            "the marker virtual host is not indented as expected".into(),
        ));
    }
    Ok(Frame {
        head: rendered[..at].to_vec(),
        indent,
        tail: rendered[at + marker_indented.len()..].to_vec(),
    })
}

/// The bytes of `routes.json` around its virtual hosts.
struct Frame {
    /// Up to the first virtual host's `{`.
    head: Vec<u8>,
    /// What starts each line of a virtual host's JSON.
    indent: Vec<u8>,
    /// From after the last virtual host's `}`.
    tail: Vec<u8>,
}

/// One encoded `VirtualHost` as pretty JSON, unindented.
fn virtual_host_json(encoded: &[u8]) -> Result<Vec<u8>, RenderError> {
    let descriptor = descriptors::pool()
        .get_message_by_name("envoy.config.route.v3.VirtualHost")
        .ok_or_else(|| {
            RenderError::Descriptor("envoy.config.route.v3.VirtualHost is not in Envoy's descriptors".into())
        })?;
    let message =
        DynamicMessage::decode(descriptor, encoded).map_err(|err| RenderError::Descriptor(err.to_string()))?;
    serde_json::to_vec_pretty(&message).map_err(RenderError::Json)
}

/// `json` with `indent` after each of its newlines (JSON strings hold
/// none raw: serde_json escapes them).
fn indented(json: &[u8], indent: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len());
    for (i, line) in json.split(|byte| *byte == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
            out.extend_from_slice(indent);
        }
        out.extend_from_slice(line);
    }
    out
}
