//! The converter's route precedence against the edge's, over generated
//! route sets: a VirtualHost listed in the order the edge tries it by
//! specificity converts without a reordering note, and a reordering noted
//! names two routes that order puts the other way round.

use std::sync::LazyLock;

use aether_api::config::v1::{HttpRoute, RouteBackend, RouteMatch, RouteOrder, VirtualHostSpec};
use aether_gateway_api::{Names, convert};
use aether_projection::envoy_route::{route, route_action};
use aether_projection::{ProjectionConfig, project};
use aether_specgen::{Generator, Rng};
use aether_testing::objects;
use proptest::prelude::*;
use serde_json::json;

/// Paths in the edge's normal form, where the edge and a Gateway measure a
/// prefix alike; some begin others, so that routes overlap.
const PATHS: &[&str] = &["/", "/a", "/a/b", "/ab", "/b"];
/// Regular expressions the RE2 guard lets through: every route is served.
const REGEXES: &[&str] = &["/a.*", "/[ab]+"];

/// Route matches drawn from the rules model, narrowed to few paths, names
/// and methods so that routes overlap and tie.
static GENERATOR: LazyLock<Generator> = LazyLock::new(|| {
    let mut generator = aether_testing::drawn::generator();
    let values = |values: &[&str]| values.iter().map(|v| json!(v)).collect::<Vec<_>>();
    for (place, narrowed) in [
        ("routes[].match.prefix", PATHS),
        ("routes[].match.exact", PATHS),
        ("routes[].match.regex", REGEXES),
        ("routes[].match.headers[].regex", REGEXES),
        ("routes[].match.queryParams[].regex", REGEXES),
        ("routes[].match.methods[]", &["GET", "POST"]),
        ("routes[].match.headers[].name", &["x-a", "x-b"]),
        ("routes[].match.queryParams[].name", &["p", "q"]),
    ] {
        generator.narrow(place, &values(narrowed)).expect("a place of the spec");
    }
    generator
});

/// The matches of a valid spec's routes.
fn matches_strategy() -> impl Strategy<Value = Vec<RouteMatch>> {
    any::<u64>().prop_map(|seed| {
        let spec = aether_testing::drawn::valid(&GENERATOR, &mut Rng::new(seed));
        spec.routes.into_iter().filter_map(|r| r.r#match).collect()
    })
}

/// A spec of `matches`, route `i` sending to service `r{i}`, so that the
/// edge's routes name their index.
fn spec(matches: &[RouteMatch], order: RouteOrder) -> VirtualHostSpec {
    let routes = matches
        .iter()
        .enumerate()
        .map(|(index, matched)| HttpRoute {
            r#match: Some(matched.clone()),
            backend: Some(RouteBackend {
                service: format!("r{index}"),
                port: 0,
            }),
            ..HttpRoute::default()
        })
        .collect();
    VirtualHostSpec {
        hosts: vec!["a.example.com".to_owned()],
        routes,
        route_order: order.into(),
        ..VirtualHostSpec::default()
    }
}

/// The indices of the routes in the order the edge tries them.
fn edge_order(spec: &VirtualHostSpec) -> Vec<usize> {
    let object = objects::object("ns", "a")
        .spec(serde_json::to_value(spec).expect("a spec"))
        .build();
    let snapshot = project([object], &ProjectionConfig::default()).expect("projects");
    let configuration = snapshot.route_configuration().expect("a route configuration");
    let [virtual_host] = configuration.virtual_hosts.as_slice() else {
        panic!("one virtual host: {configuration:?}")
    };
    virtual_host
        .routes
        .iter()
        .map(|served| {
            let Some(route::Action::Route(action)) = &served.action else {
                panic!("a forwarding route: {served:?}")
            };
            let Some(route_action::ClusterSpecifier::Cluster(cluster)) = &action.cluster_specifier else {
                panic!("a cluster: {served:?}")
            };
            cluster
                .strip_prefix('r')
                .and_then(|index| index.parse().ok())
                .expect("r{index}")
        })
        .collect()
}

/// The converter's reordering note, as `(first, then)`: the route a
/// Gateway tries first, and the one listed before it.
fn reordering(spec: &VirtualHostSpec) -> Option<(usize, usize)> {
    let conversion = convert("ns", "a", spec, None, &mut Names::default());
    let note = conversion.notes.iter().find(|note| note.path == "spec.routes")?;
    let (_, rest) = note.message.split_once("routes[")?;
    let (first, rest) = rest.split_once("] comes before routes[")?;
    let (then, _) = rest.split_once(']')?;
    Some((first.parse().ok()?, then.parse().ok()?))
}

proptest! {
    #[test]
    fn the_converter_ranks_routes_as_the_edge_does(matches in matches_strategy()) {
        let by_specificity = edge_order(&spec(&matches, RouteOrder::Specificity));
        prop_assert_eq!(by_specificity.len(), matches.len());
        prop_assert_eq!(reordering(&spec(&matches, RouteOrder::Specificity)), None);

        let in_edge_order: Vec<RouteMatch> = by_specificity.iter().map(|&index| matches[index].clone()).collect();
        prop_assert_eq!(reordering(&spec(&in_edge_order, RouteOrder::Listed)), None, "{:?}", in_edge_order);

        if let Some((first, then)) = reordering(&spec(&matches, RouteOrder::Listed)) {
            let rank = |index| by_specificity.iter().position(|&at| at == index);
            prop_assert!(then < first, "routes[{}] is not listed before routes[{}]", then, first);
            prop_assert!(rank(first) < rank(then), "the edge tries routes[{}] first: {:?}", then, by_specificity);
        }
    }
}
