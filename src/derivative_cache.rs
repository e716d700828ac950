//! Small derivatives (thumbs, posters) kept in this instance's memory, so a gallery full of
//! guests scrolling the same photos does not ask the photo store for the same few kilobytes
//! thousands of times. A derivative never changes under its key (made once per upload), so
//! an entry is never stale; it is only forgotten, the one used longest ago first, when the
//! cache would hold more than its bound in bytes.
//!
//! The cache knows bytes, not people: whoever asks has passed the upload's visibility check
//! for this request already (`http::media`), so a hidden or deleted upload is refused before
//! the cache is read.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use bytes::Bytes;

use crate::blobs::BlobKey;

/// A derivative larger than this is streamed from the store and not kept: a thumb is 10–40 KB,
/// a preview 300 KB and up.
pub const MAX_ENTRY_BYTES: u64 = 64 * 1024;

#[derive(Debug)]
pub struct DerivativeCache {
    max_bytes: u64,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<BlobKey, (Bytes, u64)>,
    /// Entries by the tick of their last use: the first is the one to forget.
    by_use: BTreeMap<u64, BlobKey>,
    tick: u64,
    bytes: u64,
}

impl DerivativeCache {
    /// A cache holding at most `max_bytes` of derivatives (0: none).
    pub fn new(max_bytes: u64) -> Self {
        Self { max_bytes, inner: Mutex::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a derivative of `len` bytes is worth keeping.
    pub fn keeps(&self, len: u64) -> bool {
        len <= MAX_ENTRY_BYTES && len <= self.max_bytes
    }

    /// The bytes kept under `key`, now the most recently used.
    pub fn get(&self, key: BlobKey) -> Option<Bytes> {
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        let (bytes, used) = inner.entries.get_mut(&key)?;
        let (bytes, old) = (bytes.clone(), std::mem::replace(used, tick));
        inner.by_use.remove(&old);
        inner.by_use.insert(tick, key);
        Some(bytes)
    }

    /// Keeps `bytes` under `key` (if `keeps` says so), forgetting the least recently used
    /// entries until the bound holds.
    pub fn insert(&self, key: BlobKey, bytes: Bytes) {
        let len = bytes.len() as u64;
        if !self.keeps(len) {
            return;
        }
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        if let Some((old, used)) = inner.entries.insert(key, (bytes, tick)) {
            inner.by_use.remove(&used);
            inner.bytes -= old.len() as u64;
        }
        inner.by_use.insert(tick, key);
        inner.bytes += len;
        while inner.bytes > self.max_bytes {
            let Some((_, oldest)) = inner.by_use.pop_first() else {
                break;
            };
            if let Some((gone, _)) = inner.entries.remove(&oldest) {
                inner.bytes -= gone.len() as u64;
            }
        }
    }

    /// Bytes held now (never more than the bound).
    pub fn held_bytes(&self) -> u64 {
        self.lock().bytes
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    fn thumb() -> BlobKey {
        BlobKey::Thumb { event_id: Uuid::nil(), upload_id: Uuid::new_v4() }
    }

    #[test]
    fn the_least_recently_used_goes_first_and_the_bound_holds() {
        let cache = DerivativeCache::new(3000);
        let (a, b, c, d) = (thumb(), thumb(), thumb(), thumb());
        for key in [a, b, c] {
            cache.insert(key, Bytes::from(vec![0; 1000]));
        }
        assert!(cache.get(a).is_some(), "a is used again");
        cache.insert(d, Bytes::from(vec![0; 1000]));
        assert!(cache.get(b).is_none(), "b was used longest ago");
        assert!(cache.get(a).is_some() && cache.get(c).is_some() && cache.get(d).is_some());
        assert_eq!(cache.held_bytes(), 3000);
        for _ in 0..100 {
            cache.insert(thumb(), Bytes::from(vec![0; 700]));
            assert!(cache.held_bytes() <= 3000, "{} bytes", cache.held_bytes());
        }
    }

    #[test]
    fn large_derivatives_and_a_zero_bound_keep_nothing() {
        let cache = DerivativeCache::new(1 << 30);
        cache.insert(thumb(), Bytes::from(vec![0; MAX_ENTRY_BYTES as usize + 1]));
        assert!(cache.is_empty());
        let none = DerivativeCache::new(0);
        none.insert(thumb(), Bytes::from_static(b"x"));
        assert!(none.is_empty());
    }

    #[test]
    fn keeping_a_key_again_replaces_it() {
        let cache = DerivativeCache::new(10_000);
        let key = thumb();
        cache.insert(key, Bytes::from(vec![0; 1000]));
        cache.insert(key, Bytes::from(vec![1; 500]));
        assert_eq!((cache.len(), cache.held_bytes()), (1, 500));
    }
}
