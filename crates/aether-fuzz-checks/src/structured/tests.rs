//! The structured inputs stay within their budget.

use super::text::{MAX_TEXT, REPEAT_BUDGET};
use super::*;

/// A piece repeated past the longest limit.
fn long() -> Text {
    Text::Repeat(1, 4200)
}

fn route_of_long_texts() -> ArbitraryRoute {
    ArbitraryRoute {
        path: Some(Some(ArbitraryPath::Prefix(long()))),
        backend: Some((long(), 80)),
        methods: vec![Text::Piece(43)],
        headers: Vec::new(),
        query_params: Vec::new(),
        actions: ArbitraryActions {
            backends: Vec::new(),
            redirect: None,
            rewrite: None,
            request_headers: None,
            response_headers: None,
            timeout: long(),
            retries: None,
        },
    }
}

fn spec(hosts: Vec<Text>, routes: Vec<ArbitraryRoute>, repeat_last_route: u8) -> ArbitrarySpec {
    ArbitrarySpec {
        hosts,
        routes,
        repeat_last_route,
        tls: None,
        route_order: Provider::Named(0),
    }
}

#[test]
fn a_repeated_piece_still_goes_past_the_longest_limit() {
    let built = spec(vec![long(), Text::Piece(1)], Vec::new(), 0).build();
    let longest = crate::bounds::longest_len::<VirtualHostSpec>();
    assert!(built.hosts[0].len() > longest, "{} of {longest}", built.hosts[0].len());
    assert!(built.hosts[0].len() <= MAX_TEXT + "api.example.com".len());
    assert_eq!(built.hosts[1], "api.example.com", "a piece is never cut");
}

#[test]
fn repetition_within_one_input_is_bounded_whatever_asks_for_it() {
    let greedy = spec(
        std::iter::repeat_with(long).take(40).collect(),
        std::iter::repeat_with(route_of_long_texts).take(8).collect(),
        255,
    );
    let built = greedy.build();
    assert!(
        built.encoded_len() < REPEAT_BUDGET + 4096,
        "{} bytes",
        built.encoded_len()
    );
    // The objects of the projection share the one budget.
    let objects = ArbitraryObjects(
        (0..6)
            .map(|_| ArbitraryObject {
                namespace: 0,
                name: 0,
                created_day: None,
                spec: spec(
                    std::iter::repeat_with(long).take(40).collect(),
                    vec![route_of_long_texts()],
                    255,
                ),
            })
            .collect(),
    );
    let total: usize = objects.build().iter().map(|o| o.spec.encoded_len()).sum();
    assert!(total < REPEAT_BUDGET + 4096, "{total} bytes");
}

#[test]
fn a_small_route_is_still_copied_to_past_the_route_limit() {
    let mut route = route_of_long_texts();
    route.path = Some(Some(ArbitraryPath::Prefix(Text::Piece(16))));
    route.backend = Some((Text::Piece(31), 80));
    route.actions.timeout = Text::Piece(65);
    let built = spec(vec![Text::Piece(1)], vec![route], 255).build();
    // The route, and its copies up to two past the limit.
    let most = crate::bounds::max_items::<VirtualHostSpec>("routes");
    assert_eq!(built.routes.len(), 1 + most + 2);
}
