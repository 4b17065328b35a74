//! Which copy of each object a store's files give is in use: the first in
//! path order, then document order ([`crate::Load::first_copies`]'s rule), kept
//! up to date file by file, so that a load that reads one file again costs
//! that file's objects, not every object's.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use aether_api::ObjectKey;

use crate::Error;
use crate::load::{Loaded, duplicate};

/// Per object, where its copies are.
#[derive(Debug, Default)]
pub(super) struct Copies {
    /// Each object's copies, as (file, index among the file's objects), in
    /// path then document order: the first is in use.
    places: HashMap<ObjectKey, BTreeSet<(PathBuf, usize)>>,
    /// The objects with more than one copy.
    contested: BTreeSet<ObjectKey>,
}

impl Copies {
    /// `file` gave `old` and now gives `new`: their objects' keys join
    /// `affected`.
    pub(super) fn replace(&mut self, file: &Path, old: &[Loaded], new: &[Loaded], affected: &mut BTreeSet<ObjectKey>) {
        for (at, loaded) in old.iter().enumerate() {
            let key = loaded.object.key();
            if let Some(places) = self.places.get_mut(&key) {
                places.remove(&(file.to_owned(), at));
            }
            affected.insert(key);
        }
        for (at, loaded) in new.iter().enumerate() {
            let key = loaded.object.key();
            self.places
                .entry(key.clone())
                .or_default()
                .insert((file.to_owned(), at));
            affected.insert(key);
        }
    }

    /// Forgets the `affected` objects no file gives any more and notes
    /// which have several copies.
    pub(super) fn settle(&mut self, affected: &BTreeSet<ObjectKey>) {
        for key in affected {
            match self.places.get(key).map_or(0, BTreeSet::len) {
                0 => {
                    self.places.remove(key);
                    self.contested.remove(key);
                }
                1 => {
                    self.contested.remove(key);
                }
                _ => {
                    self.contested.insert(key.clone());
                }
            }
        }
    }

    /// Where the copy of `key` in use is.
    pub(super) fn used(&self, key: &ObjectKey) -> Option<&(PathBuf, usize)> {
        self.places.get(key)?.first()
    }

