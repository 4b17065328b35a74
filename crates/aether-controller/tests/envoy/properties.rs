//! Random sets of valid objects, their specs drawn from the rules model
//! (`aether_testing::drawn`): Envoy accepts every configuration the
//! controller gives it, and runs exactly the projection. The generator is
//! narrowed to hosts objects contest (wildcards included) and to regexes
//! near Envoy's program limit (some above it, whose routes are left out),
//! and seeded with header values Envoy reads as a format; the rest, every
//! match and action at and near its bounds, is the model's. That it still
//! makes every action is checked ([`ActionKinds`]).

use std::sync::LazyLock;

use aether_edge_envoy::descriptors;
use aether_projection::LeftOutReason;
use aether_projection::envoy_route::RouteConfiguration;
use aether_rules::RuleKind;
use aether_specgen::{Generator, Rng};
use prost::Message;
use serde_json::{Value, json};

use aether_e2e::Mode;
use aether_e2e::edge::{PATIENCE, projection};

use crate::edge;

/// Sets per test (each a reload of a running Envoy).
const CASES: usize = 48;

/// Hosts of a small shared pool, so objects contest them.
const SHARED_HOSTS: &[&str] = &[
    "api.example.com",
    "*.example.com",
    "shop.example.com",
    "*.shop.example.com",
    "a.b.example.com",
];

/// Header values Envoy reads as a substitution format: a literal `%` must
/// reach it escaped.
const FORMAT_VALUES: &[&str] = &["50%", "%REQ(x-a)%", "%%", "a b\tc"];

/// The generator of the sets' specs.
pub(crate) static GENERATOR: LazyLock<Generator> = LazyLock::new(|| {
    let mut generator = aether_testing::drawn::generator();
    // Hosts: the shared pool, a few the model draws, and the longest.
    let mut hosts: Vec<Value> = SHARED_HOSTS.iter().map(|h| json!(h)).collect();
    for seed in 0..3 {
        let spec = generator.spec(&mut Rng::new(seed), 0.0);
        hosts.extend(spec["hosts"].as_array().cloned().unwrap_or_default());
    }
    hosts.push(json!(longest_host(&generator)));
    generator.narrow("hosts[]", &hosts).expect("hosts is a list of strings");
    let regexes: Vec<Value> = regexes().into_iter().map(Value::from).collect();
    // Every place a regular expression is written at: the fields the proto
    // marks `re2`, read from the rules model.
    for place in generator.api().re2_places(aether_testing::drawn::ROOT) {
        generator.narrow(&place, &regexes).expect("a regex place");
    }
    for value in FORMAT_VALUES {
        let changes = json!({"set": [{"name": "x-a", "value": value}], "add": [{"name": "x-b", "value": value}]});
        generator.seed(&json!({"routes": [{"requestHeaders": changes, "responseHeaders": changes}]}));
    }
    generator
});

/// The longest host the API allows (its `max_len`, read from the rules
/// model), in labels of 63 characters, the most a DNS label holds.
fn longest_host(generator: &Generator) -> String {
    let max = generator
        .api()
        .message(aether_testing::drawn::ROOT)
        .and_then(|m| m.fields.iter().find(|f| f.json_name() == "hosts"))
        .and_then(|f| f.items.as_ref())
        .and_then(|items| {
            items.rules.iter().find_map(|r| match r.kind {
                RuleKind::MaxLen(n) => usize::try_from(n).ok(),
                _ => None,
            })
        })
        .expect("hosts[] has a max_len");
    let mut labels = Vec::new();
    let mut left = max;
    for letter in ('a'..='z').cycle() {
        if left <= 64 {
            labels.push(letter.to_string().repeat(left));
            break;
        }
        labels.push(letter.to_string().repeat(63));
        left -= 64;
    }
    labels.join(".")
}

/// Regular expressions from the RE2 guard's generator: most accepted and
/// near Envoy's limit, some refused (their routes are left out).
fn regexes() -> Vec<String> {
    let mut expressions = aether_edge_limits::re2::testing::Expressions::new(0x9E2E);
    let (mut near, mut refused) = (Vec::new(), Vec::new());
    while near.len() < 200 || refused.len() < 20 {
        let regex = expressions.next_expression();
        if regex.len() > 1024 || !regex.bytes().all(|b| (b' '..=b'~').contains(&b)) {
            continue;
        }
        match aether_edge_limits::re2::check(&regex) {
            Ok(bound) if bound >= 60 && near.len() < 200 => near.push(regex),
            Err(aether_edge_limits::re2::Re2Refusal::TooLarge { .. }) if refused.len() < 20 => refused.push(regex),
            _ => {}
        }
    }
    near.extend(refused);
    near
}

/// A set of 1 to 5 objects, each spec valid: some untimed, some with the
/// same creation time.
pub(crate) fn object_set(rng: &mut Rng) -> Vec<Value> {
    use aether_specgen::Choices as _;
    let count = 1 + rng.below(5);
    (0..count)
        .map(|index| {
            let spec = aether_testing::drawn::valid(&GENERATOR, rng);
            let namespace = ["default", "shop", "platform"][rng.below(3)];
            let mut metadata = json!({"name": format!("vh-{index}"), "namespace": namespace});
            if let Some(created) = [None, Some("2026-01-01T00:00:00Z"), Some("2026-02-01T00:00:00Z")][rng.below(3)] {
                metadata["creationTimestamp"] = json!(created);
            }
            json!({
                "apiVersion": "config.aether.io/v1",
                "kind": "VirtualHost",
                "metadata": metadata,
                "spec": serde_json::to_value(&spec).expect("a valid spec writes as JSON"),
            })
        })
        .collect()
}

