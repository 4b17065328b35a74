//! The published resources of one type, as a persistent map from name to
//! item (`imbl`, a B-tree whose clones share every node a change does not
//! touch).
//!
//! A publication is the previous one with some items put or removed, so
//! consecutive publications share all but the changed paths; a stream that
//! remembers the publication it last synced with finds what changed since
//! with [`Resources::changes_since`], which skips the shared nodes: a change
//! of one resource among tens of thousands costs a delta stream O(log n),
//! not O(n).
//!
//! Each item carries its own version (its encoding's digest, or what an
//! encoding in [`Pieces`] says), taken once when the item is put, and the
//! number of the first publication holding it ([`Item::seq`]):
//! publications are numbered in the order they are made
//! ([`Resources::stamp`]), so an Envoy holding publication `n` of a type
//! holds every item numbered `n` or less ([`crate::fleet`]). The version of a
//! whole set, which state-of-the-world responses carry, is a digest of the
//! names and item versions, made only when asked for and then kept: no body
//! is read again, and delta streams never ask for it.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

/// The version of an encoding: the first 8 bytes of its SHA-256, in hex.
pub fn version_of(encoded: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, encoded);
    digest.as_ref()[..8].iter().map(|byte| format!("{byte:02x}")).collect()
}

/// An encoding held as buffers of its own (a route configuration's virtual
/// hosts, say), sent as they are: publishing it copies nothing.
pub trait Pieces: std::fmt::Debug + Send + Sync + 'static {
    /// The encoding's length.
    fn encoded_len(&self) -> usize;
    /// Appends its buffers, in order, to `pieces`, leaving out empty ones.
    fn push_pieces(&self, pieces: &mut Vec<Bytes>);
    /// The encoding in one buffer (a copy).
    fn to_bytes(&self) -> Bytes;
    /// Its version.
    fn version(&self) -> String;
    /// Whether `other` is the same encoding; O(1) when it is a clone.
    fn same_as(&self, other: &dyn Pieces) -> bool;
    /// Itself, for [`Pieces::same_as`] to downcast `other`.
    fn as_any(&self) -> &dyn Any;
}

/// One resource's encoding, as the shared buffers a response sends.
#[derive(Debug, Clone)]
pub enum Encoded {
    /// In one buffer.
    Buffer(Bytes),
    /// In pieces of its own.
    Pieces(Arc<dyn Pieces>),
}

impl PartialEq for Encoded {
    fn eq(&self, other: &Self) -> bool {
        self.same_as(other)
    }
}

impl Encoded {
    /// The encoding's length.
    pub fn len(&self) -> usize {
        match self {
            Encoded::Buffer(bytes) => bytes.len(),
            Encoded::Pieces(pieces) => pieces.encoded_len(),
        }
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends its buffers, in order, to `pieces` (none when empty).
    pub(crate) fn push_pieces(&self, pieces: &mut Vec<Bytes>) {
        match self {
            Encoded::Buffer(bytes) if bytes.is_empty() => {}
            Encoded::Buffer(bytes) => pieces.push(bytes.clone()),
            Encoded::Pieces(own) => own.push_pieces(pieces),
        }
    }

    /// The encoding in one buffer (a copy, for pieces).
    pub fn to_bytes(&self) -> Bytes {
        match self {
            Encoded::Buffer(bytes) => bytes.clone(),
            Encoded::Pieces(pieces) => pieces.to_bytes(),
        }
    }

    /// Its version: what its pieces say, or the buffer's [`version_of`].
    fn version(&self) -> Arc<str> {
        match self {
            Encoded::Buffer(bytes) => version_of(bytes).into(),
            Encoded::Pieces(pieces) => pieces.version().into(),
        }
    }

    /// Whether `other` is the same encoding; O(1) when it is a clone.
    fn same_as(&self, other: &Self) -> bool {
        match (self, other) {
            (Encoded::Buffer(a), Encoded::Buffer(b)) => (a.as_ptr() == b.as_ptr() && a.len() == b.len()) || a == b,
            (Encoded::Pieces(a), Encoded::Pieces(b)) => a.same_as(b.as_ref()),
            _ => false,
        }
    }
}

impl From<Bytes> for Encoded {
    fn from(bytes: Bytes) -> Self {
        Encoded::Buffer(bytes)
    }
}

/// The number of the last publication stamped, in this process.
static PUBLICATIONS: AtomicU64 = AtomicU64::new(0);

/// One published resource: its version and its encoding.
#[derive(Debug, Clone)]
pub struct Item {
    /// What delta responses tell Envoy, and what it tells back on reconnecting.
    pub version: Arc<str>,
    /// What responses send.
    pub body: Encoded,
    /// No more than the number of the first publication holding it, and
    /// more than any earlier publication's of its type (publications of a
    /// type are made one after the other).
    pub seq: u64,
}

impl Item {
    /// `body` and its version.
    pub fn new(body: Encoded) -> Self {
        Self {
            version: body.version(),
            body,
            seq: PUBLICATIONS.load(Ordering::SeqCst) + 1,
        }
    }
}

impl PartialEq for Item {
    /// Equal versions and encodings: a version alone can be steered (one
    /// made of its pieces' digests is a sum), the encoding decides.
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version && self.body.same_as(&other.body)
    }
}

