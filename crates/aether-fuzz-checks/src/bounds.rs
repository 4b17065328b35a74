//! The contract's bounds, read once from the rules model of the descriptors
//! aether-api ships, so that the checks never restate a number of the proto.
//!
//! Each lookup names a message by its type and a field by its proto name, and
//! panics naming both and the rule when the proto has no such rule: a check
//! that reads a bound the proto dropped must be rewritten, not skipped.

use std::sync::LazyLock;

use aether_api::config::v1::VirtualHostSpec;
use aether_api::reflect::{DESCRIPTOR_POOL, FILE_DESCRIPTOR_SET};
use aether_rules::{Api, Field, RuleKind, Scalar};
use prost_reflect::ReflectMessage;

/// The rules of the spec's package (every file of it, not the imports).
static API: LazyLock<Api> = LazyLock::new(|| {
    let package = VirtualHostSpec::default().descriptor().package_name().to_owned();
    let own: Vec<String> = DESCRIPTOR_POOL
        .files()
        .filter(|file| file.package_name() == package)
        .map(|file| file.name().to_owned())
        .collect();
    Api::load(FILE_DESCRIPTOR_SET, &own).expect("the rules model reads aether-api's descriptors")
});

/// `repeated.max_items` of `M.field`.
pub(crate) fn max_items<M: ReflectMessage + Default>(field: &str) -> usize {
    count::<M>(field, "repeated.max_items", |kind| match kind {
        RuleKind::MaxItems(n) => Some(*n),
        _ => None,
    })
}

/// `repeated.min_items` of `M.field`.
pub(crate) fn min_items<M: ReflectMessage + Default>(field: &str) -> usize {
    count::<M>(field, "repeated.min_items", |kind| match kind {
        RuleKind::MinItems(n) => Some(*n),
        _ => None,
    })
}

/// `string.max_len` of `M.field`.
pub(crate) fn max_len<M: ReflectMessage + Default>(field: &str) -> usize {
    count::<M>(field, "string.max_len", max_len_of)
}

/// The shortest length `M.field` may have: its `string.min_len`, or 1 for a
/// `required` string (protovalidate reads required as non-empty).
pub(crate) fn min_len<M: ReflectMessage + Default>(field: &str) -> usize {
    let found = lookup::<M>(field);
    match found.rules.iter().find_map(|rule| match &rule.kind {
        RuleKind::MinLen(n) => Some(*n),
        _ => None,
    }) {
        Some(n) => usize::try_from(n).expect("a length fits in usize"),
        None if found.required => 1,
        None => panic!(
            "{} has neither string.min_len nor required",
            found.descriptor.full_name()
        ),
    }
}

/// `repeated.items.string.max_len` of `M.field`.
pub(crate) fn item_max_len<M: ReflectMessage + Default>(field: &str) -> usize {
    let found = lookup::<M>(field);
    let items = found
        .items
        .as_ref()
        .map(|items| items.rules.as_slice())
        .unwrap_or_default();
    let n = items
        .iter()
        .find_map(|rule| max_len_of(&rule.kind))
        .unwrap_or_else(|| panic!("{} has no repeated.items.string.max_len", found.descriptor.full_name()));
    usize::try_from(n).expect("a length fits in usize")
}

/// The inclusive upper bound (`lte`) of the number `M.field`.
pub(crate) fn lte<M: ReflectMessage + Default>(field: &str) -> u64 {
    let found = lookup::<M>(field);
    found
        .rules
        .iter()
        .find_map(|rule| match &rule.kind {
            RuleKind::Range {
                upper: Some(upper),
                exclusive: false,
                ..
            } if upper.inclusive => match upper.value {
                Scalar::UInt(n) => Some(n),
                Scalar::Int(n) => u64::try_from(n).ok(),
                _ => None,
            },
            _ => None,
        })
        .unwrap_or_else(|| panic!("{} has no lte", found.descriptor.full_name()))
}

/// The values `M.field` may take (`in`).
pub(crate) fn one_of<M: ReflectMessage + Default>(field: &str) -> &'static [Scalar] {
    listed(lookup::<M>(field), false, "in")
}

