//! A request as a user writes it: `GET https://api.example.com/users/7?x=1`
//! and headers `name: value`.

use std::fmt;

use serde::Serialize;

/// The scheme a request is sent with: which of the edge's listeners takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// The plain-HTTP listener.
    Http,
    /// The HTTPS listener: a filter chain chosen by SNI (the host).
    Https,
}

impl Scheme {
    /// `http` or `https`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// One request to the edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    /// The method, as sent (`GET`).
    pub method: String,
    /// The scheme.
    pub scheme: Scheme,
    /// The `Host` header: the URL's authority, or a `host` header given.
    pub host: String,
    /// Over https, the server name of the TLS handshake (SNI): the URL's
    /// host, even when a `host` header names another (a connection reused
    /// for another host, as HTTP/2 clients do). `None` over http.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// The path and query, as sent (`/users/7?x=1`).
    pub path: String,
    /// The other headers, names in lower case, values without surrounding
    /// spaces (as Envoy reads them), in the order given.
    pub headers: Vec<(String, String)>,
}

/// Why a request could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError(String);

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RequestError {}

fn error(message: impl Into<String>) -> RequestError {
    RequestError(message.into())
}

/// The longest request line or header read: a request beyond it is no
/// question to answer, and nothing is worked on unbounded.
pub const MAX_LEN: usize = 64 * 1024;

impl Request {
    /// Reads `[METHOD] URL` (the method defaults to `GET`) and headers
    /// written `name: value`. A `host` header replaces the URL's authority
    /// as the `Host` the edge routes on, as with curl.
    ///
    /// ```
    /// use aether_explain::{Request, Scheme};
    ///
    /// let request = Request::parse("POST https://api.example.com/users?x=1", &["X-Team: a"]).unwrap();
    /// assert_eq!(request.method, "POST");
    /// assert_eq!(request.scheme, Scheme::Https);
    /// assert_eq!(request.host, "api.example.com");
    /// assert_eq!(request.path, "/users?x=1");
    /// assert_eq!(request.headers, [("x-team".to_owned(), "a".to_owned())]);
    /// ```
    pub fn parse<S: AsRef<str>>(line: &str, headers: &[S]) -> Result<Self, RequestError> {
        if line.len() > MAX_LEN {
            return Err(error(format!("the request is over {MAX_LEN} bytes")));
        }
        let mut words = line.split_whitespace();
        let (method, url) = match (words.next(), words.next(), words.next()) {
            (Some(url), None, _) => ("GET", url),
            (Some(method), Some(url), None) => (method, url),
            (None, ..) => return Err(error("no request: write `GET http://HOST/PATH`")),
            (Some(_), Some(_), Some(extra)) => {
                return Err(error(format!(
                    "unexpected `{extra}`: write `METHOD URL`, headers with -H"
                )));
            }
        };
        if !method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-') {
            return Err(error(format!("`{method}` is not an HTTP method")));
        }
        let (scheme, rest) = if let Some(rest) = strip_prefix_ignore_case(url, "http://") {
            (Scheme::Http, rest)
        } else if let Some(rest) = strip_prefix_ignore_case(url, "https://") {
            (Scheme::Https, rest)
        } else {
            return Err(error(format!("`{url}` is not an http:// or https:// URL")));
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, rest) = rest.split_at(end);
        if authority.is_empty() || authority.contains('@') {
            return Err(error(format!("`{url}` names no host (or names a user)")));
        }
        // A fragment is never sent.
        let rest = rest.split('#').next().unwrap_or_default();
        let path = match rest.strip_prefix('?') {
            Some(query) => format!("/?{query}"),
            None if rest.is_empty() => "/".to_owned(),
            None => rest.to_owned(),
        };
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(error("the path holds a space or control character: escape it (%20)"));
        }
        let mut request = Request {
            method: method.to_owned(),
            scheme,
            host: authority.to_owned(),
            server_name: (scheme == Scheme::Https).then(|| authority.to_owned()),
            path,
            headers: Vec::new(),
        };
        for header in headers {
            let header = header.as_ref();
            if header.len() > MAX_LEN {
                return Err(error(format!("a header is over {MAX_LEN} bytes")));
            }
            let Some((name, value)) = header.split_once(':') else {
                return Err(error(format!("header `{header}`: write `name: value`")));
            };
            let name = name.trim().to_ascii_lowercase();
            if name.is_empty() || !name.bytes().all(is_token) {
                return Err(error(format!("header `{header}`: `{name}` is not a header name")));
            }
            let value = value.trim_matches([' ', '\t']).to_owned();
            if name == "host" {
                request.host = value;
            } else {
                request.headers.push((name, value));
            }
        }
        Ok(request)
    }

    /// The path without its query, as sent.
    pub fn path_only(&self) -> &str {
        self.path.split('?').next().unwrap_or_default()
    }

    /// The query, without `?`, if the path has one.
    pub fn query(&self) -> Option<&str> {
        self.path.split_once('?').map(|(_, query)| query)
    }

    /// The values of header `name` (lower case), in order.
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.headers
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Display for Request {
    /// `METHOD scheme://AUTHORITY PATH`, the authority the URL's (the
    /// server name over https), then ` (host: H)` when `Host` differs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let authority = self.server_name.as_deref().unwrap_or(&self.host);
        write!(f, "{} {}://{authority}{}", self.method, self.scheme.as_str(), self.path)?;
        if authority != self.host {
            write!(f, " (host: {})", self.host)?;
        }
        Ok(())
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// An RFC 9110 token character.
fn is_token(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_alone_is_a_get_and_an_empty_path_is_the_root() {
        let request = Request::parse("http://a.example.com", &[] as &[&str]).unwrap();
        assert_eq!((request.method.as_str(), request.path.as_str()), ("GET", "/"));
        let request = Request::parse("http://a.example.com?x=1#frag", &[] as &[&str]).unwrap();
        assert_eq!(request.path, "/?x=1");
        assert_eq!(request.query(), Some("x=1"));
    }

    #[test]
    fn a_host_header_replaces_the_urls_authority_but_not_the_server_name() {
        let request = Request::parse("GET http://127.0.0.1:8080/a", &["Host: api.example.com"]).unwrap();
        assert_eq!((request.host.as_str(), request.server_name), ("api.example.com", None));
        assert!(request.headers.is_empty());
        let request = Request::parse("GET https://a.example.com/", &["host: b.example.com"]).unwrap();
        assert_eq!(request.host, "b.example.com");
        assert_eq!(request.server_name.as_deref(), Some("a.example.com"));
    }

    #[test]
    fn what_cannot_be_a_request_is_an_error_naming_it() {
        for (line, headers, says) in [
            ("", vec![], "no request"),
            ("GET ftp://a/b", vec![], "not an http"),
            ("GET http:///a", vec![], "names no host"),
            ("GET http://u@a/", vec![], "names no host"),
            ("G(T http://a/", vec![], "not an HTTP method"),
            ("GET http://a/ extra", vec![], "unexpected `extra`"),
            ("GET http://a/", vec!["novalue"], "write `name: value`"),
            ("GET http://a/", vec!["bad name: v"], "not a header name"),
        ] {
            let err = Request::parse(line, &headers).unwrap_err().to_string();
            assert!(err.contains(says), "{line:?} {headers:?}: {err}");
        }
        let long = format!("GET http://a/{}", "a".repeat(MAX_LEN));
        assert!(
            Request::parse(&long, &[] as &[&str])
                .unwrap_err()
                .to_string()
                .contains("over")
        );
    }
}
