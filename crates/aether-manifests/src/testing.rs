//! Support for tests of manifest readers (feature `testing`, Linux).

use rustix::thread::{CapabilitySet, CapabilitySets, capabilities, set_capabilities};

/// While alive, the thread that made it runs without the capabilities that
/// let root read and list whatever it likes (`CAP_DAC_OVERRIDE`,
/// `CAP_DAC_READ_SEARCH`), so permission bits apply to it as to an
/// unprivileged user (the controller's Deployment runs as one): a
/// `chmod 000` directory cannot be listed even when the tests run as root.
/// Capabilities belong to a thread, so other tests keep theirs; for a user
/// who has none, nothing changes.
#[derive(Debug)]
pub struct WithoutFileCapabilities(CapabilitySets);

impl WithoutFileCapabilities {
    /// Drops the two capabilities from this thread's effective set (they
    /// stay permitted, to be taken back on drop).
    ///
    /// # Panics
    ///
    /// When the kernel refuses to read or set the thread's capabilities: a
    /// test cannot go on as it meant to.
    pub fn enter() -> Self {
        let saved = capabilities(None).expect("reading this thread's capabilities");
        let mut reduced = saved;
        reduced
            .effective
            .remove(CapabilitySet::DAC_OVERRIDE | CapabilitySet::DAC_READ_SEARCH);
        set_capabilities(None, reduced).expect("dropping CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from this thread");
        Self(saved)
    }
}

impl Drop for WithoutFileCapabilities {
    fn drop(&mut self) {
        // Raised back from the permitted set, which was never reduced.
        set_capabilities(None, self.0).expect("restoring this thread's capabilities");
    }
}
