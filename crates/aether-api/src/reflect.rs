//! The API's descriptors at run time, and the canonical proto3 JSON form.
//!
//! The descriptor set is the checked-in `generated/descriptors/aether.proto3.binpb`:
//! the edition-2024 descriptors lowered to proto3, which prost-reflect reads.

use std::sync::LazyLock;

use prost_reflect::{DescriptorPool, DynamicMessage, ReflectMessage, SerializeOptions};

/// The encoded descriptor set (proto3 form, with imports).
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!("../generated/descriptors/aether.proto3.binpb");

/// Every message and enum of the API, and their buf.validate options.
pub static DESCRIPTOR_POOL: LazyLock<DescriptorPool> = LazyLock::new(|| {
    // The bytes are generated and checked in; a test decodes them, so this
    // cannot fail in a released build.
    DescriptorPool::decode(FILE_DESCRIPTOR_SET).expect("the checked-in descriptor set decodes")
});

/// Writes `message` in canonical proto3 JSON: full enum names, 64-bit
/// integers as strings. For interop with other protobuf runtimes; manifests
/// use the Kubernetes form (the types' serde impls).
pub fn to_proto_json<M: ReflectMessage>(message: &M) -> String {
    let dynamic = message.transcode_to_dynamic();
    let mut serializer = serde_json::Serializer::new(Vec::new());
    dynamic
        .serialize_with_options(&mut serializer, &SerializeOptions::new())
        .expect("serializing a valid message to a Vec cannot fail");
    String::from_utf8(serializer.into_inner()).expect("serde_json writes UTF-8")
}

/// Reads canonical proto3 JSON into `M`.
pub fn from_proto_json<M: ReflectMessage + Default>(json: &str) -> Result<M, ProtoJsonError> {
    let descriptor = M::default().descriptor();
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let dynamic =
        DynamicMessage::deserialize(descriptor, &mut deserializer).map_err(ProtoJsonError)?;
    deserializer.end().map_err(ProtoJsonError)?;
    dynamic
        .transcode_to()
        .map_err(|e| ProtoJsonError(serde::de::Error::custom(e)))
}

/// Why proto3 JSON did not decode: the position and what was wrong.
#[derive(Debug)]
pub struct ProtoJsonError(serde_json::Error);

impl std::fmt::Display for ProtoJsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid proto3 JSON: {}", self.0)
    }
}

impl std::error::Error for ProtoJsonError {}
