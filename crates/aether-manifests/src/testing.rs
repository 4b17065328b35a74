//! Support for tests of manifest readers (feature `testing`, Unix).

use std::path::Path;

/// Lays `files` (name, text) out in `dir` as Kubernetes' atomic writer does
/// for a ConfigMap volume: the files in a timestamped `..` directory, a
/// `..data` link to it, and a link through `..data` for each top-level name
/// (`sub` for `sub/c.yaml`, as for an item with `path: sub/c.yaml`).
/// Called again, it publishes a new version as the writer does: a new
/// directory, `..data` switched by one rename, the old directory removed
/// (links to names the new version lacks are left dangling, as the writer
/// leaves them until it cleans up).
///
/// # Panics
///
/// When a file or link cannot be written: a test cannot go on.
pub fn atomic_writer_volume(dir: &Path, version: &str, files: &[(&str, &str)]) {
    use std::os::unix::fs::symlink;

    let versioned = format!("..2026_01_01_00_00_00.{version}");
    let previous = std::fs::read_link(dir.join("..data")).ok();
    for (name, text) in files {
        let path = dir.join(&versioned).join(name);
        std::fs::create_dir_all(path.parent().expect("a file in the volume")).expect("a volume directory");
        std::fs::write(path, text).expect("writing a volume file");
    }
    symlink(&versioned, dir.join("..data_tmp")).expect("the ..data_tmp link");
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).expect("switching ..data");
    for (name, _) in files {
        let top = Path::new(name).components().next().expect("a name").as_os_str();
        if std::fs::symlink_metadata(dir.join(top)).is_err() {
            symlink(Path::new("..data").join(top), dir.join(top)).expect("a top-level link");
        }
    }
    if let Some(previous) = previous {
        std::fs::remove_dir_all(dir.join(previous)).expect("removing the previous version");
    }
}

#[cfg(target_os = "linux")]
pub use capabilities::WithoutFileCapabilities;

#[cfg(target_os = "linux")]
mod capabilities {
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
            set_capabilities(None, reduced)
                .expect("dropping CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from this thread");
            Self(saved)
        }
    }

    impl Drop for WithoutFileCapabilities {
        fn drop(&mut self) {
            // Raised back from the permitted set, which was never reduced.
            set_capabilities(None, self.0).expect("restoring this thread's capabilities");
        }
    }
}
