//! One HTTP/1.1 request, written byte for byte.
//!
//! Written here rather than with an HTTP client crate because the tests
//! need the request exactly as given: a Host header with a port, a path
//! with `%7E`, `%2e%2e` or `//` that a client library would normalize or
//! refuse before Envoy ever saw it. The response is parsed with `httparse`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A response: its status, headers and body.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers, names in lower case, in order.
    pub headers: Vec<(String, String)>,
    /// The body (after it Envoy closes the connection, unless the request
    /// asked to keep it alive).
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, value)| value.as_str())
    }
}

/// `GET path` with `Host: host` to `addr`, and its response; an error for a
/// refused connection or a response that is not HTTP.
pub fn get(addr: SocketAddr, host: &str, path: &str) -> std::io::Result<Response> {
    request(addr, "GET", host, path, &[])
}

/// A request with extra `headers`, and its response.
pub fn request(
    addr: SocketAddr,
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<Response> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    exchange(&mut stream, method, host, path, headers)
}

/// Sends the request on `stream` (plain or TLS) and reads its response.
pub fn exchange(
    stream: &mut (impl Read + Write),
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<Response> {
    send(stream, method, host, path, headers, "close")
}

/// `GET path` with `Host: host` on `stream`, asking to keep the connection
/// open for the next request (HTTP/1.1 keep-alive), and its response.
pub fn get_keeping_alive(stream: &mut (impl Read + Write), host: &str, path: &str) -> std::io::Result<Response> {
    send(stream, "GET", host, path, &[], "keep-alive")
}

/// The request with `Connection: connection`, and its response.
fn send(
    stream: &mut (impl Read + Write),
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
    connection: &str,
) -> std::io::Result<Response> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: {connection}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    // Read until the response is complete, not until the connection
    // closes: after a response of its own (a 404) Envoy waits for the
    // client to close first (`delayed_close_timeout`, 1 s).
    let mut bytes = Vec::new();
    let mut buffer = [0; 64 * 1024];
    loop {
        let read = stream.read(&mut buffer)?;
        bytes.extend_from_slice(&buffer[..read]);
        let at_end = read == 0;
        if let Some(response) = parse(&bytes, at_end)? {
            return Ok(response);
        }
        if at_end {
            return Err(invalid(format!("a partial response ({} bytes)", bytes.len())));
        }
    }
}

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

/// The response in `bytes`, `None` while it is incomplete (`at_end`: the
/// connection is closed, which ends a body of no stated length).
fn parse(bytes: &[u8], at_end: bool) -> std::io::Result<Option<Response>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let body_start = match response.parse(bytes) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(err) => return Err(invalid(format!("not an HTTP response: {err}"))),
    };
    let mut parsed = Response {
        status: response.code.unwrap_or_default(),
        headers: response
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_ascii_lowercase(),
                    String::from_utf8_lossy(h.value).into_owned(),
                )
            })
            .collect(),
        body: Vec::new(),
    };
    let body = &bytes[body_start..];
    let chunked = parsed
        .header("transfer-encoding")
        .is_some_and(|coding| coding.eq_ignore_ascii_case("chunked"));
    let length = parsed
        .header("content-length")
        .and_then(|length| length.parse::<usize>().ok());
    parsed.body = if chunked {
        match dechunk(body)? {
            Some(body) => body,
            None => return Ok(None),
        }
    } else if let Some(length) = length {
        match body.get(..length) {
            Some(body) => body.to_vec(),
            None => return Ok(None),
        }
    } else if at_end {
        body.to_vec()
    } else {
        return Ok(None);
    };
    Ok(Some(parsed))
}

/// A chunked body (`size CRLF data CRLF`... `0 CRLF CRLF`), joined; `None`
/// while incomplete.
fn dechunk(mut body: &[u8]) -> std::io::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    loop {
        match httparse::parse_chunk_size(body) {
            Ok(httparse::Status::Complete((_, 0))) => return Ok(Some(out)),
            Ok(httparse::Status::Complete((start, size))) => {
                let size = usize::try_from(size).map_err(|_| invalid("a chunk too large".to_owned()))?;
                match body.get(start + size + 2..) {
                    Some(rest) => {
                        out.extend_from_slice(&body[start..start + size]);
                        body = rest;
                    }
                    None => return Ok(None),
                }
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(invalid("a malformed chunk size".to_owned())),
        }
    }
}
