//! The input: VirtualHost objects (`aether_api`'s), and who among them wins
//! a contested host.

use aether_api::ObjectKey;
pub use aether_api::object::VirtualHostObject;
use jiff::Timestamp;

/// Who wins a contested host: the lowest rank. Timestamped objects come
/// first, oldest first; then those without a timestamp; ties (equal or both
/// missing timestamps) are broken by namespace, then name, as Gateway API
/// does. The derived order follows the field order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Rank {
    /// `false` sorts first: objects with a timestamp before those without.
    pub(crate) untimed: bool,
    pub(crate) created: Option<Timestamp>,
    pub(crate) key: ObjectKey,
}

impl Rank {
    pub(crate) fn of(object: &VirtualHostObject) -> Self {
        Self {
            untimed: object.creation_timestamp.is_none(),
            created: object.creation_timestamp,
            key: object.key(),
        }
    }
}
