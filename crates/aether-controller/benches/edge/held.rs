//! The keep-alive connections to a host no change touches, held open across
//! every change and restart: a change that closes one drained a host it
//! did not touch.

use aether_e2e::{Edge, HeldConnection};

use crate::changes;

/// Plain HTTP/1.1, and over TLS for the HTTPS fleet, opened once the edge
/// serves and asked after each change (once Envoy is idle again).
pub struct Held {
    plain: HeldConnection,
    tls: Option<HeldConnection>,
}

impl Held {
    /// Opens them to the edge's Envoy (again after a new Envoy started:
    /// its listeners are on new ports); both must answer.
    pub fn open(edge: &Edge, https: bool, ca: &[u8]) -> Self {
        let host = changes::host(changes::UNRELATED);
        let plain = HeldConnection::plain(edge.envoy.listener(), &host)
            .unwrap_or_else(|err| panic!("a connection for {host}: {err}\n{}", edge.logs()));
        let tls = https.then(|| {
            HeldConnection::tls(edge.https_addr(), &host, ca)
                .unwrap_or_else(|err| panic!("a TLS connection for {host}: {err}\n{}", edge.logs()))
        });
        let mut held = Self { plain, tls };
        held.ask();
        assert_eq!(held.closed(), (0, 0), "the held connections answer\n{}", edge.logs());
        held
    }

    /// One request on each (a closed one is counted and opened again).
    pub fn ask(&mut self) {
        let path = "/healthz";
        // The error is counted; the count is what the table shows.
        let _ = self.plain.get(path);
        if let Some(tls) = &mut self.tls {
            let _ = tls.get(path);
        }
    }

    /// How many times each was found closed (plain, TLS).
    pub fn closed(&self) -> (u64, u64) {
        (self.plain.closed(), self.tls.as_ref().map_or(0, HeldConnection::closed))
    }

    /// The closures since `before` ([`Held::closed`]), for the table:
    /// `plain / TLS`, `–` for TLS on the plain fleet.
    pub fn closed_since(&self, before: (u64, u64)) -> String {
        let (plain, tls) = self.closed();
        let tls = match &self.tls {
            Some(_) => (tls - before.1).to_string(),
            None => "–".to_owned(),
        };
        format!("{} / {tls}", plain - before.0)
    }
}
