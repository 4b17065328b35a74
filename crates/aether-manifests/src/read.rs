//! Reading one file: opened without waiting on it, read only once it has
//! settled, bounded, then parsed.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::{Document, Error, Failure, Format, Limits, error, io_error, parse, parse_as};

/// Reads the documents of a stream (standard input), named `name` in
/// errors, within `limits`: no more than one byte past
/// [`Limits::max_file_bytes`] is read, as from a file. A stream has no
/// extension: it is JSON when it starts with `{` (blanks aside), else YAML.
pub(crate) fn read_stream(name: &Path, mut stream: impl Read, limits: &Limits) -> Result<Vec<Document>, Error> {
    let mut bytes = Vec::new();
    (&mut stream)
        .take(limits.max_file_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(name, format!("cannot read: {e}")))?;
    parse_as(name, &bytes, limits, Format::Sniffed)
}

/// The bytes of `file`, a file of `kind` (`secrets`, for errors), opened
/// as [`crate::read`] opens a manifest (a FIFO, device, socket or directory is
/// refused without blocking or reading it) and read to at most
/// `max_bytes`: one byte more is an error naming the limit, whatever size
/// the file system reports. No settling: the caller checks the bytes.
pub fn read_bytes(file: &Path, kind: &str, max_bytes: u64) -> Result<Vec<u8>, Error> {
    let handle = open(file, kind)?;
    let mut bytes = Vec::new();
    (&handle)
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(file, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(error(file, format!("larger than the {max_bytes} byte limit")));
    }
    Ok(bytes)
}

/// Reads one file's documents within `limits`. Only a regular file is read
/// (a link to one included): anything else is refused without waiting on
/// it. A file that is still being written is waited for (see
/// [`Limits::settle`]), no later than `deadline` (one deadline for every
/// file of a load: a load waits about one settle time for a directory just
/// written, not one per file).
pub(crate) fn read_until(file: &Path, limits: &Limits, deadline: Instant) -> Result<Vec<Document>, Error> {
    loop {
        let handle = open(file, "manifests")?;
        let before = metadata(file, &handle)?;
        if let Some(wait) = unsettled(before.modified().ok(), SystemTime::now(), limits.settle) {
            wait_or_give_up(
                file,
                deadline,
                wait,
                "modified a moment ago, so possibly still being written",
            )?;
            continue;
        }
        let mut bytes = Vec::new();
        // Read one byte past the limit to tell "at the limit" from "over it",
        // without trusting the size the file system reports.
        (&handle)
            .take(limits.max_file_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(file, format!("cannot read: {e}")))?;
        if bytes.len() as u64 > limits.max_file_bytes {
            return parse(file, &bytes, limits); // the size error
        }
        let after = metadata(file, &handle)?;
        if changed(&before, &after, bytes.len()) {
            wait_or_give_up(file, deadline, limits.settle, "changed while being read")?;
            continue;
        }
        return parse(file, &bytes, limits);
    }
}

/// How long to wait before a file last modified at `modified` has been
/// left alone for `settle`, as the clock says `now`; `None` when it has.
/// A time ahead of the clock by less than `settle` (a network file system
/// whose clock runs ahead) counts as just now; further ahead, the clocks
/// disagree too much to tell, and the file is taken as settled (the
/// before-and-after check still catches a write during the read).
fn unsettled(modified: Option<SystemTime>, now: SystemTime, settle: Duration) -> Option<Duration> {
    let modified = modified?;
    match now.duration_since(modified) {
        Ok(age) if age < settle => Some(settle - age),
        Ok(_) => None,
        Err(ahead) if ahead.duration() < settle => Some(settle + ahead.duration()),
        Err(_) => None,
    }
}

/// Whether the file changed while `read` bytes were read from it: its size
/// or modification time moved, or the bytes are not its size (a truncation
/// and rewrite within one clock tick).
fn changed(before: &Metadata, after: &Metadata, read: usize) -> bool {
    before.len() != after.len() || before.modified().ok() != after.modified().ok() || after.len() != read as u64
}

/// Sleeps `wait`, or, past `deadline`, fails: the file keeps changing.
fn wait_or_give_up(file: &Path, deadline: Instant, wait: Duration, why: &str) -> Result<(), Error> {
    if Instant::now() + wait > deadline {
        return Err(Error {
            failure: Failure::Changing,
            ..error(file, format!("not read: {why}; it is read once it has been left alone"))
        });
    }
    std::thread::sleep(wait);
    Ok(())
}

fn metadata(file: &Path, handle: &File) -> Result<Metadata, Error> {
    handle
        .metadata()
        .map_err(|e| io_error(file, format!("cannot read: {e}")))
}

/// Opens `file` for reading if it is a regular file. The open itself does
/// not wait: a FIFO blocks `open()` until a writer comes, so it is opened
/// non-blocking and its type checked on the open handle (checking the path
/// first would leave a gap in which it could be swapped for a FIFO).
fn open(file: &Path, kind: &str) -> Result<File, Error> {
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
    let metadata = metadata(file, &handle)?;
    if !metadata.is_file() {
        return Err(error(file, crate::files::not_regular(&metadata.file_type(), kind)));
    }
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTLE: Duration = Duration::from_millis(500);

    #[test]
    fn a_file_is_settled_once_left_alone_for_the_settle_time() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let ms = Duration::from_millis;
        for (modified, expected) in [
            (None, None),
            (Some(now), Some(SETTLE)),
            (Some(now - ms(200)), Some(ms(300))),
            (Some(now - SETTLE), None),
            (Some(now - Duration::from_secs(3600)), None),
            // Ahead of this clock, within the settle time: just now.
            (Some(now + ms(200)), Some(ms(700))),
            // Far ahead: the clocks cannot tell; settled.
            (Some(now + Duration::from_secs(3600)), None),
        ] {
            assert_eq!(unsettled(modified, now, SETTLE), expected, "{modified:?}");
        }
    }
}
