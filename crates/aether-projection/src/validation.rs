//! Which objects may be projected: those whose metadata names are
//! well-formed, whose spec read whole and passes every rule of the proto.

use aether_api::object::{RULE_UNSUPPORTED, VirtualHostObject};
use aether_api::validate::{Validate, Violation, name_problems, violations_of, with_violations};

/// Every problem of `object`, metadata names first; empty when it may be
/// projected.
///
/// A spec field set aside as unknown (read tolerantly, from a newer API
/// version) is a problem here, of rule [`RULE_UNSUPPORTED`]: the spec says
/// how requests are routed, and a field this build does not know can narrow
/// a match (a header a route requires) or change which route wins (an
/// order). Served without it, the object could take requests it was
/// written to refuse; left out, its status names the field, and upgrading
/// serves it. (The admission webhook admits such an object with a
/// warning.) The status, and what did not read in it, change nothing
/// served.
pub(crate) fn problems(object: &VirtualHostObject) -> Vec<Violation> {
    let unknown_in_spec = object
        .set_aside
        .iter()
        .filter(|path| path.starts_with("spec."))
        .map(|path| {
            Violation::new(
                path.clone(),
                RULE_UNSUPPORTED,
                "unknown field (from a newer API version; this build cannot tell how it changes routing)",
            )
        });
    let read = unknown_in_spec
        .chain(object.problems.iter().cloned())
        .filter(|problem| problem.field_path != "status" && !problem.field_path.starts_with("status."))
        .collect();
    // The values that did not decode, then the rules the rest breaks (those
    // about a value that did not decode say nothing of the manifest).
    let spec = with_violations(read, violations_of(object.spec.validate()));
    let mut problems = name_problems(&object.namespace, &object.name);
    problems.extend(spec);
    problems
}
