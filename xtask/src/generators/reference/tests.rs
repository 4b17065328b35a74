//! The reference against the proto: every message, field, rule and enum
//! value, in the Kubernetes form.

use prost_reflect::DescriptorPool;

use super::*;

struct Loaded {
    api: Api,
    pool: DescriptorPool,
}

fn load() -> Loaded {
    let root = crate::workspace_root();
    let plan = crate::plan::Plan::load(&root).unwrap();
    let pinned = crate::proto_deps::PinnedCrates::load(&root).unwrap();
    let context = crate::generators::Context::load(&root, &plan.input_dirs, pinned).unwrap();
    let pool = DescriptorPool::decode(context.descriptors.proto3_with_docs.as_slice()).unwrap();
    Loaded { api: context.api, pool }
}

/// The text of the section under heading `heading` (up to the next
/// heading of the same or a higher level).
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let level = heading.chars().take_while(|c| *c == '#').count();
    let start = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no `{heading}` in the reference"));
    let body = &text[start + heading.len() + 2..];
    let end = body
        .match_indices("\n#")
        .find(|(i, _)| body[i + 1..].chars().take_while(|c| *c == '#').count() <= level)
        .map_or(body.len(), |(i, _)| i);
    &body[..end]
}

/// Every message, field and enum value of the API's proto files, read
/// from the descriptors themselves (not the rules model the generator
/// reads), is in the reference, where it belongs.
#[test]
fn every_message_field_and_enum_value_of_the_proto_is_in_the_reference() {
    let Loaded { api, pool } = load();
    let text = reference(&api, &VIRTUAL_HOST).unwrap();
    let package = VIRTUAL_HOST.spec_message.rsplit_once('.').unwrap().0;
    let messages: Vec<_> = pool
        .all_messages()
        .filter(|m| m.package_name() == package && !m.is_map_entry())
        .collect();
    assert!(messages.len() >= 6, "{}", messages.len());
    let mut fields = 0;
    for message in messages {
        let body = section(&text, &format!("### {}", message.name()));
        for field in message.fields() {
            let block = section(body, &format!("#### `{}`", field.json_name()));
            // The type, then required or optional.
            let facts = block.trim_start().lines().next().unwrap_or_default();
            assert!(
                facts.contains(" · required") || facts.contains(" · optional"),
                "{}: {block}",
                field.full_name()
            );
            fields += 1;
        }
    }
    assert!(fields >= 12, "{fields}");
    let mut values = 0;
    for e in pool.all_enums().filter(|e| e.package_name() == package) {
        let body = section(&text, &format!("### {}", e.name()));
        for value in e.values() {
            assert!(
                body.contains(&format!("`{}` ({})", value.name(), value.number())),
                "{}",
                value.name()
            );
            values += 1;
        }
    }
    assert!(values >= 3, "{values}");
}

#[test]
fn fields_are_camel_case_and_enum_values_as_the_crd_spells_them() {
    let Loaded { api, .. } = load();
    let text = reference(&api, &VIRTUAL_HOST).unwrap();
    let tls = section(&text, "### VirtualHostTLS");
    assert!(tls.contains("#### `secretName`"), "{tls}");
    assert!(!tls.contains("secret_name"), "{tls}");
    let provider = section(tls, "#### `provider`");
    assert!(
        provider.contains("[SecretProvider](#secretprovider) (string) · required · one of `KUBERNETES`"),
        "{provider}"
    );
    let enum_values = section(&text, "### SecretProvider");
    assert!(
        enum_values.contains("| `KUBERNETES` | `SECRET_PROVIDER_KUBERNETES` (1) |"),
        "{enum_values}"
    );
    assert!(enum_values.contains("`SECRET_PROVIDER_UNSPECIFIED` (0) is the proto's zero value"));
    let routes = section(section(&text, "### VirtualHostSpec"), "#### `routes`");
    assert!(
        routes.starts_with("\n\\[\\][HTTPRoute](#httproute) · required\n"),
        "{routes}"
    );
    // Prose names values as manifests do, and never the zero value.
    assert!(!provider.contains("SECRET_PROVIDER_"), "{provider}");
}

#[test]
fn every_rule_is_in_words_with_its_id_and_the_examples_are_kept() {
    let Loaded { api, .. } = load();
    let text = reference(&api, &VIRTUAL_HOST).unwrap();
    for message in &api.messages {
        let body = section(&text, &format!("### {}", message.descriptor.name()));
        for field in &message.fields {
            let block = section(body, &format!("#### `{}`", field.json_name()));
            let ids = field
                .rules
                .iter()
                .map(|r| &r.id)
                .chain(field.cel.iter().map(|c| &c.id))
                .chain(field.items.iter().flat_map(|i| i.rules.iter().map(|r| &r.id)));
            for id in ids {
                assert!(
                    block.contains(&format!("[`{id}`]")),
                    "{}: {id}",
                    field.descriptor.full_name()
                );
            }
        }
    }
    let hosts = section(section(&text, "### VirtualHostSpec"), "#### `hosts`");
    assert!(
        hosts.contains("- must contain at least 1 item(s) [`repeated.min_items`]"),
        "{hosts}"
    );
    assert!(
        hosts.contains("- each item: must be at most 253 characters [`string.max_len`]"),
        "{hosts}"
    );
    let route_match = section(&text, "### RouteMatch");
    assert!(
        route_match.contains("exactly one of `prefix`, `exact`, `regex` must be set (oneof path) [`required`]"),
        "{route_match}"
    );
    // The proto's example, fenced as written.
    let spec = section(&text, "### VirtualHostSpec");
    assert!(spec.contains("```yaml\nhosts: [api.example.com]\n"), "{spec}");
    assert!(spec.starts_with("\nAt `spec`."), "{spec}");
}
