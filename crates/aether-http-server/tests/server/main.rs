//! aether-http-server's integration tests, one binary (one link step): the
//! listener over HTTP/1.1 and over HTTP/2 with TLS, and its reloading TLS
//! files. The EMFILE test is `tests/emfile.rs`, a binary of its own.
//!
//! `cargo test -p aether-http-server --test server http1::` runs one module
//! alone.

// Shared with tests/emfile.rs.
#[path = "../common/mod.rs"]
mod common;

mod http1;
mod http2_tls;
mod reloading_tls;