/// Envoy's dump of a route configuration as the prost type.
fn from_dump(mut route_config: Value) -> RouteConfiguration {
    route_config.as_object_mut().expect("an object").remove("@type");
    let descriptor = descriptors::pool()
        .get_message_by_name("envoy.config.route.v3.RouteConfiguration")
        .expect("RouteConfiguration's descriptor");
    let message = prost_reflect::DynamicMessage::deserialize(descriptor, route_config).expect("Envoy's JSON decodes");
    RouteConfiguration::decode(message.encode_to_vec().as_slice()).expect("re-decodes")
}

fn check(mode: Mode, seed: u64) {
    let start = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: start, namespace: default}\nspec: {hosts: [start.test], routes: [{match: {prefix: /}, backend: {service: svc}}]}\n";
    let edge = edge(mode, &[("set.yaml", start)], &Default::default());
    let mut rng = Rng::new(seed);
    let mut kinds = ActionKinds::default();
    for case in 0..CASES {
        let objects = object_set(&mut rng);
        let text: String = objects
            .iter()
            .map(|object| format!("---\n{}\n", serde_json::to_string(object).unwrap()))
            .collect();
        let snapshot = projection(&[&text]);
        for left_out in &snapshot.report.left_out {
            assert!(
                !matches!(left_out.reason, LeftOutReason::Invalid { .. }),
                "case {case}: the generator made an invalid object: {left_out:?}"
            );
        }
        let expected = snapshot.route_configuration().expect("the projection decodes");
        for route in expected.virtual_hosts.iter().flat_map(|vh| &vh.routes) {
            kinds.count(route);
        }
        edge.write("set.yaml", &text);
        wait_running(&edge, &expected, &format!("{mode:?} case {case}"), &text);
    }
    eprintln!("{mode:?}: Envoy ran routes with {kinds:?}");
    kinds.assert_every_kind();
}

/// Waits until Envoy runs exactly `expected`, the projection of the
/// objects `text`; `what` names the case. Envoy must reject nothing.
pub(crate) fn wait_running(edge: &aether_e2e::Edge, expected: &RouteConfiguration, what: &str, text: &str) {
    aether_e2e::wait_until(
        &format!("{what}: Envoy running the projection"),
        PATIENCE,
        || format!("{}\nobjects: {text}", edge.logs()),
        || {
            assert_eq!(edge.rejected(), 0, "{what}: Envoy rejected\n{}\n{text}", edge.logs());
            let running = edge.envoy.dynamic_route_config()?;
            (from_dump(running["route_config"].clone()) == *expected).then_some(())
        },
    );
}

/// How many of the routes Envoy ran used each action, so that a generator
/// that stopped making one fails rather than passes on less.
#[derive(Debug, Default)]
struct ActionKinds {
    weighted: usize,
    no_weight_500: usize,
    redirect: usize,
    prefix_rewrite: usize,
    path_rewrite: usize,
    host_rewrite: usize,
    percent_in_header_value: usize,
    header_removed: usize,
    timeout: usize,
    retry_override: usize,
    no_retries: usize,
}

impl ActionKinds {
    fn count(&mut self, route: &aether_projection::envoy_route::Route) {
        use aether_projection::envoy_route::route::Action;
        use aether_projection::envoy_route::route_action::ClusterSpecifier;
        let default_retry_on = aether_projection::RetryConfig::default().retry_on;
        match &route.action {
            Some(Action::Route(action)) => {
                self.weighted += usize::from(matches!(
                    action.cluster_specifier,
                    Some(ClusterSpecifier::WeightedClusters(_))
                ));
                self.prefix_rewrite += usize::from(!action.prefix_rewrite.is_empty());
                self.path_rewrite += usize::from(action.regex_rewrite.is_some());
                self.host_rewrite += usize::from(action.host_rewrite_specifier.is_some());
                self.timeout += usize::from(action.timeout.is_some());
                match &action.retry_policy {
                    None => self.no_retries += 1,
                    Some(policy) if policy.retry_on != default_retry_on => self.retry_override += 1,
                    Some(_) => {}
                }
            }
            Some(Action::Redirect(_)) => self.redirect += 1,
            Some(Action::DirectResponse(_)) => self.no_weight_500 += 1,
            _ => {}
        }
        self.percent_in_header_value += route
            .request_headers_to_add
            .iter()
            .chain(&route.response_headers_to_add)
            .filter(|option| option.header.as_ref().is_some_and(|h| h.value.contains('%')))
            .count();
        self.header_removed += route.request_headers_to_remove.len() + route.response_headers_to_remove.len();
    }

    fn assert_every_kind(&self) {
        let counts = [
            self.weighted,
            self.no_weight_500,
            self.redirect,
            self.prefix_rewrite,
            self.path_rewrite,
            self.host_rewrite,
            self.percent_in_header_value,
            self.header_removed,
            self.timeout,
            self.retry_override,
            self.no_retries,
        ];
        assert!(
            counts.iter().all(|count| *count > 0),
            "an action never generated: {self:?}"
        );
    }
}

#[test]
fn envoy_accepts_and_runs_every_random_valid_set_over_files() {
    check(Mode::Files, 1);
}

#[test]
fn envoy_accepts_and_runs_every_random_valid_set_over_xds() {
    check(Mode::Xds, 2);
}
