//! A `DeltaDiscoveryResponse` as gRPC message bytes around shared buffers,
//! as `sotw/wire.rs` makes a `DiscoveryResponse`: each resource's encoding
//! is the `Bytes` its publication holds, shared by every response.

use bytes::{BufMut, Bytes, BytesMut};
use prost::encoding::{WireType, encode_key, encode_varint};

use crate::resources::Item;
use crate::sotw::wire::{ANY_TYPE_URL, ANY_VALUE, delimited_len, field_len, put_string};

/// Field numbers of `envoy.service.discovery.v3.DeltaDiscoveryResponse`.
const RESOURCES: u32 = 2;
const TYPE_URL: u32 = 4;
const NONCE: u32 = 5;
const REMOVED_RESOURCES: u32 = 6;
/// Field numbers of `envoy.service.discovery.v3.Resource`.
const RESOURCE_VERSION: u32 = 1;
const RESOURCE_BODY: u32 = 2;
const RESOURCE_NAME: u32 = 3;

/// One delta response as a gRPC message frame (uncompressed), in pieces:
/// each of `resources` as a `Resource` (its version, its body as an `Any`
/// of `type_url`, its name), then `type_url`, `nonce` and the names
/// `removed`, in the order prost encodes them. The bodies are pieces of
/// their own, not copied.
pub(crate) fn response(type_url: &str, resources: &[(&str, &Item)], removed: &[&str], nonce: &str) -> Vec<Bytes> {
    let any_len = |item: &Item| field_len(ANY_TYPE_URL, type_url.len()) + field_len(ANY_VALUE, item.body.len());
    let resource_len = |name: &str, item: &Item| {
        field_len(RESOURCE_VERSION, item.version.len())
            + delimited_len(RESOURCE_BODY, any_len(item))
            + field_len(RESOURCE_NAME, name.len())
    };
    let message_len = resources
        .iter()
        .map(|(name, item)| delimited_len(RESOURCES, resource_len(name, item)))
        .sum::<usize>()
        + field_len(TYPE_URL, type_url.len())
        + field_len(NONCE, nonce.len())
        + removed
            .iter()
            .map(|name| delimited_len(REMOVED_RESOURCES, name.len()))
            .sum::<usize>();
    let shared: usize = resources.iter().map(|(_, item)| item.body.len()).sum();

    let mut pieces = Vec::with_capacity(2 * resources.len() + 1);
    let mut head = BytesMut::with_capacity(5 + message_len - shared);
    head.put_u8(0);
    // Far below 4 GiB (see sotw/wire.rs); saturating keeps a bug from panicking.
    head.put_u32(u32::try_from(message_len).unwrap_or(u32::MAX));
    for (name, item) in resources {
        encode_key(RESOURCES, WireType::LengthDelimited, &mut head);
        encode_varint(resource_len(name, item) as u64, &mut head);
        put_string(RESOURCE_VERSION, &item.version, &mut head);
        encode_key(RESOURCE_BODY, WireType::LengthDelimited, &mut head);
        encode_varint(any_len(item) as u64, &mut head);
        put_string(ANY_TYPE_URL, type_url, &mut head);
        if !item.body.is_empty() {
            encode_key(ANY_VALUE, WireType::LengthDelimited, &mut head);
            encode_varint(item.body.len() as u64, &mut head);
            pieces.push(head.split().freeze());
            item.body.push_pieces(&mut pieces);
        }
        put_string(RESOURCE_NAME, name, &mut head);
    }
    put_string(TYPE_URL, type_url, &mut head);
    put_string(NONCE, nonce, &mut head);
    for name in removed {
        // A repeated string's every element is written, empty or not.
        encode_key(REMOVED_RESOURCES, WireType::LengthDelimited, &mut head);
        encode_varint(name.len() as u64, &mut head);
        head.put_slice(name.as_bytes());
    }
    pieces.push(head.freeze());
    pieces
}

#[cfg(test)]
mod tests {
    use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryResponse, Resource};
    use envoy_types::pb::google::protobuf::Any;
    use prost::Message;

    use super::*;
    use crate::resources::Encoded;

    const TYPE: &str = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret";

    type Named<'a> = (&'a str, &'a Item);

    fn envoy_types(type_url: &str, resources: &[(&str, &Item)], removed: &[&str], nonce: &str) -> Vec<u8> {
        DeltaDiscoveryResponse {
            resources: resources
                .iter()
                .map(|(name, item)| Resource {
                    name: (*name).to_owned(),
                    version: item.version.to_string(),
                    resource: Some(Any {
                        type_url: type_url.to_owned(),
                        value: item.body.to_bytes().to_vec(),
                    }),
                    ..Resource::default()
                })
                .collect(),
            type_url: type_url.to_owned(),
            nonce: nonce.to_owned(),
            removed_resources: removed.iter().map(|name| (*name).to_owned()).collect(),
            ..DeltaDiscoveryResponse::default()
        }
        .encode_to_vec()
    }

    #[test]
    fn the_pieces_are_the_envoy_types_encoding_framed_and_share_the_bodies() {
        let items: Vec<(String, Item)> = [0usize, 1, 127, 128, 16_384, 300_000]
            .iter()
            .enumerate()
            .map(|(i, size)| {
                let body = bytes::Bytes::from((0..*size).map(|b| ((b + i) % 251) as u8).collect::<Vec<u8>>());
                (format!("kubernetes://shop/cert-{i}"), Item::new(Encoded::Buffer(body)))
            })
            .collect();
        let all: Vec<(&str, &Item)> = items.iter().map(|(name, item)| (name.as_str(), item)).collect();
        let cases: [(&[Named], &[&str]); 5] = [
            (&[], &[]),
            (&all[..1], &[]),
            (&all, &[]),
            (&[], &["gone", ""]),
            (&all[2..], &["a", "b"]),
        ];
        for (resources, removed) in cases {
            for (type_url, nonce) in [(TYPE, "7"), ("", "")] {
                let pieces = response(type_url, resources, removed, nonce);
                let bytes: Vec<u8> = pieces.iter().flat_map(|piece| piece.iter().copied()).collect();
                let expected = envoy_types(type_url, resources, removed, nonce);
                assert_eq!(bytes[0], 0);
                assert_eq!(
                    u32::from_be_bytes(bytes[1..5].try_into().unwrap()) as usize,
                    expected.len()
                );
                assert_eq!(
                    &bytes[5..],
                    expected.as_slice(),
                    "{} resources, {removed:?}",
                    resources.len()
                );
                for (_, item) in resources.iter().filter(|(_, item)| !item.body.is_empty()) {
                    let Encoded::Buffer(body) = &item.body else {
                        unreachable!()
                    };
                    assert!(
                        pieces.iter().any(|piece| piece.as_ptr() == body.as_ptr()),
                        "a body was copied"
                    );
                }
            }
        }
    }
}
