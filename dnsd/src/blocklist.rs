//! Blocklists: large sets of blocked names (a subscription the household added), loaded
//! from a file the controller writes (one normalized name per line) and matched like the
//! rules are: a listed name covers its subdomains.
//!
//! Compact on purpose (a 1,000,000-name list is ~45 MB, read from the file line by line): every name lives in one string
//! arena; an open-addressing table finds a name in one or two probes, so a lookup costs a
//! hash per suffix of the query name, not a tree walk. Each slot holds the name's index
//! and 32 bits of its hash: a name that is not listed (nearly every query) is turned away
//! by the slot alone, without touching the arena (one cache miss per suffix).

use std::collections::HashSet;
use std::io::BufRead;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The names of one list.
pub struct NameSet {
    arena: String,
    /// Start of name i in the arena; name i ends where name i+1 starts (one extra entry).
    starts: Vec<u32>,
    /// Open addressing: 0 = empty, otherwise (hash high 32 bits << 32) | (name index + 1).
    /// Length a power of two.
    table: Vec<u64>,
    /// Whether any entry is a single label ("com"): if not, the last label is never looked up.
    single_labels: bool,
    /// Distinct names indexed.
    count: usize,
    /// `@@name` lines: the list's own exceptions (ABP `@@||name^`), few.
    exceptions: HashSet<Box<str>>,
}

fn hash(name: &[u8]) -> u64 {
    // FNV-1a, then a multiply so the low bits (the slot) depend on every byte.
    let h = name.iter().fold(0xcbf29ce484222325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3));
    (h ^ (h >> 29)).wrapping_mul(0xbf58476d1ce4e5b9)
}

impl NameSet {
    /// Parse the list file's text: one name per line (`@@name`: an exception); blank lines
    /// and `#` comments are skipped, names are lower-cased and trailing dots dropped;
    /// duplicates kept once. (Tests; dnsd reads files with `read`.)
    #[cfg(test)]
    pub fn parse(text: &str) -> Result<NameSet, String> {
        Self::read(text.as_bytes(), text.len())
    }

    /// `parse`, streaming: the names go straight into the arena (sized by `size_hint`, the
    /// file's length), so a big list never sits in memory twice.
    pub fn read<R: BufRead>(mut reader: R, size_hint: usize) -> Result<NameSet, String> {
        if size_hint >= u32::MAX as usize / 2 {
            return Err("list too large".into());
        }
        let mut set = NameSet { arena: String::with_capacity(size_hint), starts: vec![0], table: Vec::new(),
                                single_labels: false, count: 0, exceptions: HashSet::new() };
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(|e| format!("cannot read the list: {e}"))? == 0 {
                break;
            }
            let entry = line.trim();
            if entry.is_empty() || entry.starts_with('#') {
                continue;
            }
            let (exception, entry) = match entry.strip_prefix("@@") {
                Some(rest) => (true, rest),
                None => (false, entry),
            };
            let name = entry.trim_end_matches('.');
            if name.is_empty() || name.len() > 253 || name.bytes().any(|b| !b.is_ascii_graphic()) {
                return Err(format!("bad name in list: {:?}", &entry[..entry.len().min(80)]));
            }
            if exception {
                set.exceptions.insert(name.to_ascii_lowercase().into());
            } else {
                set.single_labels |= !name.contains('.');
                set.arena.push_str(&name.to_ascii_lowercase());
                if set.arena.len() >= u32::MAX as usize {
                    return Err("list too large".into());
                }
                set.starts.push(set.arena.len() as u32);
            }
        }
        // The index, once the names are known (a duplicate stays in the arena, unindexed).
        let names = set.starts.len() - 1;
        set.table = vec![0; (names * 2).next_power_of_two().max(16)];
        for i in 0..names {
            let (slot, tag) = set.slot(set.name(i));
            if set.table[slot] == 0 {
                set.table[slot] = tag | (i as u64 + 1);
                set.count += 1;
            }
        }
        Ok(set)
    }

    fn name(&self, i: usize) -> &str {
        &self.arena[self.starts[i] as usize..self.starts[i + 1] as usize]
    }

    /// The slot holding `name`, or the empty slot where it would go.
    fn slot(&self, name: &str) -> (usize, u64) {
        let h = hash(name.as_bytes());
        let mask = self.table.len() - 1;
        let tag = h & !0xffff_ffff;
        let mut slot = h as usize & mask;
        loop {
            let entry = self.table[slot];
            if entry == 0 || (entry & !0xffff_ffff == tag && self.name((entry & 0xffff_ffff) as usize - 1) == name) {
                return (slot, tag);
            }
            slot = (slot + 1) & mask;
        }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn contains(&self, name: &str) -> bool {
        self.table[self.slot(name).0] != 0
    }

    /// Is this name or any of its parent domains listed? The most specific entry wins; at
    /// the same name an exception beats a listing.
    pub fn covers(&self, name: &str) -> bool {
        let mut suffix = name;
        loop {
            if !self.exceptions.is_empty() && self.exceptions.contains(suffix) {
                return false;
            }
            if self.contains(suffix) {
                return true;
            }
            match suffix.find('.') {
                Some(i) if self.single_labels || suffix[i + 1..].contains('.') => suffix = &suffix[i + 1..],
                _ => return false,
            }
        }
    }
}

/// A loaded list and whom it applies to.
pub struct Blocklist {
    pub id: String,
    /// None: the household (every device); otherwise these MACs only.
    pub macs: Option<Vec<Arc<str>>>,
    pub names: Arc<NameSet>,
    /// Queries this list blocked (reported in `stats` as list_blocked.ID=N); shared with
    /// the list's next versions, so a refresh does not reset it.
    pub blocked: Arc<AtomicU64>,
}

impl Blocklist {
    pub fn applies_to(&self, mac: &str) -> bool {
        match &self.macs {
            None => true,
            Some(macs) => macs.iter().any(|m| &**m == mac),
        }
    }

    pub fn count(&self) {
        self.blocked.fetch_add(1, Ordering::Relaxed);
    }
}

/// Read and parse a list file (off the query path: the caller swaps the result in).
pub fn load(path: &str) -> Result<NameSet, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let size = file.metadata().map_err(|e| format!("cannot read {path}: {e}"))?.len() as usize;
    NameSet::read(std::io::BufReader::with_capacity(1 << 16, file), size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches_suffixes() {
        let set = NameSet::parse("# comment\n@@ok.tracker.test\nAds.Example.com.\n\ntracker.test\nads.example.com\n").unwrap();
        assert!(set.covers("x.tracker.test") && !set.covers("ok.tracker.test") && !set.covers("a.ok.tracker.test"));
        assert_eq!(set.len(), 2);
        assert!(set.covers("ads.example.com"));
        assert!(set.covers("x.y.ads.example.com"));
        assert!(!set.covers("example.com"));
        assert!(!set.covers("notads.example.com"));
        assert!(set.covers("tracker.test"));
        assert!(NameSet::parse("@@bad name\n").is_err());
        assert!(!set.covers("com") && NameSet::parse("com\n").unwrap().covers("example.com"));
        assert!(!set.covers("test"));
        assert!(NameSet::parse("bad name\n").is_err());
    }

    #[test]
    fn a_large_list_loads_and_finds_every_name() {
        let text: String = (0..200_000).map(|i| format!("host{i}.list.test\n")).collect();
        let set = NameSet::parse(&text).unwrap();
        assert_eq!(set.len(), 200_000);
        assert!((0..200_000).step_by(997).all(|i| set.covers(&format!("www.host{i}.list.test"))));
        assert!(!set.covers("host200000.list.test"));
    }
}
