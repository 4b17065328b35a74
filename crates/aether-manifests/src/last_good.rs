//! The policy of readers that keep serving while their input changes (the
//! controller's and the webhook's local modes): what cannot be read now
//! keeps the objects it gave when last read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use aether_api::ObjectKey;

use crate::files::FileStamp;
use crate::load::{Load, Loaded, Skipped, first_copies, read_objects};
use crate::{Error, Failure, Limits, Stamp};

mod copies;

use copies::Copies;

/// Per file, the objects it gave when last read. [`LastGood::load`] reads
/// like [`crate::read`] then [`Load::first_copies`], except that:
///
/// - a file that cannot be read whole now (I/O error, still being written
///   after [`Limits::max_settle_wait`], bad YAML, a document that is not a
///   VirtualHost) gives the objects it
///   gave when last read, and is listed in [`Load::stale`]; a file never
///   read whole gives what could be read of it;
/// - a path that cannot be listed keeps every file last read under it: an
///   I/O error is not a deletion. Only a listing that succeeds without a
///   file removes its objects.
///
/// Two copies of one object are then resolved by [`Load::first_copies`]'s rule, over
/// the files in path order (for one directory, the order it is walked in).
///
/// A file last read whole is not read again while its [`FileStamp`] stays
/// the same: at tens of thousands of objects, parsing every file again was
/// most of a pass after a one-file change.
///
/// A load waits for files still being written ([`Limits::settle`]), all
/// of them together up to [`Limits::max_settle_wait`]; one made
/// [`LastGood::without_waiting`] never waits (see there).
#[derive(Debug, Default)]
pub struct LastGood {
    files: BTreeMap<PathBuf, Vec<Loaded>>,
    /// The files last read without an error: their stamp then, and the
    /// documents of other kinds they held (reported on every load).
    whole: BTreeMap<PathBuf, (FileStamp, Vec<Skipped>)>,
    /// Loads after the first do not wait for files to settle.
    impatient: bool,
    /// Whether a load has run.
    loaded: bool,
    /// The files the last load found not settled, each with when a load
    /// first found it so (without a settled look since).
    unsettled: BTreeMap<PathBuf, Instant>,
    /// When the first of those still within its bound passes it.
    set_aside_due: Option<Instant>,
    /// Which copy of each object is in use, kept file by file.
    copies: Copies,
}

impl LastGood {
    /// A store that has read nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store whose loads after the first never wait on a file, for a
    /// server that loads again and again (the controller's local mode; its
    /// first load waits as [`LastGood::new`]'s do, so that a start serves
    /// every file written just before it): a file modified less
    /// than [`Limits::settle`] ago, or while it is read, is not read by
    /// this load (it gives what it gave when last read, without an error)
    /// and is looked at again by the next; one that has not settled for
    /// [`Limits::max_settle_wait`] of loads is set aside: a
    /// [`Failure::Changing`] error, listed in [`Load::stale`] when it gave
    /// objects before. So a file that never stops changing delays no
    /// other file's load, only its own. Poll with [`LastGood::stamp`] and
    /// load again at [`LastGood::set_aside_due`].
    pub fn without_waiting() -> Self {
        Self {
            impatient: true,
            ..Self::default()
        }
    }

    /// The [`Stamp`] of the files under `paths` now, for a poller of this
    /// store (unlistable paths left out: loading reports them). A file the
    /// last load found not settled counts as unchanged while it keeps
    /// changing (its stamp `None`), and changes once left alone for
    /// `settle`, so that a file never left alone triggers no load.
    pub fn stamp(&self, paths: &[PathBuf], settle: Duration) -> Stamp {
        let mut stamp = crate::files::stamp(paths);
        for (file, file_stamp) in &mut stamp {
            if self.unsettled.contains_key(file) && modified_within(file, settle) {
                *file_stamp = None;
            }
        }
        stamp
    }

    /// Whether a file the last load found not settled has since been left
    /// alone for `settle`, so the next load reads it. A poller asks this
    /// beside comparing [`LastGood::stamp`]s: the stamp it took before that
    /// load may already be the settled file's, and then never changes.
    pub fn settled_since_load(&self, settle: Duration) -> bool {
        self.unsettled.keys().any(|file| !modified_within(file, settle))
    }

