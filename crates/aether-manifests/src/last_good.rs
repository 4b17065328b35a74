//! The policy of readers that keep serving while their input changes (the
//! controller's and the webhook's local modes): what cannot be read now
//! keeps the objects it gave when last read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use aether_api::ObjectKey;

use crate::files::FileStamp;
use crate::load::{Load, LoadError, Loaded, Skipped, first_copies, read_objects};
use crate::{Failure, Limits, Stamp};

mod copies;

use copies::Copies;

/// Per file, the objects it gave when last read. [`LastGood::load`] reads
/// like [`crate::load`], except that:
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
/// Two copies of one object are then resolved by [`first_copies`], over
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

    /// [`crate::stamp`] for a poller of this store: a file the last load
    /// found not settled counts as unchanged while it keeps changing (its
    /// stamp `None`), and changes once left alone for `settle`, so that a
    /// file never left alone triggers no load.
    pub fn stamp(&self, paths: &[PathBuf], settle: Duration) -> Stamp {
        let mut stamp = crate::stamp(paths);
        for (file, file_stamp) in &mut stamp {
            if self.unsettled.contains_key(file) && modified_within(file, settle) {
                *file_stamp = None;
            }
        }
        stamp
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

    /// The copy of `key` in use (see [`first_copies`]), as of the last
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
        let (files, listing_errors) = crate::files(paths);
        let mut replaced: Vec<(PathBuf, Option<Vec<Loaded>>)> = Vec::new();
        // What each file gave when last read, moved into this load's map
        // rather than copied: at tens of thousands of objects, copying
        // every file's objects was a third of a pass after a one-file change.
        let mut last = std::mem::take(&mut self.files);
        let mut errors: Vec<LoadError> = Vec::new();
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
            errors.push(error.into());
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
    errors: Vec<LoadError>,
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
    pub errors: Vec<LoadError>,
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
mod tests {
    use super::*;

    fn host(name: &str) -> String {
        format!(
            "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: {name}}}\n\
             spec: {{hosts: [{name}.example.com], routes: [{{match: {{prefix: /}}, backend: {{service: web}}}}]}}\n"
        )
    }

    fn names(load: &Load) -> Vec<String> {
        load.objects.iter().map(|l| l.object.name.clone()).collect()
    }

    fn write(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_file_that_cannot_be_read_keeps_its_objects_until_it_can_or_is_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
        write(&a, &format!("{}---\n{}", host("a1"), host("a2")));
        write(&b, &host("b"));
        let paths = [dir.path().to_path_buf()];
        let mut store = LastGood::new();
        let first = store.load(&paths, &Limits::default());
        assert_eq!(
            (names(&first), first.errors.len()),
            (vec!["a1".into(), "a2".into(), "b".into()], 0)
        );

        // One document of a.yaml stops decoding: a.yaml keeps both objects.
        write(&a, &format!("{}---\nkind: Pod\n", host("a1")));
        let broken = store.load(&paths, &Limits::default());
        assert_eq!(names(&broken), names(&first));
        assert_eq!(broken.stale, std::slice::from_ref(&a));
        assert_eq!(broken.errors.len(), 1, "{:?}", broken.errors);
        assert_eq!(
            (broken.errors[0].file.as_path(), broken.errors[0].document),
            (a.as_path(), Some(1))
        );

        // Still broken on the next read: still kept.
        assert_eq!(names(&store.load(&paths, &Limits::default())), names(&first));

        // Repaired: what it holds now.
        write(&a, &host("a3"));
        let repaired = store.load(&paths, &Limits::default());
        assert_eq!(
            (names(&repaired), repaired.stale.len()),
            (vec!["a3".into(), "b".into()], 0)
        );

        // Deleted (the listing succeeds without it): gone.
        std::fs::remove_file(&a).unwrap();
        assert_eq!(names(&store.load(&paths, &Limits::default())), ["b"]);
    }

    #[test]
    fn a_file_is_read_again_only_when_its_stamp_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a.yaml"),
            dir.path().join("b.yaml"),
            dir.path().join("c.yaml"),
        );
        write(&a, &host("a"));
        write(
            &b,
            &format!(
                "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: other}}\n",
                host("b")
            ),
        );
        write(&c, "spec: [unclosed");
        let paths = [dir.path().to_path_buf()];
        let limits = Limits {
            other_kinds: crate::OtherKinds::Skip,
            ..Limits::default()
        };
        let mut store = LastGood::new();
        let first = store.load(&paths, &limits);
        assert_eq!(
            (names(&first), first.unchanged.len()),
            (vec!["a".into(), "b".into()], 0)
        );

        // Nothing changed: the files read whole are not read again, and give
        // the same objects and skipped documents; the broken one is read
        // again (its error is reported on every load).
        let second = store.load(&paths, &limits);
        assert_eq!(second.unchanged, [a.clone(), b.clone()]);
        assert_eq!(
            (&second.objects, &second.skipped, second.errors.len()),
            (&first.objects, &first.skipped, 1)
        );

        // Rewritten with the same size: read again.
        write(&a, &host("z"));
        let third = store.load(&paths, &limits);
        assert_eq!(third.unchanged, std::slice::from_ref(&b));
        assert_eq!(names(&third), ["z", "b"]);

        // Replaced by a rename (a new inode, as Kubernetes' volumes do): read again.
        let next = dir.path().join("next.tmp");
        write(&next, &host("bb"));
        std::fs::rename(&next, &b).unwrap();
        let fourth = store.load(&paths, &limits);
        assert_eq!(fourth.unchanged, std::slice::from_ref(&a));
        assert_eq!(names(&fourth), ["z", "bb"]);
        assert!(fourth.skipped.is_empty());

        // Repaired: read, and from then on unchanged.
        write(&c, &host("c"));
        assert_eq!(names(&store.load(&paths, &limits)), ["z", "bb", "c"]);
        assert_eq!(store.load(&paths, &limits).unchanged, [a, b, c]);
    }

    #[test]
    fn the_objects_of_a_file_not_read_again_share_the_specs_it_gave() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
        write(&a, &host("a"));
        write(&b, &host("b"));
        let paths = [dir.path().to_path_buf()];
        let mut store = LastGood::new();
        let first = store.load(&paths, &Limits::default());
        write(&b, &host("bb"));
        let second = store.load(&paths, &Limits::default());
        assert_eq!(second.unchanged, std::slice::from_ref(&a));
        let spec = |load: &Load, i: usize| std::sync::Arc::clone(&load.objects[i].object.spec);
        assert!(
            std::sync::Arc::ptr_eq(&spec(&first, 0), &spec(&second, 0)),
            "a's spec was copied"
        );
        assert!(!std::sync::Arc::ptr_eq(&spec(&first, 1), &spec(&second, 1)));
        assert_eq!(second.objects[1].object.spec.hosts, ["bb.example.com"]);
    }

    #[test]
    fn without_waiting_a_file_not_settled_keeps_its_objects_and_is_set_aside_after_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
        write(&a, &host("a"));
        write(&b, &host("b"));
        let paths = [dir.path().to_path_buf()];
        let mut store = LastGood::without_waiting();
        // A settle time of 0: every file is settled.
        let settled = Limits {
            settle: Duration::ZERO,
            ..Limits::default()
        };
        assert_eq!(names(&store.load(&paths, &settled)), ["a", "b"]);

        // a.yaml changes, and counts as changing for an hour: this load
        // does not wait on it, and a.yaml gives its last objects, no error.
        write(&a, &host("a2"));
        let changing = Limits {
            settle: Duration::from_secs(3600),
            max_settle_wait: Duration::from_millis(300),
            ..Limits::default()
        };
        let started = Instant::now();
        let pending = store.load(&paths, &changing);
        assert!(
            started.elapsed() < Duration::from_millis(250),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(
            (names(&pending), pending.errors.len(), pending.stale.len()),
            (vec!["a".into(), "b".into()], 0, 0)
        );
        let due = store.set_aside_due().unwrap();
        assert!(due > started && due <= Instant::now() + Duration::from_millis(300));
        // Polled, it counts as unchanged while it keeps changing.
        let stamp = store.stamp(&paths, changing.settle);
        assert_eq!(stamp[0], (a.clone(), None));
        assert!(stamp[1].1.is_some());
        assert_eq!(store.stamp(&paths, Duration::ZERO)[0].1, FileStamp::of(&a));

        // Past its bound: set aside, reported, its last objects kept.
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let set_aside = store.load(&paths, &changing);
        assert_eq!(names(&set_aside), ["a", "b"]);
        assert_eq!(set_aside.stale, std::slice::from_ref(&a));
        assert_eq!(set_aside.errors.len(), 1, "{:?}", set_aside.errors);
        assert_eq!(set_aside.errors[0].failure, Failure::Changing);
        assert!(
            set_aside.errors[0]
                .message
                .starts_with("set aside: it has not been left alone for 3600000 ms in "),
            "{}",
            set_aside.errors[0]
        );
        assert_eq!(store.set_aside_due(), None);

        // Left alone: read.
        let read = store.load(&paths, &settled);
        assert_eq!((names(&read), read.errors.len()), (vec!["a2".into(), "b".into()], 0));
        assert!(store.stamp(&paths, changing.settle)[0].1.is_some());
    }

    #[test]
    fn a_path_that_cannot_be_listed_keeps_every_file_under_it() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("manifests");
        std::fs::create_dir(&dir).unwrap();
        write(&dir.join("a.yaml"), &host("a"));
        write(&dir.join("b.yaml"), &host("b"));
        let paths = [dir.clone()];
        let mut store = LastGood::new();
        assert_eq!(names(&store.load(&paths, &Limits::default())), ["a", "b"]);
        std::fs::rename(&dir, parent.path().join("away")).unwrap();
        let away = store.load(&paths, &Limits::default());
        assert_eq!(names(&away), ["a", "b"]);
        assert_eq!(away.stale, [dir.join("a.yaml"), dir.join("b.yaml")]);
        assert_eq!((away.errors.len(), away.errors[0].failure), (1, Failure::Io));
    }

    #[test]
    fn a_file_never_read_whole_gives_what_it_can_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.yaml");
        write(&a, &format!("{}---\nkind: Pod\n", host("a1")));
        let mut store = LastGood::new();
        let paths = [a.clone()];
        let partial = store.load(&paths, &Limits::default());
        assert_eq!(
            (names(&partial), partial.errors.len(), partial.stale.len()),
            (vec!["a1".into()], 1, 0)
        );
        write(&a, "spec: [unclosed");
        let broken = store.load(&paths, &Limits::default());
        assert_eq!((names(&broken), broken.stale.clone()), (vec!["a1".into()], vec![a]));
    }

    #[test]
    fn of_two_copies_the_first_in_path_order_is_kept_even_when_it_is_a_kept_one() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
        write(&a, &host("x"));
        write(&b, &host("y"));
        let paths = [dir.path().to_path_buf()];
        let mut store = LastGood::new();
        store.load(&paths, &Limits::default());
        // a.yaml breaks, and b.yaml now also holds `x`: a.yaml's kept copy wins.
        write(&a, "spec: [unclosed");
        write(&b, &host("x").replace("web", "other"));
        let load = store.load(&paths, &Limits::default());
        assert_eq!(load.objects.len(), 1);
        assert_eq!(load.objects[0].file, a);
        let duplicate = load.errors.iter().find(|e| e.failure == Failure::Duplicate).unwrap();
        assert_eq!(
            duplicate.to_string(),
            format!(
                "{}: document 0: VirtualHost default/x is also in {} (document 0), the copy used",
                b.display(),
                a.display()
            )
        );
    }

    #[test]
    fn a_file_named_twice_gives_its_objects_once_and_keeps_them_when_it_breaks() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.yaml");
        write(&a, &host("a1"));
        // The directory and the file in it: two paths reaching one file.
        let paths = [dir.path().to_path_buf(), a.clone()];
        let mut store = LastGood::new();
        let first = store.load(&paths, &Limits::default());
        assert_eq!((names(&first), first.errors.len()), (vec!["a1".into()], 0));
        assert_eq!(names(&store.load(&paths, &Limits::default())), ["a1"]);

        write(&a, "spec: [unclosed");
        let broken = store.load(&paths, &Limits::default());
        assert_eq!(names(&broken), ["a1"], "{:?}", broken.errors);
        assert_eq!(broken.stale, std::slice::from_ref(&a));
    }
}
