//! TLS by SNI at the edge: the referenced secrets, checked
//! ([`certificate`]), read from a directory in local mode ([`local`]), and
//! turned into the HTTPS listener and its SDS resources ([`edge`]).

pub mod certificate;