    /// When a file the last load found not settled will have changed for
    /// longer than its bound, so that a load then sets it aside (and says
    /// so); `None` when there is no such file.
    pub fn set_aside_due(&self) -> Option<Instant> {
        self.set_aside_due
    }

    /// Reads `paths` (see [`LastGood`]) and remembers what each file gave.
    pub fn load(&mut self, paths: &[PathBuf], limits: &Limits) -> Load {
        let read = self.refresh(paths, limits);
        let mut errors = read.errors;
        let (objects, duplicates) = first_copies(self.files.values().flatten().cloned().collect());
        errors.extend(duplicates);
        Load {
            objects,
            errors,
            stale: read.stale,
            skipped: read.skipped,
            unchanged: read.unchanged,
        }
    }

    /// [`LastGood::load`], telling only what changed since the last load
    /// (everything, the first time): the work is that of the files read
    /// again, not of every object, for a reader that keeps the objects
    /// itself (the controller's local mode).
    pub fn load_changes(&mut self, paths: &[PathBuf], limits: &Limits) -> Changes {
        let read = self.refresh(paths, limits);
        let mut changes = Changes {
            errors: read.errors,
            stale: read.stale,
            skipped: read.skipped,
            unchanged: read.unchanged,
            ..Changes::default()
        };
        for key in read.affected {
            match self.used(&key) {
                Some(loaded) => changes.put.push(loaded.clone()),
                None => changes.removed.push(key),
            }
        }
        changes.errors.extend(self.copies.duplicates(&self.files));
        changes
    }

    /// The copy of `key` in use (see [`Load::first_copies`]), as of the last
    /// load.
    pub fn used(&self, key: &ObjectKey) -> Option<&Loaded> {
        let (file, at) = self.copies.used(key)?;
        self.files.get(file)?.get(*at)
    }

