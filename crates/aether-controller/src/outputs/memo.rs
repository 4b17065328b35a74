//! The last thing made, kept with what it was made from.

use std::sync::{Arc, Mutex, PoisonError};

/// The value made from the last key, made again only when the key is not
/// the same (by the caller's comparison, which for the snapshot's shared
/// parts looks at their address first). Clones share the memo: what it
/// holds is a function of its key, so sharing it changes no output.
#[derive(Debug)]
pub struct Memo<K, T>(Arc<Mutex<Option<(K, T)>>>);

impl<K, T> Clone for Memo<K, T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<K, T> Default for Memo<K, T> {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(None)))
    }
}

impl<K, T: Clone> Memo<K, T> {
    /// What `make` made of the last key when `same` says `key` is that key;
    /// else `make(&key)`, kept for the next call (an error keeps nothing
    /// new).
    pub fn get<E>(
        &self,
        key: K,
        same: impl FnOnce(&K, &K) -> bool,
        make: impl FnOnce(&K) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((made_from, made)) = &*last
            && same(made_from, &key)
        {
            return Ok(made.clone());
        }
        let made = make(&key)?;
        *last = Some((key, made.clone()));
        Ok(made)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_made_again_exactly_when_its_key_changes() {
        let memo: Memo<u32, String> = Memo::default();
        let mut made = 0;
        let mut get = |key: u32| {
            memo.get(
                key,
                |a, b| a == b,
                |key| {
                    made += 1;
                    Ok::<_, ()>(key.to_string())
                },
            )
            .unwrap()
        };
        assert_eq!(get(1), "1");
        assert_eq!(get(1), "1");
        assert_eq!(get(2), "2");
        assert_eq!(get(1), "1");
        assert_eq!(made, 3);
        // A failed make keeps the last value.
        assert_eq!(memo.get(5, |a, b| a == b, |_| Err::<String, _>("no")), Err("no"));
        assert_eq!(
            memo.get(1, |a, b| a == b, |_| Err::<String, _>("unused")),
            Ok("1".to_owned())
        );
    }
}
