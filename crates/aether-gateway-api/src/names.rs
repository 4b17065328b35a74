//! The names of the HTTPRoutes one run writes: unique per namespace and
//! valid Kubernetes object names, whatever the VirtualHosts are called.

use std::collections::HashMap;

use crate::{NoteKind, Notes};

/// The longest Kubernetes object name (a DNS subdomain, RFC 1123): an
/// HTTPRoute's name too.
pub const MAX_NAME_LEN: usize = 253;

/// The HTTPRoute names taken in one run, per namespace: reserve every
/// VirtualHost's own name first, so that no split takes one
/// (`kubectl apply` of two objects of one name keeps only the last).
#[derive(Debug, Clone, Default)]
pub struct Names(HashMap<(String, String), String>);

impl Names {
    /// Takes `name` in `namespace` for the VirtualHost of that name.
    pub fn reserve(&mut self, namespace: &str, name: &str) {
        self.take_for(namespace, name, name);
    }

    fn take_for(&mut self, namespace: &str, name: &str, virtual_host: &str) {
        self.0
            .entry((namespace.to_owned(), name.to_owned()))
            .or_insert_with(|| virtual_host.to_owned());
    }

    /// The VirtualHost that took `name` in `namespace`.
    fn owner(&self, namespace: &str, name: &str) -> Option<&str> {
        self.0.get(&(namespace.to_owned(), name.to_owned())).map(String::as_str)
    }

    /// The name of the `index`th HTTPRoute (from 0) of the VirtualHost
    /// `namespace/name`: its own name, then `NAME-02`, `NAME-03`... each
    /// cut to [`MAX_NAME_LEN`] and, when another object of the run has it,
    /// `NAME-02-2`, `NAME-02-3`... Every name but the plain one is noted.
    pub(crate) fn take(&mut self, namespace: &str, name: &str, index: usize, notes: &mut Notes) -> String {
        let suffix = if index == 0 {
            String::new()
        } else {
            format!("-{:02}", index + 1)
        };
        let plain = format!("{name}{suffix}");
        let mut candidate = within_limit(name, &suffix);
        // Ends: every try takes a new suffix, and only as many names as are
        // taken can refuse one.
        let mut attempt = 1;
        let mut first_owner = None;
        while let Some(owner) = self
            .owner(namespace, &candidate)
            .filter(|owner| index > 0 || *owner != name)
        {
            first_owner.get_or_insert_with(|| owner.to_owned());
            attempt += 1;
            candidate = within_limit(name, &format!("{suffix}-{attempt}"));
        }
        self.take_for(namespace, &candidate, name);
        if candidate != plain {
            let why = if let Some(owner) = first_owner {
                format!(
                    "{} is taken by the conversion of VirtualHost {namespace}/{owner} in this run",
                    within_limit(name, &suffix)
                )
            } else {
                format!("it is longer than the {MAX_NAME_LEN} characters of a Kubernetes name")
            };
            notes.push(
                "spec.routes",
                NoteKind::Differs,
                format!("HTTPRoute {candidate} is named in place of {plain}: {why}"),
            );
        }
        candidate
    }
}

/// `name` then `suffix`, `name` cut so that both fit in [`MAX_NAME_LEN`]
/// and without a `-` or `.` it would then end with (a name part ends with
/// a letter or digit).
fn within_limit(name: &str, suffix: &str) -> String {
    let room = MAX_NAME_LEN.saturating_sub(suffix.len());
    if name.len() + suffix.len() <= MAX_NAME_LEN {
        return format!("{name}{suffix}");
    }
    let mut cut = room;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let kept = name[..cut].trim_end_matches(['-', '.']);
    format!("{kept}{suffix}")
}
