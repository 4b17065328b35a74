//! The regular expressions of a message: every field the proto marks
//! `(aether.config.v1.re2)` (`api/aether/config/v1/field_options.proto`),
//! listed by generated code, so a new regex field is never missed.
//!
//! ```
//! use aether_api::config::v1::{HttpRoute, RouteMatch, VirtualHostSpec, route_match::Path};
//! use aether_api::regexes::Regexes;
//! use aether_api::validate::FieldPath;
//!
//! let spec = VirtualHostSpec {
//!     routes: vec![HttpRoute {
//!         r#match: Some(RouteMatch { path: Some(Path::Regex("/a+".into())), ..Default::default() }),
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! let mut found = Vec::new();
//! spec.visit_regexes(&FieldPath::root("spec"), &mut |path, regex| found.push((path.to_string(), regex)));
//! assert_eq!(found, [("spec.routes[0].match.regex".to_owned(), "/a+")]);
//! ```

use crate::validate::FieldPath;

/// A message holding regular expressions (fields marked `re2`), directly
/// or in its message fields.
pub trait Regexes {
    /// Calls `visit` with each regular expression set in this message, and
    /// its Kubernetes-form path under `path`, in field order.
    fn visit_regexes<'a>(&'a self, path: &FieldPath<'_>, visit: &mut dyn FnMut(&FieldPath<'_>, &'a str));
}
