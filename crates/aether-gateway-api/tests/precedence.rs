//! The converter's route precedence against the edge's, over generated
//! route sets: a VirtualHost listed in the order the edge tries it by
//! specificity converts without a reordering note, and a reordering noted
//! names two routes that order puts the other way round.

use aether_api::config::v1::{
    HeaderMatch, HttpRoute, QueryParamMatch, RouteBackend, RouteMatch, RouteOrder, VirtualHostSpec, header_match,
    query_param_match, route_match::Path,
};
use aether_gateway_api::{Names, convert};
use aether_projection::envoy_route::{route, route_action};
use aether_projection::{ProjectionConfig, project};
use aether_testing::objects;
use proptest::prelude::*;

/// Paths in the edge's normal form, where the edge and a Gateway measure a
/// prefix alike; some begin others, so that routes overlap.
const PATHS: &[&str] = &["/", "/a", "/a/b", "/ab", "/b"];
/// Regular expressions the RE2 guard lets through: every route is served.
const REGEXES: &[&str] = &["/a.*", "/[ab]+"];

fn match_strategy() -> impl Strategy<Value = RouteMatch> {
    (
        0..3u8,
        prop::sample::select(PATHS),
        prop::sample::select(REGEXES),
        prop::sample::subsequence(&["GET", "POST"][..], 0..=2),
        prop::sample::subsequence(&["x-a", "x-b"][..], 0..=2),
        prop::sample::subsequence(&["p", "q"][..], 0..=2),
    )
        .prop_map(|(kind, path, regex, methods, headers, params)| RouteMatch {
            path: Some(match kind {
                0 => Path::Exact(path.into()),
                1 => Path::Prefix(path.into()),
                _ => Path::Regex(regex.into()),
            }),
            methods: methods.into_iter().map(str::to_owned).collect(),
            headers: headers
                .into_iter()
                .map(|name| HeaderMatch {
                    name: name.into(),
                    invert: false,
                    value: Some(header_match::Value::Present(true)),
                })
                .collect(),
            query_params: params
                .into_iter()
                .map(|name| QueryParamMatch {
                    name: name.into(),
                    value: Some(query_param_match::Value::Present(true)),
                })
                .collect(),
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
    fn the_converter_ranks_routes_as_the_edge_does(matches in prop::collection::vec(match_strategy(), 1..7)) {
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
