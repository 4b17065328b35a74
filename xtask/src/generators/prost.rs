//! `aether-prost`: the message and enum types, by prost-build.

use anyhow::{Context, Result};
use prost_build::{Config, Module};

use super::serde::kubernetes_derived_messages;
use super::{ApiFiles, RUST_HEADER};

pub fn generate(api: &ApiFiles) -> Result<Vec<(String, Vec<u8>)>> {
    let mut config = Config::new();
    // Maps iterate in key order, so validation reports them in a stable order.
    config.btree_map(["."]);
    for (name, _) in api.messages() {
        // Reflection (descriptors, dynamic messages, protovalidate) is opt-in.
        config.message_attribute(
            &name,
            "#[cfg_attr(feature = \"reflect\", derive(::prost_reflect::ReflectMessage))]",
        );
        config.message_attribute(
            &name,
            format!(
                "#[cfg_attr(feature = \"reflect\", prost_reflect(descriptor_pool = \"crate::reflect::DESCRIPTOR_POOL\", message_name = \"{}\"))]",
                &name[1..]
            ),
        );
    }
    // `VirtualHost`, the kube custom resource, derived on its spec (feature
    // `kube`), from the constants the CRD generator writes the YAML with.
    for attribute in super::crd::kube_attributes() {
        config.message_attribute(format!(".{}", super::crd::SPEC_MESSAGE), attribute);
    }
    for derived in kubernetes_derived_messages(api)? {
        for attribute in &derived.message_attributes {
            config.message_attribute(&derived.name, attribute);
        }
        for (field, attribute) in &derived.field_attributes {
            config.field_attribute(format!("{}.{field}", derived.name), attribute);
        }
    }

    let requests: Vec<_> = api
        .set
        .file
        .iter()
        .map(|file| (Module::from_protobuf_package_name(file.package()), file.clone()))
        .collect();
    let modules = config.generate(requests).context("prost-build")?;
    // The resource's names, in the module of its spec's type.
    let resource = &super::crd::VIRTUAL_HOST;
    let resource_module = Module::from_protobuf_package_name(
        resource
            .spec_message
            .rsplit_once('.')
            .map_or("", |(package, _)| package),
    );
    let mut files: Vec<_> = modules
        .into_iter()
        .map(|(module, mut code)| {
            if module == resource_module {
                code.push_str(&resource.rust_constants());
            }
            let code = code_in_docs_as_written(&code);
            (module.to_file_name_or("_"), format!("{RUST_HEADER}{code}").into_bytes())
        })
        .collect();
    files.sort();
    Ok(files)
}

/// `code` with the brackets prost-build escapes in doc comments (`\[`, so
/// that rustdoc reads no link) written back inside code: a fenced block
/// or a `code span` shows its text as it is, so `hosts: \[api\]` would
/// show its backslashes on docs.rs. Outside code the escapes stay.
fn code_in_docs_as_written(code: &str) -> String {
    let mut fenced = false;
    let mut out = String::with_capacity(code.len());
    for line in code.split_inclusive('\n') {
        let Some((indent, doc)) = line.split_once("///") else {
            out.push_str(line);
            continue;
        };
        if !indent.trim().is_empty() {
            out.push_str(line);
            continue;
        }
        out.push_str(indent);
        out.push_str("///");
        if doc.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push_str(doc);
        } else if fenced {
            out.push_str(&unescape_brackets(doc));
        } else {
            // Odd pieces between backticks are code spans.
            for (index, piece) in doc.split('`').enumerate() {
                if index > 0 {
                    out.push('`');
                }
                if index % 2 == 1 {
                    out.push_str(&unescape_brackets(piece));
                } else {
                    out.push_str(piece);
                }
            }
        }
    }
    out
}

fn unescape_brackets(text: &str) -> String {
    text.replace("\\[", "[").replace("\\]", "]")
}

#[cfg(test)]
mod tests {
    use super::code_in_docs_as_written;

    #[test]
    fn brackets_are_unescaped_in_code_only() {
        let generated = "/// Example:\n///\n/// ```yaml\n/// hosts: \\[api.example.com\\]\n/// ```\n/// A regex \
                         (`^/users/\\[0-9\\]+$`), a list \\[a\\] and `x` again \\[b\\].\n    /// `\\[indented\\]`\n\
                         pub struct A; // not a doc: \\[kept\\]\n";
        assert_eq!(
            code_in_docs_as_written(generated),
            "/// Example:\n///\n/// ```yaml\n/// hosts: [api.example.com]\n/// ```\n/// A regex (`^/users/[0-9]+$`), \
             a list \\[a\\] and `x` again \\[b\\].\n    /// `[indented]`\npub struct A; // not a doc: \\[kept\\]\n"
        );
    }
}
