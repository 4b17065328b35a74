//! The specs the validation benches measure, aether-api's and the
//! comparison with the runtime validator's (`crates/aether-api/benches/runtime`).

use aether_api::config::v1::{
    HttpRoute, RouteBackend, RouteMatch, SecretProvider, VirtualHostSpec, VirtualHostTls, route_match::Path,
};

/// The spec of `examples/proposal.yaml`, the design proposal's manifest.
pub fn proposal() -> VirtualHostSpec {
    let manifest: serde_json::Value = serde_saphyr::from_str(include_str!("../../../examples/proposal.yaml"))
        .expect("examples/proposal.yaml is YAML");
    serde_json::from_value(manifest["spec"].clone()).expect("examples/proposal.yaml is a VirtualHost")
}

fn route(path: Path, service: &str, port: u32) -> HttpRoute {
    HttpRoute {
        r#match: Some(RouteMatch {
            path: Some(path),
            ..Default::default()
        }),
        backend: Some(RouteBackend {
            service: service.into(),
            port,
        }),
        ..Default::default()
    }
}

/// 16 hosts and 128 routes, each path and name longer than the proposal's.
pub fn worst_case() -> VirtualHostSpec {
    VirtualHostSpec {
        hosts: (0..16)
            .map(|i| format!("*.team-{i}.eu-west-1.api.example.com"))
            .collect(),
        routes: (0..128)
            .map(|i| {
                let path = format!("/v1/tenants/team-{i}/resources/items~{i}");
                let path = if i % 2 == 0 {
                    Path::Prefix(path)
                } else {
                    Path::Exact(path)
                };
                route(path, &format!("svc-team-{i}.backends"), 8000 + i)
            })
            .collect(),
        tls: Some(VirtualHostTls {
            secret_name: "wildcard-example-com-tls".into(),
            provider: SecretProvider::AwsSecretsManager.into(),
        }),
        ..Default::default()
    }
}

/// The proposal's spec with the phase 2 matching fields on eight routes:
/// regex paths, methods, headers and query parameters, specificity order.
pub fn matching() -> VirtualHostSpec {
    serde_saphyr::from_str(
        r#"
hosts: [api.example.com, "*.api.example.com"]
routeOrder: SPECIFICITY
routes:
  - match: {regex: "^/users/[0-9]+$", methods: [GET, HEAD]}
    backend: {service: svc-users, port: 8080}
  - match:
      prefix: /users
      headers:
        - {name: x-env, exact: canary}
        - {name: x-debug, present: true, invert: true}
    backend: {service: svc-users-canary, port: 8080}
  - match: {prefix: /users, methods: [POST, PUT, PATCH, DELETE]}
    backend: {service: svc-users-write, port: 8080}
  - match:
      prefix: /search
      queryParams:
        - {name: version, exact: "2"}
        - {name: q, regex: "^[a-z]{1,20}$"}
    backend: {service: svc-search-v2}
  - match: {prefix: /search, headers: [{name: user-agent, regex: ".*Mobile.*"}]}
    backend: {service: svc-search-mobile}
  - match: {prefix: /search}
    backend: {service: svc-search}
  - match: {exact: /healthz, methods: [GET]}
    backend: {service: svc-health}
  - match: {prefix: /, headers: [{name: accept, prefix: text/html}]}
    backend: {service: svc-web}
tls: {secretName: example-tls, provider: KUBERNETES}
"#,
    )
    .expect("the phase 2 bench spec parses")
}

/// The phase 2 actions on six routes: a weighted split, rewrites, a
/// redirect, header changes on both sides, a timeout and retries.
pub fn actions() -> VirtualHostSpec {
    serde_saphyr::from_str(
        r#"
hosts: [shop.example.com]
routes:
  - match: {prefix: /api}
    backends:
      - {service: svc-api, port: 8080, weight: 90}
      - {service: svc-api-canary, port: 8080, weight: 10}
    rewrite: {prefix: /v2, host: api.internal}
    timeout: 15s
    retries: {attempts: 3, perTryTimeout: 2s, retryOn: [connect-failure, refused-stream, 5xx]}
  - match: {exact: /status}
    backend: {service: svc-health}
    rewrite: {path: /healthz}
  - match: {prefix: /old}
    redirect: {scheme: https, host: new.example.com, port: 443, prefix: /new, statusCode: 301}
  - match: {prefix: /checkout}
    backend: {service: svc-checkout, port: 8443}
    requestHeaders:
      set: [{name: x-team, value: payments}]
      add: [{name: x-via, value: edge}]
      remove: [x-debug]
    responseHeaders:
      set: [{name: cache-control, value: no-store}]
      remove: [server]
    timeout: 1m30s
  - match: {exact: /legacy}
    redirect: {path: /, statusCode: 308}
  - match: {prefix: /}
    backend: {service: svc-web}
"#,
    )
    .expect("the actions bench spec parses")
}

