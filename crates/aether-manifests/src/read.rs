//! Reading one file: opened without waiting, bounded, then parsed.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::{Document, Limits, ReadError, error, io_error, parse};

/// Reads one file's documents within `limits`. Only a regular file is read
/// (a link to one included): anything else is refused without waiting on it.
pub fn read(file: &Path, limits: &Limits) -> Result<Vec<Document>, ReadError> {
    let handle = open(file)?;
    let mut bytes = Vec::new();
    // Read one byte past the limit to tell "at the limit" from "over it",
    // without trusting the size the file system reports.
    handle
        .take(limits.max_file_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(file, format!("cannot read: {e}")))?;
    parse(file, &bytes, limits)
}

/// Opens `file` for reading if it is a regular file. The open itself does
/// not wait: a FIFO blocks `open()` until a writer comes, so it is opened
/// non-blocking and its type checked on the open handle (checking the path
/// first would leave a gap in which it could be swapped for a FIFO).
fn open(file: &Path) -> Result<File, ReadError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Regular files ignore the flag: reads of them never block on it.
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let handle = options
        .open(file)
        .map_err(|e| io_error(file, format!("cannot open: {e}")))?;
    let metadata = handle
        .metadata()
        .map_err(|e| io_error(file, format!("cannot read: {e}")))?;
    if !metadata.is_file() {
        return Err(error(file, crate::files::not_regular(&metadata.file_type())));
    }
    Ok(handle)
}
