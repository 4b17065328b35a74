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
    /// The body (Envoy closes the connection after it: `Connection: close`).
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
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes)?;
    parse(&bytes)
}

fn parse(bytes: &[u8]) -> std::io::Result<Response> {
    let invalid = |message: String| std::io::Error::new(std::io::ErrorKind::InvalidData, message);
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let body_start = match response.parse(bytes) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Err(invalid(format!("a partial response ({} bytes)", bytes.len()))),
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
    parsed.body = match parsed.header("transfer-encoding") {
        Some(coding) if coding.eq_ignore_ascii_case("chunked") => dechunk(body).map_err(invalid)?,
        _ => body.to_vec(),
    };
    Ok(parsed)
}

/// A chunked body (`size CRLF data CRLF`... `0 CRLF CRLF`), joined.
fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        match httparse::parse_chunk_size(body) {
            Ok(httparse::Status::Complete((_, 0))) => return Ok(out),
            Ok(httparse::Status::Complete((start, size))) => {
                let size = usize::try_from(size).map_err(|_| "a chunk too large".to_owned())?;
                let chunk = body
                    .get(start..start + size)
                    .ok_or_else(|| "a truncated chunk".to_owned())?;
                out.extend_from_slice(chunk);
                body = body
                    .get(start + size + 2..)
                    .ok_or_else(|| "a truncated chunk".to_owned())?;
            }
            Ok(httparse::Status::Partial) => return Err("a truncated chunked body".to_owned()),
            Err(_) => return Err("a malformed chunk size".to_owned()),
        }
    }
}
