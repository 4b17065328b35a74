//! The requests sent for a set: the witnesses of every served route, and
//! noise around each fitting witness, changed in ways the edge may or may
//! not read as the same request.

use aether_explain::{Request, witness};
use aether_projection::Snapshot;

/// One request to send: as the model reads it, how it goes on the wire,
/// and whether the client also sends the headers the route changes.
pub(super) struct Probe {
    pub(super) request: Request,
    pub(super) wire: Wire,
    pub(super) sends_changed: bool,
    /// What kind of request it is, for a report.
    pub(super) kind: &'static str,
}

/// How the headers of a request are written on the wire.
#[derive(Clone, Copy)]
pub(super) enum Wire {
    /// As the model reads them.
    Plain,
    /// Each word of a name capitalized (`X-Env`): Envoy reads names
    /// lower-cased.
    UpperNames,
    /// Each value between spaces: Envoy reads values trimmed.
    PaddedValues,
}

impl Wire {
    /// The headers as written on the wire.
    pub(super) fn headers(self, headers: &[(String, String)]) -> Vec<(String, String)> {
        headers
            .iter()
            .map(|(name, value)| match self {
                Wire::Plain => (name.clone(), value.clone()),
                Wire::UpperNames => (upper_first(name), value.clone()),
                Wire::PaddedValues => (name.clone(), format!(" {value} ")),
            })
            .collect()
    }

    /// For a report.
    pub(super) fn describe(self) -> &'static str {
        match self {
            Wire::Plain => "",
            Wire::UpperNames => " (names capitalized)",
            Wire::PaddedValues => " (values padded with spaces)",
        }
    }
}

fn plain(kind: &'static str, request: Request) -> Probe {
    Probe {
        request,
        wire: Wire::Plain,
        sends_changed: false,
        kind,
    }
}

/// The requests of a set: each served route's witnesses, noise around the
/// fitting ones, each served domain's root with a header name the edge
/// refuses, and a host nobody serves.
pub(super) fn probes(snapshot: &Snapshot) -> Vec<Probe> {
    let config = snapshot.route_configuration().expect("the projection decodes");
    let mut probes = Vec::new();
    for virtual_host in &config.virtual_hosts {
        for domain in virtual_host.domains.iter().take(3) {
            for route in &virtual_host.routes {
                let found = witness::requests(domain, route);
                let Some(fits) = found.first().cloned() else {
                    continue;
                };
                probes.extend(found.into_iter().map(|request| plain("witness", request)));
                probes.extend(noise(&fits, domain));
            }
            let host = domain
                .strip_prefix("*.")
                .map_or_else(|| domain.clone(), |rest| format!("w.{rest}"));
            let mut root = Request::parse(&format!("GET http://{host}/"), &[] as &[&str]).expect("a URL");
            probes.push(plain("root", root.clone()));
            root.headers.push(("x_a".to_owned(), "1".to_owned()));
            probes.push(plain("header name with _", root));
        }
    }
    let nobody = Request::parse("GET http://nobody.invalid/", &[] as &[&str]).expect("a URL");
    probes.push(plain("nobody's host", nobody));
    probes
}

/// Requests near a fitting one.
fn noise(fits: &Request, domain: &str) -> Vec<Probe> {
    let mut probes = vec![
        Probe {
            request: fits.clone(),
            wire: Wire::UpperNames,
            sends_changed: false,
            kind: "names capitalized",
        },
        Probe {
            request: fits.clone(),
            wire: Wire::Plain,
            sends_changed: true,
            kind: "changed headers sent",
        },
    ];
    if !fits.headers.is_empty() {
        probes.push(Probe {
            request: fits.clone(),
            wire: Wire::PaddedValues,
            sends_changed: false,
            kind: "values padded",
        });
    }
    let changed = |kind: &'static str, change: &dyn Fn(&mut Request)| {
        let mut request = fits.clone();
        change(&mut request);
        plain(kind, request)
    };
    probes.push(changed("port in Host", &|r| r.host = format!("{}:8080", r.host)));
    probes.push(changed("Host upper-cased", &|r| r.host = r.host.to_ascii_uppercase()));
    probes.push(changed("Host with a trailing dot", &|r| {
        r.host = format!("{}.", r.host)
    }));
    if let Some(rest) = domain.strip_prefix("*.") {
        probes.push(changed("two labels under a wildcard", &|r| {
            r.host = format!("a.b.{rest}")
        }));
        probes.push(changed("a wildcard's bare domain", &|r| r.host = rest.to_owned()));
    }
    if let Some((first, _)) = fits.headers.first().cloned() {
        probes.push(changed("a header sent twice", &|r| {
            let again = r.headers[0].clone();
            r.headers.push(again);
        }));
        probes.push(changed("a header absent", &|r| {
            r.headers.retain(|(name, _)| name != &first)
        }));
    }
    let query = fits.query().map(|q| format!("?{q}")).unwrap_or_default();
    let path = fits.path_only().to_owned();
    match fits.query() {
        Some(query) => {
            let mut pairs: Vec<&str> = query.split('&').collect();
            if pairs.len() > 1 {
                pairs.reverse();
                let swapped = format!("{path}?{}", pairs.join("&"));
                probes.push(changed("query reordered", &|r| r.path.clone_from(&swapped)));
            }
            probes.push(changed("query parameter added", &|r| {
                r.path = format!("{}&zz=1", r.path)
            }));
        }
        None => probes.push(changed("empty query", &|r| r.path = format!("{path}?"))),
    }
    for (kind, variant) in [
        ("path with /", format!("{path}/")),
        ("path with a dot segment", format!("/zz/..{path}")),
        ("path with //", format!("/{path}")),
        ("path with %2F", format!("{path}%2Fzz")),
        ("path with an escaped letter", escape_first_letter(&path)),
    ] {
        let with_query = format!("{variant}{query}");
        probes.push(changed(kind, &|r| r.path.clone_from(&with_query)));
    }
    probes
}

/// The path with its first letter written as a `%XX` escape.
fn escape_first_letter(path: &str) -> String {
    match path.find(|c: char| c.is_ascii_alphabetic()) {
        Some(at) => format!("{}%{:02X}{}", &path[..at], path.as_bytes()[at], &path[at + 1..]),
        None => path.to_owned(),
    }
}

/// Each word of a header name capitalized: `X-Env`.
fn upper_first(name: &str) -> String {
    name.split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect::<Vec<_>>()
        .join("-")
}
