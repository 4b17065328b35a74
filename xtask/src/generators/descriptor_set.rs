//! `aether-descriptor-set`: the compiled descriptor sets, checked in so that
//! runtimes load the API without protoc.

use anyhow::Result;

use crate::descriptors::Descriptors;

pub fn generate(descriptors: &Descriptors) -> Result<Vec<(String, Vec<u8>)>> {
    Ok(vec![
        // As written, edition 2024, with imports: for buf and editions runtimes.
        ("aether.binpb".to_owned(), descriptors.editions.clone()),
        // Lowered to proto3, with imports: for prost-reflect and prost-protovalidate.
        ("aether.proto3.binpb".to_owned(), descriptors.proto3.clone()),
    ])
}