    /// A duplicate's error for each copy not in use, in key order.
    pub(super) fn duplicates(&self, files: &BTreeMap<PathBuf, Vec<Loaded>>) -> Vec<Error> {
        let loaded = |(file, at): &(PathBuf, usize)| files.get(file).and_then(|objects| objects.get(*at));
        let mut errors = Vec::new();
        for key in &self.contested {
            let Some(places) = self.places.get(key) else { continue };
            let mut places = places.iter();
            let Some(used) = places.next().and_then(loaded) else {
                continue;
            };
            errors.extend(places.filter_map(loaded).map(|copy| duplicate(used, copy)));
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use aether_api::ObjectKey;

    use crate::last_good::LastGood;
    use crate::load::Loaded;
    use crate::{Failure, Limits};

    /// A step of the test: what it does, and doing it.
    type Step<'a> = (&'static str, Box<dyn Fn() + 'a>);

    /// Object `name`, serving `host`.
    fn object(name: &str, host: &str) -> String {
        format!(
            "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: {name}}}\n\
             spec: {{hosts: [{host}.example.com], routes: [{{match: {{prefix: /}}, backend: {{service: web}}}}]}}\n---\n"
        )
    }

    /// What an object is, for comparing: where its copy in use is, and its spec.
    fn seen(loaded: &Loaded) -> (String, usize, String) {
        (
            loaded.file.display().to_string(),
            loaded.document,
            format!("{:?}", loaded.object.spec),
        )
    }

    #[test]
    fn the_changes_of_each_load_add_up_to_what_a_whole_load_gives() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        std::fs::create_dir(at("c")).unwrap();
        let write = |name: &str, text: &str| std::fs::write(at(name), text).unwrap();
        let steps: Vec<Step> = vec![
            (
                "two files, why in both: a's copy",
                Box::new(|| {
                    write("a.yaml", &(object("ex", "x1") + &object("why", "y-a")));
                    write("b.yaml", &(object("why", "y-b") + &object("zed", "z1")));
                }),
            ),
            (
                "b edited: why changed, zed gone, wee new",
                Box::new(|| write("b.yaml", &(object("why", "y-b2") + &object("wee", "w1")))),
            ),
            (
                "a deleted: b's why",
                Box::new(|| std::fs::remove_file(at("a.yaml")).unwrap()),
            ),
            ("b broken: kept", Box::new(|| write("b.yaml", "spec: [unclosed"))),
            (
                "a again, why twice in it",
                Box::new(|| write("a.yaml", &(object("why", "y-a3") + &object("why", "y-a4")))),
            ),
            (
                "a file in a folder; b repaired",
                Box::new(|| {
                    write("c/d.yaml", &object("ex", "x-d"));
                    write("b.yaml", &(object("wee", "w2") + &object("why", "y-b5")));
                }),
            ),
            (
                "b written again as it was",
                Box::new(|| write("b.yaml", &(object("wee", "w2") + &object("why", "y-b5")))),
            ),
            (
                "the folder's file deleted",
                Box::new(|| std::fs::remove_file(at("c/d.yaml")).unwrap()),
            ),
        ];
        let paths = [dir.path().to_path_buf()];
        let limits = Limits {
            settle: std::time::Duration::ZERO,
            ..Limits::default()
        };
        let (mut whole, mut changing) = (LastGood::new(), LastGood::new());
        let mut kept: BTreeMap<ObjectKey, (String, usize, String)> = BTreeMap::new();
        for (step, change) in steps {
            change();
            let load = whole.load(&paths, &limits);
            let changes = changing.load_changes(&paths, &limits);
            for loaded in &changes.put {
                kept.insert(loaded.object.key(), seen(loaded));
            }
            for key in &changes.removed {
                assert!(kept.remove(key).is_some(), "{step}: {key} removed, never put");
            }
            let expected: BTreeMap<ObjectKey, (String, usize, String)> = load
                .objects
                .iter()
                .map(|loaded| (loaded.object.key(), seen(loaded)))
                .collect();
            assert_eq!(kept, expected, "{step}");
            let errors = |errors: &[crate::Error]| {
                let mut errors: Vec<String> = errors.iter().map(|err| format!("{err:?}")).collect();
                errors.sort();
                errors
            };
            assert_eq!(errors(&changes.errors), errors(&load.errors), "{step}");
            assert_eq!(changes.stale, load.stale, "{step}");
            // The copies in use, file by file, as the whole load has them.
            for file in [at("a.yaml"), at("b.yaml"), at("c/d.yaml")] {
                let used: Vec<_> = changing.used_in(Path::new(&file)).map(seen).collect();
                let expected: Vec<_> = load
                    .objects
                    .iter()
                    .filter(|loaded| loaded.file == file)
                    .map(seen)
                    .collect();
                assert_eq!(used, expected, "{step}: {}", file.display());
            }
        }
        // Why is in a twice and in b at the end: a's first copy is used.
        let last = changing.load_changes(&paths, &limits);
        let duplicates: Vec<_> = last
            .errors
            .into_iter()
            .filter(|err| err.failure == Failure::Duplicate)
            .map(|err| (err.file, err.document))
            .collect();
        assert_eq!(duplicates, [(at("a.yaml"), Some(1)), (at("b.yaml"), Some(1))]);
    }

    #[test]
    fn a_load_that_reads_one_file_again_puts_only_that_file_s_objects() {
        let dir = tempfile::tempdir().unwrap();
        for f in 0..20 {
            let text: String = (0..10)
                .map(|i| object(&format!("o{f}-{i}"), &format!("h{f}-{i}")))
                .collect();
            std::fs::write(dir.path().join(format!("f{f:02}.yaml")), text).unwrap();
        }
        let paths = [dir.path().to_path_buf()];
        let mut store = LastGood::new();
        assert_eq!(store.load_changes(&paths, &Limits::default()).put.len(), 200);
        assert!(store.load_changes(&paths, &Limits::default()).put.is_empty());
        let text: String = (0..9).map(|i| object(&format!("o7-{i}"), "edited")).collect();
        std::fs::write(dir.path().join("f07.yaml"), text).unwrap();
        let changes = store.load_changes(&paths, &Limits::default());
        assert_eq!(
            (changes.put.len(), changes.removed),
            (9, vec![ObjectKey::new("default", "o7-9")])
        );
    }
}