/// The proposal's spec with four violations: a host with an upper-case
/// letter, a relative prefix, a backend service name with an underscore and
/// a port above 65535.
pub fn invalid() -> VirtualHostSpec {
    let mut spec = proposal();
    spec.hosts[0] = "API.example.com".into();
    spec.routes[0].r#match.as_mut().unwrap().path = Some(Path::Prefix("users".into()));
    let backend = spec.routes[1].backend.as_mut().unwrap();
    backend.service = "svc_health".into();
    backend.port = 70_000;
    spec
}

/// Every phase 2 field at least once, valid: the specificity route order;
/// regex, exact and prefix paths with methods, header matches (exact,
/// prefix, regex, present, inverted) and query parameter matches (exact,
/// regex, present); weighted backends; rewrites of the prefix, the path and
/// the host; redirects (scheme, host, port, path or prefix, status code);
/// request and response header changes (set, add, remove); timeouts and
/// retries (attempts, per-try timeout, conditions).
pub fn phase2() -> VirtualHostSpec {
    serde_saphyr::from_str(
        r#"
hosts: [shop.example.com, "*.shop.example.com"]
routeOrder: SPECIFICITY
routes:
  - match: {regex: "^/items/[0-9]+$", methods: [GET, HEAD]}
    backend: {service: svc-items, port: 8080}
    timeout: 500ms
  - match:
      prefix: /api
      methods: [POST, PUT, PATCH, DELETE]
      headers:
        - {name: x-env, exact: canary}
        - {name: authorization, prefix: "Bearer "}
        - {name: user-agent, regex: ".*Mobile.*"}
        - {name: x-debug, present: true, invert: true}
      queryParams:
        - {name: version, exact: "2"}
        - {name: q, regex: "^[a-z]{1,20}$"}
        - {name: preview, present: true}
    backends:
      - {service: svc-api, port: 8080, weight: 90}
      - {service: svc-api-canary, port: 8080, weight: 10}
    rewrite: {prefix: /v2, host: api.internal}
    requestHeaders:
      set: [{name: x-team, value: payments}]
      add: [{name: x-via, value: edge}]
      remove: [x-debug]
    responseHeaders:
      set: [{name: cache-control, value: no-store}]
      add: [{name: x-served-by, value: edge}]
      remove: [server]
    timeout: 1m30s
    retries: {attempts: 3, perTryTimeout: 2s, retryOn: [connect-failure, refused-stream, 5xx]}
  - match: {exact: /status}
    backend: {service: svc-health}
    rewrite: {path: /healthz}
  - match: {prefix: /old}
    redirect: {scheme: https, host: new.example.com, port: 443, prefix: /new, statusCode: 301}
    responseHeaders: {set: [{name: x-moved, value: "yes"}]}
  - match: {exact: /legacy}
    redirect: {path: /, statusCode: 308}
  - match: {prefix: /}
    backend: {service: svc-web}
tls: {secretName: shop-tls, provider: KUBERNETES}
"#,
    )
    .expect("the phase 2 bench spec parses")
}

/// How many violations [`invalid_phase2`] holds.
pub const INVALID_PHASE2_VIOLATIONS: usize = 12;

/// [`phase2`]'s shape with twelve violations, ten of them on phase 2 rules
/// (one each, so every validator counts them alike): an upper-case host, a
/// relative prefix, an unknown method, an upper-case header name, a query
/// parameter `present: false`, the same weighted backend twice, a weight
/// above 1000000, a `host` header removed, retry attempts above 10, a
/// timeout with a fraction, a `rewrite.prefix` on an exact match, and a
/// redirect with a timeout.
pub fn invalid_phase2() -> VirtualHostSpec {
    serde_saphyr::from_str(
        r#"
hosts: [Shop.example.com]
routeOrder: SPECIFICITY
routes:
  - match: {prefix: items}
    backend: {service: svc-items, port: 8080}
  - match:
      prefix: /api
      methods: [GET, FETCH]
      headers: [{name: X-Env, exact: canary}]
      queryParams: [{name: preview, present: false}]
    backends:
      - {service: svc-api, port: 8080, weight: 90}
      - {service: svc-api, port: 8080, weight: 2000000}
    requestHeaders: {remove: [host]}
    retries: {attempts: 11, retryOn: [5xx]}
  - match: {exact: /status}
    backend: {service: svc-health}
    rewrite: {prefix: /healthz}
    timeout: 1.5s
  - match: {prefix: /old}
    redirect: {scheme: https, prefix: /new, statusCode: 301}
    timeout: 15s
"#,
    )
    .expect("the invalid phase 2 bench spec parses")
}
