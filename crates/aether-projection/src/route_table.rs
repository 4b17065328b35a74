//! The route configuration as its served virtual hosts, kept so that a
//! change of one costs O(log n), not O(n).
//!
//! The encoded `RouteConfiguration` is its name, then one length-delimited
//! entry per virtual host, then the settings after them
//! (prost writes fields in field-number order): a concatenation. So it is kept as its
//! entries in key order, in a persistent ordered map (`imbl`, a B-tree whose
//! clones share every node a change does not touch): a snapshot clones it in
//! O(1), a change replaces one entry in O(log n), and the bytes are made
//! only by whoever needs them in one buffer (a file, a decoder), while the
//! xDS server sends the entries themselves as the pieces of its response.
//!
//! Its version is made the same way. A digest of the whole encoding would
//! read every byte after each change; instead each entry's SHA-256 is taken
//! once, when the entry is made, and the table keeps their sum (four
//! wrapping 64-bit lanes: the sum does not depend on the order of changes,
//! and since an entry names its object, one set of entries is one
//! configuration). The version is the SHA-256 of the name, the sum and the
//! count. Equal configurations thus get equal versions on every replica and
//! across restarts. A sum can be steered, unlike a digest of the whole: one
//! who writes many objects could craft a change that keeps the version. So
//! the version names a configuration for people and for Envoy, and the
//! decision whether anything changed is [`RouteTable::same_as`]: the same
//! table (a clone of it) or equal entries.

use std::fmt;

use aether_api::ObjectKey;
use prost::bytes::Bytes;

use crate::envoy;

/// The served virtual hosts of a route configuration, in key order, with
/// the route configuration's name: its encoding in pieces, and its version.
#[derive(Clone)]
pub struct RouteTable {
    /// The route configuration's name.
    name: std::sync::Arc<str>,
    /// Its `name` field, encoded (empty for no name).
    head: Bytes,
    /// The settings after the virtual hosts, encoded.
    tail: Bytes,
    entries: imbl::OrdMap<ObjectKey, Entry>,
    /// Of every entry's digest.
    sum: Sum,
    /// Of every entry's encoding.
    entries_len: usize,
}

/// One virtual host: its `virtual_hosts` entry (field key, length, message)
/// and the message alone, a slice of it.
#[derive(Clone)]
struct Entry {
    encoded: Bytes,
    virtual_host: Bytes,
    digest: Sum,
}

/// Four wrapping 64-bit lanes of SHA-256 digests, added.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Sum([u64; 4]);

impl Sum {
    fn of(bytes: &[u8]) -> Self {
        let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
        let mut lanes = [0u64; 4];
        for (lane, chunk) in lanes.iter_mut().zip(digest.as_ref().chunks_exact(8)) {
            *lane = u64::from_be_bytes(chunk.try_into().unwrap_or_default());
        }
        Self(lanes)
    }

    fn add(&mut self, other: Self) {
        for (lane, other) in self.0.iter_mut().zip(other.0) {
            *lane = lane.wrapping_add(other);
        }
    }

    fn sub(&mut self, other: Self) {
        for (lane, other) in self.0.iter_mut().zip(other.0) {
            *lane = lane.wrapping_sub(other);
        }
    }
}

impl RouteTable {
    /// No virtual host, in the route configuration named `name`.
    pub(crate) fn new(name: &str) -> Self {
        let mut head = Vec::new();
        envoy::encode_route_configuration_head(name, &mut head);
        let mut tail = Vec::new();
        envoy::encode_route_configuration_tail(&mut tail);
        Self {
            name: name.into(),
            head: head.into(),
            tail: tail.into(),
            entries: imbl::OrdMap::new(),
            sum: Sum::default(),
            entries_len: 0,
        }
    }

    /// Serves `entry` (from [`envoy::virtual_host_entry`]) for `key`, in
    /// place of the one it had.
    pub(crate) fn insert(&mut self, key: ObjectKey, entry: Bytes) {
        // The entry is a field key (one byte: field 2), the message's
        // length, then the message, which ends the entry.
        let message_len = prost::encoding::decode_varint(&mut entry.get(1..).unwrap_or_default())
            .ok()
            .and_then(|len| usize::try_from(len).ok())
            .filter(|len| *len <= entry.len())
            .unwrap_or(0);
        let entry = Entry {
            virtual_host: entry.slice(entry.len() - message_len..),
            digest: Sum::of(&entry),
            encoded: entry,
        };
        self.sum.add(entry.digest);
        self.entries_len += entry.encoded.len();
        if let Some(old) = self.entries.insert(key, entry) {
            self.forget(&old);
        }
    }