/// The values each element of the list `M.field` may take (`items.in`).
pub(crate) fn item_one_of<M: ReflectMessage + Default>(field: &str) -> &'static [Scalar] {
    listed(lookup::<M>(field), true, "in")
}

/// The values `M.field` must not take (`not_in`).
pub(crate) fn not_in<M: ReflectMessage + Default>(field: &str) -> &'static [Scalar] {
    listed(lookup::<M>(field), false, "not_in")
}

/// The values no element of the list `M.field` may take (`items.not_in`).
pub(crate) fn item_not_in<M: ReflectMessage + Default>(field: &str) -> &'static [Scalar] {
    listed(lookup::<M>(field), true, "not_in")
}

/// Whether a list of `in` or `not_in` holds the string `value`.
pub(crate) fn holds_text(list: &[Scalar], value: &str) -> bool {
    list.iter()
        .any(|listed| matches!(listed, Scalar::String(s) if s == value))
}

/// Whether a list of `in` or `not_in` holds the number `value`.
pub(crate) fn holds_uint(list: &[Scalar], value: u64) -> bool {
    list.iter()
        .any(|listed| matches!(listed, Scalar::UInt(n) if *n == value))
}

/// The values of the `in` (or `not_in`) rule of a field or of its elements.
fn listed(found: &'static Field, items: bool, rule: &str) -> &'static [Scalar] {
    let rules = if items {
        found
            .items
            .as_ref()
            .map(|items| items.rules.as_slice())
            .unwrap_or_default()
    } else {
        &found.rules
    };
    let place = if items { "repeated.items." } else { "" };
    rules
        .iter()
        .find_map(|r| match &r.kind {
            RuleKind::In(values) if rule == "in" => Some(values.as_slice()),
            RuleKind::NotIn(values) if rule == "not_in" => Some(values.as_slice()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{} has no {place}{rule}", found.descriptor.full_name()))
}

fn max_len_of(kind: &RuleKind) -> Option<u64> {
    match kind {
        RuleKind::MaxLen(n) => Some(*n),
        _ => None,
    }
}

/// The first rule of `M.field` that `pick` reads as a count, as a usize.
fn count<M: ReflectMessage + Default>(field: &str, rule: &str, pick: impl Fn(&RuleKind) -> Option<u64>) -> usize {
    let found = lookup::<M>(field);
    let n = found
        .rules
        .iter()
        .find_map(|r| pick(&r.kind))
        .unwrap_or_else(|| panic!("{} has no {rule}", found.descriptor.full_name()));
    usize::try_from(n).expect("a count fits in usize")
}

/// The model's field `field` of `M`.
fn lookup<M: ReflectMessage + Default>(field: &str) -> &'static Field {
    let descriptor = M::default().descriptor();
    let message = descriptor.full_name();
    API.message(message)
        .unwrap_or_else(|| panic!("{message} is not in the rules model"))
        .fields
        .iter()
        .find(|f| f.name() == field)
        .unwrap_or_else(|| panic!("{message} has no field {field}"))
}

#[cfg(test)]
mod tests {
    use aether_api::config::v1::{HeaderModifier, RouteMatch, VirtualHostSpec};

    use super::*;

    #[test]
    fn a_missing_rule_is_named_with_its_field() {
        let panic = std::panic::catch_unwind(|| max_len::<VirtualHostSpec>("routes")).unwrap_err();
        let text = panic.downcast_ref::<String>().expect("a formatted message");
        assert!(text.ends_with("VirtualHostSpec.routes has no string.max_len"), "{text}");
        let panic = std::panic::catch_unwind(|| max_items::<RouteMatch>("nothing")).unwrap_err();
        let text = panic.downcast_ref::<String>().expect("a formatted message");
        assert!(text.ends_with("RouteMatch has no field nothing"), "{text}");
    }

    #[test]
    fn item_rules_are_the_elements_not_the_list() {
        // `remove` holds both: its own count and a length for each name.
        let list = &lookup::<HeaderModifier>("remove").rules;
        assert!(list.iter().all(|rule| max_len_of(&rule.kind).is_none()));
        assert!(item_max_len::<HeaderModifier>("remove") > 0);
        assert!(!item_not_in::<HeaderModifier>("remove").is_empty());
    }
}
