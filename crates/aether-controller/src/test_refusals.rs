//! The binary's test-only refusals (`--test-refused-chain`,
//! `--test-refused-marker`, feature `test-hooks`): chain configurations
//! spoiled so that Envoy refuses them, for the real-Envoy suite's checks
//! that a refusal costs its object alone. Installed as a
//! [`ChainRewrite`]; the library knows nothing of them.

use aether_controller::listener::{ChainRewrite, install_chain_rewrite};
use aether_projection::{ObjectKey, TlsChain};
use envoy_types::pb::envoy::config::route::v3::{RouteConfiguration, VirtualHost};
use prost::Message;
use prost::bytes::Bytes;

/// Spoils the chain configuration of `object`, and of every chain whose
/// encoding holds `marker` (from the edit that adds it).
struct Spoiler {
    object: Option<ObjectKey>,
    marker: Option<Vec<u8>>,
}

impl ChainRewrite for Spoiler {
    fn rewrite(&self, chain: &TlsChain, configuration: Bytes) -> Bytes {
        let marked = self.marker.as_ref().is_some_and(|marker| {
            configuration
                .windows(marker.len())
                .any(|window| window == marker.as_slice())
        });
        if self.object.as_ref() == Some(&chain.object) || marked {
            spoiled(configuration)
        } else {
            configuration
        }
    }
}

/// Installs the refusals the flags ask for: `chain` (`NAMESPACE/NAME`),
/// `marker` (not empty).
pub(crate) fn install(chain: Option<&str>, marker: Option<&str>) {
    let object = chain
        .and_then(|key| key.split_once('/'))
        .map(|(namespace, name)| ObjectKey::new(namespace, name));
    let marker = marker
        .filter(|marker| !marker.is_empty())
        .map(|marker| marker.as_bytes().to_vec());
    if object.is_some() || marker.is_some() {
        install_chain_rewrite(Box::new(Spoiler { object, marker }));
    }
}

/// `configuration` with one more virtual host whose domain `*` it has
/// already (its misdirected one): Envoy refuses duplicate domains.
fn spoiled(configuration: Bytes) -> Bytes {
    let duplicate = RouteConfiguration {
        virtual_hosts: vec![VirtualHost {
            name: "spoiled".to_owned(),
            domains: vec!["*".to_owned()],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Encoded messages concatenate: the repeated field gains the entry.
    let mut bytes = configuration.to_vec();
    bytes.extend(duplicate.encode_to_vec());
    bytes.into()
}