/// The published resources of one type, by name.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    items: imbl::OrdMap<String, Item>,
    /// The set's version, made when first asked for.
    version: OnceLock<String>,
    /// The publication's number ([`Resources::stamp`]); 0 before.
    seq: u64,
}

impl PartialEq for Resources {
    fn eq(&self, other: &Self) -> bool {
        self.same_as(other)
    }
}

impl Resources {
    /// `items` (any order; a later one of a name replaces an earlier one).
    pub fn new(items: Vec<(String, Encoded)>) -> Self {
        let mut resources = Self::default();
        for (name, body) in items {
            resources.put(name, body);
        }
        resources
    }

    /// Numbers this publication, after every earlier one (and after every
    /// item it holds): done once, as it is published.
    pub fn stamp(&mut self) {
        self.seq = PUBLICATIONS.fetch_add(1, Ordering::SeqCst) + 1;
    }

    /// The publication's number: an Envoy that holds it holds every item
    /// whose [`Item::seq`] is no greater.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Serves `body` as `name`, in place of what it was; `false` when it
    /// was that already (then nothing changes, and the map's nodes stay
    /// shared with its clones).
    pub fn put(&mut self, name: impl Into<String>, body: Encoded) -> bool {
        let name = name.into();
        if let Some(item) = self.items.get(&name)
            && item.body.same_as(&body)
        {
            return false;
        }
        self.items.insert(name, Item::new(body));
        self.version = OnceLock::new();
        true
    }

    /// Serves `item` as `name`, as it is (its version and number kept);
    /// `false` when it was that already.
    pub fn put_item(&mut self, name: impl Into<String>, item: Item) -> bool {
        let name = name.into();
        if self.items.get(&name).is_some_and(|held| *held == item) {
            return false;
        }
        self.items.insert(name, item);
        self.version = OnceLock::new();
        true
    }

    /// Stops serving `name`; `false` when it was not served.
    pub fn remove(&mut self, name: &str) -> bool {
        if self.items.remove(name).is_none() {
            return false;
        }
        self.version = OnceLock::new();
        true
    }

    /// The item named `name`.
    pub fn get(&self, name: &str) -> Option<&Item> {
        self.items.get(name)
    }

    /// Every item, by name in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Item)> {
        self.items.iter().map(|(name, item)| (name.as_str(), item))
    }

    /// How many items there are.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items `names` asks for, by name in order (all when empty):
    /// O(names × log n).
    pub fn filtered<'a>(&'a self, names: &[String]) -> Vec<(&'a str, &'a Item)> {
        if names.is_empty() {
            return self.iter().collect();
        }
        let mut names: Vec<&String> = names.iter().collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter_map(|name| self.items.get_key_value(name))
            .map(|(name, item)| (name.as_str(), item))
            .collect()
    }

    /// What changed from `older` to these: each name put (with its item)
    /// or removed (`None`), in name order. Nodes the two share are
    /// skipped, so it costs O(changes × log n) between publications made
    /// one from the other.
    pub fn changes_since<'a>(&'a self, older: &'a Resources) -> impl Iterator<Item = (&'a str, Option<&'a Item>)> {
        older.items.diff(&self.items).map(|change| match change {
            imbl::ordmap::DiffItem::Add(name, item) => (name.as_str(), Some(item)),
            imbl::ordmap::DiffItem::Update { new: (name, item), .. } => (name.as_str(), Some(item)),
            imbl::ordmap::DiffItem::Remove(name, _) => (name.as_str(), None),
        })
    }

    /// Whether `other` holds the same items (O(1) for a clone).
    pub fn same_as(&self, other: &Resources) -> bool {
        self.items.len() == other.items.len() && other.changes_since(self).next().is_none()
    }

    /// The set's version: for one item its own, otherwise the digest
    /// of every name and item version (see the module documentation).
    pub fn version(&self) -> &str {
        self.version.get_or_init(|| set_version(self.iter()))
    }
}

