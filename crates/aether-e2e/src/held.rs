//! A connection held open across changes of the edge's configuration: one
//! HTTP/1.1 keep-alive request after another on it, plain or over TLS,
//! counting the times the edge closed it (a change that drained it).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::http::{self, Response};
use crate::tls;

/// A plain or TLS stream.
trait Stream: Read + Write + Send {}

impl<T: Read + Write + Send> Stream for T {}

/// Where the connection goes.
#[derive(Debug, Clone)]
enum Target {
    Plain(SocketAddr),
    Tls { addr: SocketAddr, ca: Vec<u8> },
}

/// One connection to the edge for `host`, kept open between requests.
pub struct HeldConnection {
    target: Target,
    host: String,
    stream: Option<Box<dyn Stream>>,
    closed: u64,
}

impl HeldConnection {
    /// A plain HTTP/1.1 connection to `addr` for `host`, opened now.
    pub fn plain(addr: SocketAddr, host: &str) -> io::Result<Self> {
        Self::open(Target::Plain(addr), host)
    }

    /// A TLS connection to `addr` with SNI `host`, trusting only `ca`,
    /// handshake done now.
    pub fn tls(addr: SocketAddr, host: &str, ca: &[u8]) -> io::Result<Self> {
        Self::open(Target::Tls { addr, ca: ca.to_vec() }, host)
    }

    fn open(target: Target, host: &str) -> io::Result<Self> {
        let mut held = Self {
            target,
            host: host.to_owned(),
            stream: None,
            closed: 0,
        };
        held.stream = Some(held.connect()?);
        Ok(held)
    }

    fn connect(&self) -> io::Result<Box<dyn Stream>> {
        Ok(match &self.target {
            Target::Plain(addr) => {
                let stream = TcpStream::connect_timeout(addr, Duration::from_secs(5))?;
                stream.set_read_timeout(Some(Duration::from_secs(10)))?;
                Box::new(stream)
            }
            Target::Tls { addr, ca } => Box::new(tls::connect(*addr, &self.host, ca)?),
        })
    }

    /// `GET path` on the held connection. A connection found closed (the
    /// request failed, or the response says `Connection: close`) is counted
    /// once and opened again, so that the next change starts with one held
    /// open; returns the response, or the error of the connection found
    /// closed or of opening it again.
    pub fn get(&mut self, path: &str) -> io::Result<Response> {
        let result = match self.stream.as_mut() {
            Some(stream) => http::get_keeping_alive(stream, &self.host, path),
            None => Err(io::Error::new(io::ErrorKind::NotConnected, "not connected")),
        };
        let closing = result.as_ref().map_or(true, |response| {
            response
                .header("connection")
                .is_some_and(|value| value.eq_ignore_ascii_case("close"))
        });
        if closing {
            self.closed += 1;
            self.stream = None;
            self.stream = Some(self.connect()?);
        }
        result
    }

    /// How many times the connection was found closed.
    pub fn closed(&self) -> u64 {
        self.closed
    }
}
