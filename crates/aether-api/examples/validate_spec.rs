//! Reads a VirtualHost spec in the Kubernetes JSON form (as in a manifest's
//! `spec:`) and prints every broken rule, or `valid`.
//!
//! ```text
//! cargo run -p aether-api --features validate --example validate_spec -- \
//!     '{"hosts": ["API.example.com"], "routes": [{"match": {"prefix": "/a//b"}, "backend": {"service": "web"}}]}'
//! ```
//!
//! Exit code: 0 valid, 1 invalid, 2 when the JSON is not a spec.

use std::process::ExitCode;

use aether_api::config::v1::VirtualHostSpec;
use aether_api::validate::Validate;

fn main() -> ExitCode {
    let Some(json) = std::env::args().nth(1) else {
        eprintln!("usage: validate_spec '<spec JSON>'");
        return ExitCode::from(2);
    };
    // Strict: unknown fields and wrong types are errors naming the field.
    let spec: VirtualHostSpec = match serde_json::from_str(&json) {
        Ok(spec) => spec,
        Err(err) => {
            eprintln!("not a VirtualHostSpec: {err}");
            return ExitCode::from(2);
        }
    };
    match spec.validate() {
        Ok(()) => {
            println!("valid");
            ExitCode::SUCCESS
        }
        Err(violations) => {
            // Each violation: the field path in the Kubernetes form (`spec.…`), the
            // protovalidate rule id and its message.
            for v in violations.iter() {
                println!("{}: {} [{}]", v.field_path, v.message, v.rule_id);
            }
            ExitCode::from(1)
        }
    }
}