    /// [`RouteTable::insert`], unless `key` has these very bytes already
    /// (then the table stays shared with its clones).
    pub(crate) fn put(&mut self, key: &ObjectKey, entry: Bytes) {
        if self
            .entries
            .get(key)
            .is_none_or(|held| !same_bytes(&held.encoded, &entry))
        {
            self.insert(key.clone(), entry);
        }
    }

    /// Stops serving `key`'s virtual host.
    pub(crate) fn remove(&mut self, key: &ObjectKey) {
        if let Some(old) = self.entries.remove(key) {
            self.forget(&old);
        }
    }

    fn forget(&mut self, old: &Entry) {
        self.sum.sub(old.digest);
        self.entries_len -= old.encoded.len();
    }

    /// The route configuration's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many virtual hosts are served.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Each virtual host, encoded as an `envoy.config.route.v3.VirtualHost`,
    /// in key order. A virtual host that did not change between two tables
    /// of one projector is the same buffer (the same `as_ptr`).
    pub fn virtual_hosts(&self) -> impl ExactSizeIterator<Item = &Bytes> + DoubleEndedIterator {
        self.entries.values().map(|entry| &entry.virtual_host)
    }

    /// The virtual host served for `key`, if any.
    pub fn virtual_host(&self, key: &ObjectKey) -> Option<&Bytes> {
        self.entries.get(key).map(|entry| &entry.virtual_host)
    }

    /// The encoded `RouteConfiguration`'s length.
    pub fn encoded_len(&self) -> usize {
        self.head.len() + self.entries_len + self.tail.len()
    }

    /// The encoded `RouteConfiguration` in pieces, in order: shared buffers
    /// whose concatenation is [`RouteTable::encode`]'s.
    pub fn pieces(&self) -> impl Iterator<Item = &Bytes> {
        std::iter::once(&self.head)
            .chain(self.entries.values().map(|entry| &entry.encoded))
            .chain(std::iter::once(&self.tail))
    }

    /// The encoded `RouteConfiguration` with `virtual_hosts` (encoded
    /// `VirtualHost` messages) in place of this table's: the same name and
    /// settings around other virtual hosts (a marker, say, to find where
    /// they go in another rendering).
    pub fn encode_with(&self, virtual_hosts: &[&[u8]]) -> Vec<u8> {
        self.encode_parts(&self.head, virtual_hosts)
    }

    /// [`RouteTable::encode_with`] under another name: the same settings
    /// around `virtual_hosts`, in a configuration `name`.
    pub fn encode_named(&self, name: &str, virtual_hosts: &[&[u8]]) -> Vec<u8> {
        let mut head = Vec::new();
        envoy::encode_route_configuration_head(name, &mut head);
        self.encode_parts(&head, virtual_hosts)
    }

    fn encode_parts(&self, head: &[u8], virtual_hosts: &[&[u8]]) -> Vec<u8> {
        let mut out = head.to_vec();
        for virtual_host in virtual_hosts {
            envoy::append_virtual_host(virtual_host, &mut out);
        }
        out.extend_from_slice(&self.tail);
        out
    }

    /// The encoded `RouteConfiguration` in one buffer.
    pub fn encode(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.encoded_len());
        for piece in self.pieces() {
            out.extend_from_slice(piece);
        }
        Bytes::from(out)
    }

    /// The version of this configuration: 16 hex digits (see the module
    /// documentation). O(1).
    pub fn version(&self) -> String {
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        context.update(&(self.head.len() as u64).to_be_bytes());
        context.update(&self.head);
        context.update(&(self.tail.len() as u64).to_be_bytes());
        context.update(&self.tail);
        for lane in self.sum.0 {
            context.update(&lane.to_be_bytes());
        }
        context.update(&(self.entries.len() as u64).to_be_bytes());
        context.finish().as_ref()[..8]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// The objects whose virtual host differs between `older` and this
    /// table (added, changed or removed), in key order. Nodes the two
    /// tables share (a table and its own later versions share all but the
    /// changed paths) are skipped, so it costs O(changes × log n) there.
    pub fn changed_since(&self, older: &RouteTable) -> Vec<ObjectKey> {
        older
            .entries
            .diff(&self.entries)
            .map(|change| match change {
                imbl::ordmap::DiffItem::Add(key, _)
                | imbl::ordmap::DiffItem::Remove(key, _)
                | imbl::ordmap::DiffItem::Update { new: (key, _), .. } => key.clone(),
            })
            .collect()
    }

    /// Whether `other` is this table or a clone of it, unchanged since:
    /// O(1).
    pub fn shares(&self, other: &Self) -> bool {
        self.entries.ptr_eq(&other.entries) && self.head == other.head && self.tail == other.tail
    }

    /// Whether `other` is the same configuration: [`RouteTable::shares`],
    /// or equal name, settings and entries (O(1) when the sums differ, as
    /// they do after a change; a walk of the entries when they are equal).
    pub fn same_as(&self, other: &Self) -> bool {
        self.shares(other) || self == other
    }
}

