//! The process's file-descriptor limit, and a connection bound that fits
//! under it.
//!
//! Every connection is a descriptor. A bound above what the limit leaves
//! makes accept fail with EMFILE once connections fill the table, and then
//! everything else the process opens fails too (the manifest listing, the
//! files it writes, its API server connections). So the bound is lowered
//! to leave a reserve, and said so once at start.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use tracing::{info, warn};

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (as Go's runtime does
/// at start): a container's soft limit is often 1,024 while its hard limit
/// is far higher. Returns the soft limit in force afterwards (`None`:
/// unlimited).
pub fn raise_fd_limit() -> Option<u64> {
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => info!(from = ?limit.current, to = ?limit.maximum, "raised the file descriptor limit"),
            Err(error) => warn!(%error, "could not raise the file descriptor limit"),
        }
    }
    getrlimit(Resource::Nofile).current
}

/// The hard `RLIMIT_NOFILE` (`None`: unlimited): what [`raise_fd_limit`]
/// raises the soft limit to, here and in a program doing the same.
pub fn hard_fd_limit() -> Option<u64> {
    getrlimit(Resource::Nofile).maximum
}

/// `requested` connections, or fewer when the soft descriptor limit minus
/// `reserved` (the descriptors the rest of the process may need) is less;
/// never fewer than one. A lowered bound is logged.
pub fn fit_to_fd_limit(listener: &str, requested: usize, reserved: usize) -> usize {
    let Some(limit) = getrlimit(Resource::Nofile).current else {
        return requested.max(1);
    };
    let room = usize::try_from(limit).unwrap_or(usize::MAX).saturating_sub(reserved);
    if room >= requested {
        return requested.max(1);
    }
    let bound = room.max(1);
    warn!(
        listener,
        requested,
        bound,
        fd_limit = limit,
        reserved,
        "the file descriptor limit leaves room for fewer connections than asked; \
         serving at most `bound` (raise `ulimit -n` to serve more)"
    );
    bound
}