/// The version of `items`, as [`Resources::version`] makes it.
pub(crate) fn set_version<'a>(items: impl IntoIterator<Item = (&'a str, &'a Item)>) -> String {
    let mut items = items.into_iter().peekable();
    let Some((first_name, first)) = items.next() else {
        return version_of(&[]);
    };
    if items.peek().is_none() {
        return first.version.to_string();
    }
    let mut all = Vec::new();
    for (name, item) in std::iter::once((first_name, first)).chain(items) {
        for part in [name, &item.version] {
            all.extend_from_slice(&(part.len() as u64).to_be_bytes());
            all.extend_from_slice(part.as_bytes());
        }
    }
    version_of(&all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(fill: u8) -> Encoded {
        Encoded::Buffer(Bytes::from(vec![fill; 100]))
    }

    #[test]
    fn items_have_their_own_versions_and_the_set_one_made_of_them() {
        let one = Resources::new(vec![("a".into(), buffer(1))]);
        assert_eq!(one.version(), version_of(&[1; 100]));
        assert_eq!(&*one.get("a").unwrap().version, one.version());
        let two = Resources::new(vec![("b".into(), buffer(2)), ("a".into(), buffer(1))]);
        let names: Vec<&str> = two.iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["a", "b"]);
        assert_ne!(two.version(), one.version());
        // The same items, in another order of puts: the same version.
        let again = Resources::new(vec![("a".into(), buffer(1)), ("b".into(), buffer(2))]);
        assert_eq!(again.version(), two.version());
        // Another name for the same body is another set.
        let renamed = Resources::new(vec![("a".into(), buffer(1)), ("c".into(), buffer(2))]);
        assert_ne!(renamed.version(), two.version());
        assert_eq!(Resources::default().version(), version_of(&[]));
    }

    #[test]
    fn put_and_remove_say_whether_anything_changed_and_the_version_follows() {
        let mut resources = Resources::new(vec![("a".into(), buffer(1))]);
        let before = resources.version().to_owned();
        assert!(!resources.put("a", buffer(1)));
        assert_eq!(resources.version(), before);
        assert!(resources.put("a", buffer(2)));
        assert_ne!(resources.version(), before);
        assert!(!resources.remove("b"));
        assert!(resources.remove("a"));
        assert!(resources.is_empty());
    }

    #[test]
    fn filtered_gives_the_named_items_in_order_once_or_all() {
        let resources = Resources::new(vec![
            ("a".into(), buffer(1)),
            ("b".into(), buffer(2)),
            ("c".into(), buffer(3)),
        ]);
        let names = |items: Vec<(&str, &Item)>| items.into_iter().map(|(name, _)| name.to_owned()).collect::<Vec<_>>();
        assert_eq!(names(resources.filtered(&[])), ["a", "b", "c"]);
        let asked = ["c".to_owned(), "x".to_owned(), "a".to_owned(), "c".to_owned()];
        assert_eq!(names(resources.filtered(&asked)), ["a", "c"]);
    }

    #[test]
    fn changes_since_names_what_was_put_and_removed_and_nothing_else() {
        let older = Resources::new(
            (0..10_000)
                .map(|i| (format!("r{i:05}"), buffer((i % 200) as u8)))
                .collect(),
        );
        let mut newer = older.clone();
        assert_eq!(newer.changes_since(&older).count(), 0);
        assert!(newer.same_as(&older));
        newer.put("r05000", buffer(250));
        newer.remove("r00007");
        newer.put("zzz", buffer(1));
        // Putting what is there is no change.
        newer.put("r00001", buffer(1));
        let changes: Vec<(String, Option<Arc<str>>)> = newer
            .changes_since(&older)
            .map(|(name, item)| (name.to_owned(), item.map(|item| item.version.clone())))
            .collect();
        assert_eq!(
            changes,
            [
                ("r00007".to_owned(), None),
                ("r05000".to_owned(), Some(version_of(&[250; 100]).into())),
                ("zzz".to_owned(), Some(version_of(&[1; 100]).into())),
            ]
        );
        assert!(!newer.same_as(&older));
        // And back: the opposite changes.
        let back: Vec<(&str, bool)> = older
            .changes_since(&newer)
            .map(|(name, item)| (name, item.is_some()))
            .collect();
        assert_eq!(back, [("r00007", true), ("r05000", true), ("zzz", false)]);
    }
}