impl PartialEq for RouteTable {
    fn eq(&self, other: &Self) -> bool {
        self.head == other.head
            && self.tail == other.tail
            && self.sum == other.sum
            && self.entries_len == other.entries_len
            && self.entries.len() == other.entries.len()
            && self
                .entries
                .iter()
                .zip(other.entries.iter())
                .all(|((a_key, a), (b_key, b))| a_key == b_key && same_bytes(&a.encoded, &b.encoded))
    }
}

impl Eq for RouteTable {}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        same_bytes(&self.encoded, &other.encoded)
    }
}

/// Equal bytes; the same buffer is told without reading it.
fn same_bytes(a: &Bytes, b: &Bytes) -> bool {
    (a.as_ptr() == b.as_ptr() && a.len() == b.len()) || a == b
}

impl fmt::Debug for RouteTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RouteTable")
            .field("name", &self.name)
            .field("virtual_hosts", &self.entries.len())
            .field("encoded_len", &self.encoded_len())
            .field("version", &self.version())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, domain: &str) -> Bytes {
        envoy::virtual_host_entry(name, &[domain.to_owned()], &[])
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("default", name)
    }

    #[test]
    fn the_pieces_are_the_whole_encoding_in_key_order() {
        let mut table = RouteTable::new("edge");
        let (a, b) = (entry("default/a", "a.example.com"), entry("default/b", "b.example.com"));
        table.insert(key("b"), b.clone());
        table.insert(key("a"), a.clone());
        let whole = envoy_types::pb::envoy::config::route::v3::RouteConfiguration {
            name: "edge".into(),
            virtual_hosts: [&a, &b]
                .iter()
                .map(|entry| prost::Message::decode_length_delimited(&entry[1..]).unwrap())
                .collect(),
            ignore_port_in_host_matching: true,
            ..Default::default()
        };
        assert_eq!(table.encode(), prost::Message::encode_to_vec(&whole));
        assert_eq!(table.encoded_len(), table.encode().len());
        assert_eq!(table.name(), whole.name);
        // Each virtual host is the end of its entry, not a copy.
        for (entry, name) in [(&a, "a"), (&b, "b")] {
            let host = table.virtual_host(&key(name)).unwrap();
            assert_eq!(
                host.as_ptr() as usize + host.len(),
                entry.as_ptr() as usize + entry.len()
            );
            assert!(host.len() < entry.len());
        }
        assert_eq!(table.virtual_hosts().len(), 2);
    }

    #[test]
    fn the_version_follows_the_entries_whatever_the_order_of_changes() {
        let (a, b) = (entry("default/a", "a.example.com"), entry("default/b", "b.example.com"));
        let b2 = entry("default/b", "b2.example.com");
        let mut one = RouteTable::new("edge");
        one.insert(key("a"), a.clone());
        one.insert(key("b"), b.clone());
        let mut other = RouteTable::new("edge");
        other.insert(key("b"), b2);
        other.insert(key("a"), a.clone());
        assert_ne!(one.version(), other.version());
        assert!(!one.same_as(&other));
        other.insert(key("b"), b.clone());
        assert_eq!(one.version(), other.version());
        assert!(one.same_as(&other));
        other.remove(&key("a"));
        assert_ne!(one.version(), other.version());
        let mut only_b = RouteTable::new("edge");
        only_b.insert(key("b"), b.clone());
        assert_eq!(other.version(), only_b.version());
        assert_eq!(other.encoded_len(), only_b.encoded_len());
        assert_ne!(RouteTable::new("edge").version(), RouteTable::new("other").version());
    }

    #[test]
    fn changed_since_names_what_was_added_changed_or_removed() {
        let mut older = RouteTable::new("edge");
        for name in ["a", "b", "c"] {
            older.insert(
                key(name),
                entry(&format!("default/{name}"), &format!("{name}.example.com")),
            );
        }
        let mut newer = older.clone();
        assert!(newer.changed_since(&older).is_empty());
        newer.insert(key("b"), entry("default/b", "b2.example.com"));
        newer.remove(&key("c"));
        newer.insert(key("d"), entry("default/d", "d.example.com"));
        assert_eq!(newer.changed_since(&older), [key("b"), key("c"), key("d")]);
        // The same bytes again are no change.
        newer.insert(key("a"), entry("default/a", "a.example.com"));
        assert_eq!(newer.changed_since(&older), [key("b"), key("c"), key("d")]);
    }
}
