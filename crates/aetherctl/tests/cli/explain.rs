//! `aetherctl explain` on the examples: the object and route that serve a
//! request, why the others did not, and what the edge does with it.

use aetherctl::explain::{EXIT_NOT_ROUTED, EXIT_ROUTED};

/// Runs `aetherctl explain -f examples/ ARGS` in process: (exit, stdout, stderr).
fn explain(args: &[&str]) -> (u8, String, String) {
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut all = vec!["aetherctl", "explain", "-f", examples];
    all.extend_from_slice(args);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = aetherctl::run(all, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

/// The text answers for a request of each kind, one after the other.
#[test]
fn text_answers_on_the_examples() {
    let requests: &[&[&str]] = &[
        // routeOrder SPECIFICITY: the exact path is tried first and fails.
        &["GET", "http://docs.example.org/docs/v2/intro"],
        // A host contested by an older object and a wildcard.
        &["POST", "https://shop.example.com/cart?id=7"],
        // Header matches: the first two routes fail on a header each.
        &[
            "http://canary.example.org/a",
            "-H",
            "Authorization: Bearer x",
            "-H",
            "x-debug: 1",
        ],
        // Redirects and rewrites.
        &["http://redirect.example.org/old/page?q=1"],
        &["http://rewrite.example.org/api/users"],
        &["http://rewrite.example.org/status"],
        // A weighted split, and one of weight 0.
        &["http://weights.example.org/api/x"],
        &["http://weights.example.org/drained"],
        // Header changes, timeouts, retries.
        &["http://headers.example.org/"],
        &["http://timeouts.example.org/slow"],
        // The path as routed: normalized.
        &["http://docs.example.org/a/../docs/%7Eb"],
    ];
    let mut all = String::new();
    for args in requests {
        let (code, out, err) = explain(args);
        assert_eq!((code, err.as_str()), (EXIT_ROUTED, ""), "{args:?}\n{out}");
        all.push_str(&out);
        all.push('\n');
    }
    insta::assert_snapshot!(all);
}

#[test]
fn no_host_no_route_and_refused_requests_exit_1_saying_why() {
    for (args, says) in [
        (
            &["http://nobody.example.net/"][..],
            "=> the edge answers 404: no object serves `nobody.example.net`",
        ),
        (
            &["http://redirect.example.org/elsewhere"][..],
            "=> the edge answers 404: no route of default/redirect matches",
        ),
        (
            &["https://nobody.example.net/"][..],
            "=> the TLS handshake fails: no object serves `nobody.example.net` with TLS",
        ),
        (
            &["http://docs.example.org/", "-H", "x_a: 1"][..],
            "=> the edge answers 400: the edge refuses header names with `_`",
        ),
        // A connection made for one host reused for another (HTTP/2
        // coalescing): the chain of the server name answers 421.
        (
            &["https://api.example.com/users", "-H", "host: shop.example.com"][..],
            "=> the edge answers 421: the connection's certificate is for another object's host",
        ),
    ] {
        let (code, out, err) = explain(args);
        assert_eq!((code, err.as_str()), (EXIT_NOT_ROUTED, ""), "{args:?}\n{out}");
        assert!(out.contains(says), "{args:?}\n{out}");
    }
}

#[test]
fn json_is_the_explanation_whole() {
    let (code, out, _) = explain(&["-o", "json", "GET", "http://canary.example.org/", "-H", "x-env: canary"]);
    assert_eq!(code, EXIT_ROUTED);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["host"]["servedBy"], "default/canary");
    assert_eq!(json["routes"][0]["result"]["kind"], "matched");
    assert_eq!(json["outcome"]["kind"], "forward");
    assert_eq!(json["outcome"]["clusters"][0]["cluster"], "svc-canary");
}

#[test]
fn a_request_that_cannot_be_read_is_an_error() {
    for (args, says) in [
        (&["ftp://a/"][..], "not an http:// or https:// URL"),
        (&["GET", "http://a/", "-H", "novalue"][..], "write `name: value`"),
    ] {
        let (code, out, err) = explain(args);
        assert_eq!((code, out.as_str()), (aetherctl::EXIT_ERROR, ""), "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
