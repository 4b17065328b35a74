//! A `DiscoveryResponse` as gRPC message bytes around shared buffers.
//!
//! envoy-types' `Any.value` is a `Vec<u8>`, and tonic's encoder copies each
//! message into a buffer of its own: every response held its own copy of
//! the configuration until its client read it (128 unread streams at 5,000
//! objects: 3.8 GB). Here a response is a list of pieces: the gRPC frame
//! header and the fields around each resource are small buffers of their
//! own, and each resource's encoding is the `Bytes` its version holds,
//! shared by every response that carries it. The bytes are those
//! envoy-types would encode (tested), so Envoy, or any client, decodes them
//! as before.

use bytes::{BufMut, Bytes, BytesMut};
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len};

use crate::resources::Encoded;

/// Field numbers of `envoy.service.discovery.v3.DiscoveryResponse`.
const VERSION_INFO: u32 = 1;
const RESOURCES: u32 = 2;
const TYPE_URL: u32 = 4;
const NONCE: u32 = 5;
/// Field numbers of `google.protobuf.Any`.
pub(crate) const ANY_TYPE_URL: u32 = 1;
pub(crate) const ANY_VALUE: u32 = 2;

/// The encoded length of a length-delimited field `tag` of `len` bytes.
pub(crate) fn delimited_len(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

/// A string or bytes field as prost encodes a proto3 one: left out when empty.
pub(crate) fn field_len(tag: u32, len: usize) -> usize {
    if len == 0 { 0 } else { delimited_len(tag, len) }
}

pub(crate) fn put_string(tag: u32, value: &str, buf: &mut BytesMut) {
    if !value.is_empty() {
        encode_key(tag, WireType::LengthDelimited, buf);
        encode_varint(value.len() as u64, buf);
        buf.put_slice(value.as_bytes());
    }
}

/// One response as a gRPC message frame (uncompressed), in pieces:
/// `version_info`, each of `resources` as an `Any` of `type_url`, then
/// `type_url` and `nonce`, in the order prost encodes them. The resources'
/// buffers are pieces of their own, not copied.
pub(crate) fn response(type_url: &str, version: &str, resources: &[&Encoded], nonce: &str) -> Vec<Bytes> {
    let any_len = |value: &Encoded| field_len(ANY_TYPE_URL, type_url.len()) + field_len(ANY_VALUE, value.len());
    let message_len = field_len(VERSION_INFO, version.len())
        + resources
            .iter()
            .map(|value| delimited_len(RESOURCES, any_len(value)))
            .sum::<usize>()
        + field_len(TYPE_URL, type_url.len())
        + field_len(NONCE, nonce.len());
    let shared: usize = resources.iter().map(|value| value.len()).sum();

    let mut pieces = Vec::with_capacity(2 * resources.len() + 1);
    let mut head = BytesMut::with_capacity(5 + message_len - shared);
    // gRPC framing: a compressed flag and the message's length (big endian).
    head.put_u8(0);
    // Whoever publishes keeps each resource far below 4 GiB (the
    // controller's projection and secrets checks); saturating keeps a bug
    // there from panicking here.
    head.put_u32(u32::try_from(message_len).unwrap_or(u32::MAX));
    put_string(VERSION_INFO, version, &mut head);
    for value in resources {
        encode_key(RESOURCES, WireType::LengthDelimited, &mut head);
        encode_varint(any_len(value) as u64, &mut head);
        put_string(ANY_TYPE_URL, type_url, &mut head);
        if !value.is_empty() {
            encode_key(ANY_VALUE, WireType::LengthDelimited, &mut head);
            encode_varint(value.len() as u64, &mut head);
            pieces.push(head.split().freeze());
            value.push_pieces(&mut pieces);
        }
    }
    put_string(TYPE_URL, type_url, &mut head);
    put_string(NONCE, nonce, &mut head);
    pieces.push(head.freeze());
    pieces
}

#[cfg(test)]
mod tests {
    use envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse;
    use envoy_types::pb::google::protobuf::Any;
    use prost::Message;

    use super::*;
    use crate::resources::Pieces as _;

    const TYPE: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";

    fn envoy_types(type_url: &str, version: &str, resources: &[&Bytes], nonce: &str) -> Vec<u8> {
        DiscoveryResponse {
            version_info: version.to_owned(),
            resources: resources
                .iter()
                .map(|value| Any {
                    type_url: type_url.to_owned(),
                    value: value.to_vec(),
                })
                .collect(),
            type_url: type_url.to_owned(),
            nonce: nonce.to_owned(),
            ..DiscoveryResponse::default()
        }
        .encode_to_vec()
    }

    fn bytes(size: usize, seed: usize) -> Bytes {
        Bytes::from((0..size).map(|i| ((i + seed) % 251) as u8).collect::<Vec<u8>>())
    }

    #[test]
    fn the_pieces_are_the_envoy_types_encoding_framed_and_share_the_resources() {
        // Lengths around the varint boundaries (127/128, 16383/16384), an
        // empty resource, none, and several (SDS).
        let sizes: &[&[usize]] = &[
            &[],
            &[0],
            &[1],
            &[100],
            &[127],
            &[128],
            &[16_383],
            &[16_384],
            &[300_000],
            &[3, 0, 130, 20_000],
        ];
        for sizes in sizes {
            let values: Vec<Bytes> = sizes.iter().enumerate().map(|(i, size)| bytes(*size, i)).collect();
            let resources: Vec<&Bytes> = values.iter().collect();
            for type_url in [TYPE, ""] {
                for (version, nonce) in [("1c77db69cc3958f0", "1"), ("", "42"), ("v", "")] {
                    let encoded: Vec<Encoded> = resources
                        .iter()
                        .map(|value| Encoded::Buffer((*value).clone()))
                        .collect();
                    let encoded: Vec<&Encoded> = encoded.iter().collect();
                    let pieces = response(type_url, version, &encoded, nonce);
                    let bytes: Vec<u8> = pieces.iter().flat_map(|piece| piece.iter().copied()).collect();
                    let expected = envoy_types(type_url, version, &resources, nonce);
                    assert_eq!(bytes[0], 0, "not compressed");
                    assert_eq!(
                        u32::from_be_bytes(bytes[1..5].try_into().unwrap()) as usize,
                        expected.len()
                    );
                    assert_eq!(&bytes[5..], expected.as_slice(), "{sizes:?} {version:?} {nonce:?}");
                    // Each non-empty resource is a piece: its shared buffer itself.
                    for value in values.iter().filter(|value| !value.is_empty()) {
                        assert!(
                            pieces.iter().any(|piece| piece.as_ptr() == value.as_ptr()),
                            "{sizes:?}: a resource was copied"
                        );
                    }
                    let non_empty = values.iter().filter(|value| !value.is_empty()).count();
                    assert_eq!(pieces.len(), 2 * non_empty + 1);
                }
            }
        }
    }

    /// Three buffers, one empty, sent as one encoding.
    #[derive(Debug)]
    struct Three([Bytes; 3]);

    impl crate::resources::Pieces for Three {
        fn encoded_len(&self) -> usize {
            self.0.iter().map(Bytes::len).sum()
        }
        fn push_pieces(&self, pieces: &mut Vec<Bytes>) {
            pieces.extend(self.0.iter().filter(|piece| !piece.is_empty()).cloned());
        }
        fn to_bytes(&self) -> Bytes {
            self.0.concat().into()
        }
        fn version(&self) -> String {
            "three".to_owned()
        }
        fn same_as(&self, _: &dyn crate::resources::Pieces) -> bool {
            false
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    #[test]
    fn an_encoding_in_pieces_is_sent_as_its_pieces() {
        let three = Three([bytes(300, 1), Bytes::new(), bytes(20_000, 2)]);
        let whole = three.to_bytes();
        let shared = three.0.clone();
        let encoded = Encoded::Pieces(std::sync::Arc::new(three));
        let pieces = response(TYPE, "v1", &[&encoded], "3");
        let bytes: Vec<u8> = pieces.iter().flat_map(|piece| piece.iter().copied()).collect();
        assert_eq!(&bytes[5..], envoy_types(TYPE, "v1", &[&whole], "3").as_slice());
        for piece in shared.iter().filter(|piece| !piece.is_empty()) {
            assert!(
                pieces.iter().any(|sent| sent.as_ptr() == piece.as_ptr()),
                "a piece was copied"
            );
        }
        assert_eq!(pieces.len(), 4, "the head, two pieces, the tail");
    }
}