    /// The objects of `file` whose copy there is the one in use, as of the
    /// last load.
    pub fn used_in<'a>(&'a self, file: &'a Path) -> impl Iterator<Item = &'a Loaded> + 'a {
        self.files
            .get(file)
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(move |(at, loaded)| {
                let (used_file, used_at) = self.copies.used(&loaded.object.key())?;
                (used_file == file && *used_at == at).then_some(loaded)
            })
    }

    /// Reads `paths` into `files` and brings the copies in use up to date:
    /// what a load found, and the objects whose copy in use may have changed.
    fn refresh(&mut self, paths: &[PathBuf], limits: &Limits) -> Refreshed {
        let (files, listing_errors) = crate::files::files(paths);
        let mut replaced: Vec<(PathBuf, Option<Vec<Loaded>>)> = Vec::new();
        // What each file gave when last read, moved into this load's map
        // rather than copied: at tens of thousands of objects, copying
        // every file's objects was a third of a pass after a one-file change.
        let mut last = std::mem::take(&mut self.files);
        let mut errors: Vec<Error> = Vec::new();
        let mut stale = Vec::new();
        let mut skipped = Vec::new();
        let mut now: BTreeMap<PathBuf, Vec<Loaded>> = BTreeMap::new();
        let mut whole = BTreeMap::new();
        let mut unchanged = Vec::new();
        let started = Instant::now();
        let waits = !self.impatient || !self.loaded;
        self.loaded = true;
        let deadline = if waits {
            started + limits.max_settle_wait
        } else {
            started
        };
        let mut unsettled = BTreeMap::new();
        let mut set_aside_due: Option<Instant> = None;
        for file in files {
            if now.contains_key(&file) {
                // Named twice (two paths reaching it): it gave its objects.
                continue;
            }
            // Stamped before reading: a change while it is read gives a
            // stamp the next load does not match.
            let stamp = FileStamp::of(&file);
            if let (Some(stamp), Some((last_stamp, others))) = (&stamp, self.whole.get(&file))
                && stamp == last_stamp
                && let Some(objects) = last.remove(&file)
            {
                skipped.extend(others.iter().cloned());
                now.insert(file.clone(), objects);
                whole.insert(file.clone(), (stamp.clone(), others.clone()));
                unchanged.push(file);
                continue;
            }
            let mut read = read_objects(&file, limits, deadline);
            if !waits
                && let [error] = read.errors.as_mut_slice()
                && error.failure == Failure::Changing
            {
                let since = self.unsettled.get(&file).copied().unwrap_or(started);
                unsettled.insert(file.clone(), since);
                let due = since + limits.max_settle_wait;
                let previous = last.remove(&file);
                let kept = previous.is_some();
                if let Some(previous) = previous {
                    now.insert(file.clone(), previous);
                }
                if started < due {
                    // Not settled yet: looked at again by the next load.
                    set_aside_due = Some(set_aside_due.map_or(due, |at| at.min(due)));
                    continue;
                }
                error.message = format!(
                    "set aside: it has not been left alone for {} ms in {} s; {}",
                    limits.settle.as_millis(),
                    started.duration_since(since).as_secs(),
                    if kept {
                        "what it gave when last read is kept"
                    } else {
                        "never read"
                    }
                );
                if kept {
                    stale.push(file.clone());
                }
                errors.append(&mut read.errors);
                continue;
            }
            if let Some(stamp) = stamp
                && read.errors.is_empty()
            {
                whole.insert(file.clone(), (stamp, read.skipped.clone()));
            }
            let objects = match last.remove(&file) {
                Some(previous) if !read.errors.is_empty() => {
                    stale.push(file.clone());
                    previous
                }
                previous => {
                    replaced.push((file.clone(), previous));
                    read.objects
                }
            };
            errors.extend(read.errors);
            skipped.extend(read.skipped);
            now.insert(file, objects);
        }
        for error in listing_errors {
            if matches!(error.failure, Failure::Io | Failure::Changing) {
                let unlisted: Vec<PathBuf> = last
                    .keys()
                    .filter(|file| file.starts_with(&error.file) && !now.contains_key(*file))
                    .cloned()
                    .collect();
                for file in unlisted {
                    if let Some(objects) = last.remove(&file) {
                        stale.push(file.clone());
                        now.insert(file, objects);
                    }
                }
            }
            errors.push(error);
        }
        stale.sort();
        // Files no longer listed: their objects go.
        replaced.extend(last.into_iter().map(|(file, objects)| (file, Some(objects))));
        self.files = now;
        self.whole = whole;
        self.unsettled = unsettled;
        self.set_aside_due = set_aside_due;
        let mut affected = BTreeSet::new();
        for (file, old) in &replaced {
            let new = self.files.get(file).map_or(&[][..], Vec::as_slice);
            self.copies
                .replace(file, old.as_deref().unwrap_or_default(), new, &mut affected);
        }
        self.copies.settle(&affected);
        Refreshed {
            errors,
            stale,
            skipped,
            unchanged,
            affected,
        }
    }
}

/// What one read of the files found ([`Load`] without the objects), and
/// the objects whose copy in use may have changed.
struct Refreshed {
    errors: Vec<Error>,
    stale: Vec<PathBuf>,
    skipped: Vec<Skipped>,
    unchanged: Vec<PathBuf>,
    affected: BTreeSet<ObjectKey>,
}

/// What a [`LastGood::load_changes`] changed.
#[derive(Debug, Default)]
pub struct Changes {
    /// The copy now in use of each object that is new, or whose copy in
    /// use may have changed (its file was read again, or another copy
    /// came or went), in key order.
    pub put: Vec<Loaded>,
    /// The objects no file gives any more, in key order.
    pub removed: Vec<ObjectKey>,
    /// As [`Load::errors`]: the duplicates' among them.
    pub errors: Vec<Error>,
    /// As [`Load::stale`].
    pub stale: Vec<PathBuf>,
    /// As [`Load::skipped`].
    pub skipped: Vec<Skipped>,
    /// As [`Load::unchanged`].
    pub unchanged: Vec<PathBuf>,
}

/// Whether `file` was modified less than `settle` ago, or ahead of this
/// clock by less than that (as reading judges it).
fn modified_within(file: &Path, settle: Duration) -> bool {
    let Ok(modified) = std::fs::metadata(file).and_then(|metadata| metadata.modified()) else {
        return false;
    };
    match SystemTime::now().duration_since(modified) {
        Ok(age) => age < settle,
        Err(ahead) => ahead.duration() < settle,
    }
}

#[cfg(test)]
mod tests;
