//! The projection target: the Envoy snapshot of arbitrary objects.

use aether_api::validate::Validate;

use crate::{Outcome, actions, structured};

/// The Envoy projection of a set of objects drawn with the input's bytes
/// ([`structured::objects`]): few namespaces, names and hosts, so that keys
/// and hosts collide often.
pub fn projection(data: &[u8]) -> Outcome {
    use aether_projection::{ProjectError, ProjectionConfig, Projector, project};
    use std::collections::{BTreeMap, BTreeSet};

    let objects = structured::objects(&mut arbitrary::Unstructured::new(data));
    let config = ProjectionConfig::default();
    let mut by_key = BTreeMap::new();
    for object in &objects {
        by_key.insert(object.key(), object);
    }
    // Each object's spec judged once: the checks below ask twice per object.
    let spec_valid: BTreeMap<_, bool> = by_key
        .iter()
        .map(|(key, o)| (key.clone(), o.spec.validate().is_ok()))
        .collect();
    let snapshot = match project(&objects, &config) {
        Err(ProjectError::DuplicateObject(key)) => {
            assert!(by_key.len() < objects.len(), "{key} is not duplicated");
            return Outcome::Rejected;
        }
        Ok(snapshot) => snapshot,
    };
    assert_eq!(by_key.len(), objects.len(), "a duplicated key was projected");

    let routes = snapshot.route_configuration().expect("the route configuration decodes");
    let mut domains = BTreeSet::new();
    for virtual_host in &routes.virtual_hosts {
        let (key, object) = by_key
            .iter()
            .find(|(key, _)| key.to_string() == virtual_host.name)
            .unwrap_or_else(|| panic!("virtual host {} names no object", virtual_host.name));
        assert!(spec_valid[key], "{} is invalid yet projected", virtual_host.name);
        // Every route is served, but for those the edge cannot serve as
        // written (a regex RE2 refuses, an action Envoy would refuse): those
        // are reported left out, each problem naming its route, and are
        // exactly what the webhook denies (`edge_problems`).
        let left_out = snapshot
            .report
            .routes_left_out
            .iter()
            .find(|routes| routes.object == *key)
            .map(|routes| routes.problems.clone())
            .unwrap_or_default();
        assert_eq!(
            left_out,
            aether_edge_limits::edge_problems(&object.spec),
            "{}: the routes left out are the ones the webhook denies",
            virtual_host.name
        );
        let left_out_routes: BTreeSet<usize> = left_out
            .iter()
            .map(|problem| {
                route_index(&problem.field_path).unwrap_or_else(|| panic!("{} names no route", problem.field_path))
            })
            .collect();
        // A route holding no regular expression (none of the fields the
        // proto marks `re2`) and only a backend is never left out.
        for index in &left_out_routes {
            let route = &object.spec.routes[*index];
            let mut holds_regex = false;
            aether_api::regexes::Regexes::visit_regexes(
                route,
                &aether_api::validate::FieldPath::root(""),
                &mut |_, _| holds_regex = true,
            );
            assert!(
                holds_regex || !actions::backend_only(route),
                "{}: route {index}, with no regex and a backend, left out",
                virtual_host.name
            );
        }
        assert_eq!(
            virtual_host.routes.len() + left_out_routes.len(),
            object.spec.routes.len(),
            "{}: every route served or reported left out",
            virtual_host.name
        );
        for domain in &virtual_host.domains {
            assert!(
                object.spec.hosts.contains(domain),
                "{domain} is not a host of {}",
                virtual_host.name
            );
            assert!(domains.insert(domain.clone()), "the projection holds {domain} twice");
        }
    }
    // Every host of a valid object is served, by that object or an older one.
    let claimed: BTreeSet<String> = by_key
        .iter()
        .filter(|(key, o)| spec_valid[*key] && structured::valid_metadata(o))
        .flat_map(|(_, o)| o.spec.hosts.iter().cloned())
        .collect();
    assert_eq!(domains, claimed, "the served hosts are the valid objects' hosts");

    // Neither the input order nor building incrementally changes the result.
    let reversed = project(objects.iter().rev(), &config).expect("the same set projects");
    assert_eq!(reversed, snapshot, "the input order changed the snapshot");
    let mut projector = Projector::new(config);
    for object in &objects {
        projector.upsert(object.clone());
    }
    assert_eq!(projector.snapshot(), snapshot, "the incremental projector differs");
    snapshot.to_json().expect("a snapshot renders as JSON");
    Outcome::Decoded
}

/// The route index of a field path under `spec.routes[i]`.
fn route_index(field_path: &str) -> Option<usize> {
    let rest = field_path.strip_prefix("spec.routes[")?;
    rest[..rest.find(']')?].parse().ok()
}
