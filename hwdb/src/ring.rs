//! The stream-table store: one fixed-size byte buffer (`--memory`) cut into equal chunks
//! that the stream tables share. A table appends its tuples, in arrival order, to its own
//! newest chunk and takes a new chunk when that one is full.
//!
//! Fair share (why: a flood in one table must never erase another table's history). Every
//! stream table is guaranteed `chunks / tables` chunks. A table needing a chunk gets:
//!   1. a free chunk, while the ring has any (a table may borrow beyond its share then);
//!   2. otherwise, when it already holds its share, its own oldest chunk (it evicts itself);
//!   3. otherwise (it is below its share) the oldest chunk of the table furthest over its
//!      share; such a table always exists because the shares add up to at most the ring.
//!
//! So a table at or below its share never loses tuples to another table's inserts, and the
//! memory is bounded by the one buffer allocated at start. Eviction is a chunk at a time
//! (the chunk's tuples are all that table's oldest).
//!
//! Record layout (little-endian, 8-byte aligned so every field read is cheap):
//!   u16 table id, u16 unused, u32 record length, i64 timestamp, then one 8-byte slot per
//!   column (integers, reals, booleans in place; text as u32 offset-in-record + u32
//!   length), then the text bytes. A record never spans two chunks.

use std::collections::VecDeque;

use crate::value::{ColType, ValueRef};

const HEADER: usize = 16;
/// Chunks are `capacity / CHUNKS_WANTED` bytes, within [MIN_CHUNK, MAX_CHUNK]: small enough
/// that eviction loses little at once, large enough for any tuple of the router schema.
const CHUNKS_WANTED: usize = 1024;
const MIN_CHUNK: usize = 1024;
const MAX_CHUNK: usize = 64 << 10;

pub type TableId = u16;

/// One table's part of the ring.
#[derive(Default)]
struct TableStore {
    /// The chunks it holds, oldest first; it writes into the last one.
    chunks: VecDeque<u32>,
    /// Where the next tuple goes inside the last chunk.
    write_off: usize,
    /// The physical offsets of its live tuples, oldest first (physical, so a scan needs no
    /// division per row).
    index: VecDeque<u64>,
    /// Bytes of its live tuples.
    bytes: u64,
    evicted: u64,
}

pub struct Ring {
    buf: Vec<u8>,
    chunk: usize,
    free: Vec<u32>,
    tables: Vec<TableStore>,
    evicted: u64,
}

/// One stored tuple, borrowed from the ring. Column 0 is the implicit timestamp.
#[derive(Clone, Copy)]
pub struct RowView<'a> {
    rec: &'a [u8],
    types: &'a [ColType],
}

fn align8(n: usize) -> usize {
    (n + 7) & !7
}

impl Ring {
    /// `capacity` bytes, rounded down to a whole number of chunks (at least 4 KiB).
    pub fn new(capacity: usize) -> Ring {
        let cap = capacity.max(4096);
        let chunk = (cap / CHUNKS_WANTED).clamp(MIN_CHUNK, MAX_CHUNK) & !7;
        let n = cap / chunk;
        // Highest index last, so chunks are handed out from the start of the buffer.
        let free = (0..n as u32).rev().collect();
        Ring { buf: vec![0; n * chunk], chunk, free, tables: Vec::new(), evicted: 0 }
    }

    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Size of one chunk, the largest tuple the ring takes and the unit of eviction.
    pub fn chunk_size(&self) -> usize {
        self.chunk
    }

    /// Bytes of live tuples in all tables (never more than `capacity`).
    pub fn used_bytes(&self) -> u64 {
        self.tables.iter().map(|t| t.bytes).sum()
    }

    /// Bytes of live tuples of one table.
    pub fn table_bytes(&self, table: TableId) -> u64 {
        self.tables[table as usize].bytes
    }

    /// Bytes of the chunks a table holds.
    pub fn held_bytes(&self, table: TableId) -> u64 {
        (self.tables[table as usize].chunks.len() * self.chunk) as u64
    }

    /// The guaranteed share of one table, in bytes (equal for every table).
    pub fn share_bytes(&self) -> u64 {
        (self.share_chunks() * self.chunk) as u64
    }

    /// Total number of tuples evicted to make room since start.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Tuples of one table evicted to make room since start.
    pub fn evicted_from(&self, table: TableId) -> u64 {
        self.tables[table as usize].evicted
    }

    pub fn add_table(&mut self) -> TableId {
        self.tables.push(TableStore::default());
        (self.tables.len() - 1) as TableId
    }

    pub fn len(&self, table: TableId) -> usize {
        self.tables[table as usize].index.len()
    }

    fn n_chunks(&self) -> usize {
        self.buf.len() / self.chunk
    }

    fn share_chunks(&self) -> usize {
        self.n_chunks() / self.tables.len().max(1)
    }

    /// Bytes a tuple with these values needs.
    pub fn record_size(values: &[ValueRef]) -> usize {
        let text: usize = values.iter().map(|v| if let ValueRef::Str(s) = v { s.len() } else { 0 }).sum();
        align8(HEADER + 8 * values.len() + text)
    }

    /// Append a tuple (values already type-checked, one per declared column).
    /// Returns Err if a single tuple is larger than a chunk.
    pub fn append(&mut self, table: TableId, ts: i64, values: &[ValueRef]) -> Result<(), String> {
        let size = Ring::record_size(values);
        let chunk = self.chunk;
        if size > chunk {
            return Err(format!("tuple of {size} bytes does not fit in a {chunk}-byte ring chunk"));
        }
        let t = table as usize;
        let has_room = !self.tables[t].chunks.is_empty() && self.tables[t].write_off + size <= chunk;
        if !has_room {
            let c = self.take_chunk(t);
            let store = &mut self.tables[t];
            store.chunks.push_back(c);
            store.write_off = 0;
        }
        let store = &self.tables[t];
        let p = *store.chunks.back().unwrap() as usize * chunk + store.write_off;
        let rec = &mut self.buf[p..p + size];
        rec[0..2].copy_from_slice(&table.to_le_bytes());
        rec[2..4].fill(0);
        rec[4..8].copy_from_slice(&(size as u32).to_le_bytes());
        rec[8..16].copy_from_slice(&ts.to_le_bytes());
        let mut text_at = HEADER + 8 * values.len();
        for (i, v) in values.iter().enumerate() {
            let slot = HEADER + 8 * i;
            let bits: u64 = match v {
                ValueRef::Null => 0,
                ValueRef::Bool(b) => *b as u64,
                ValueRef::Int(x) | ValueRef::Tstamp(x) => *x as u64,
                ValueRef::Real(r) => r.to_bits(),
                ValueRef::Str(s) => {
                    rec[text_at..text_at + s.len()].copy_from_slice(s.as_bytes());
                    let packed = (text_at as u64) | ((s.len() as u64) << 32);
                    text_at += s.len();
                    packed
                }
            };
            rec[slot..slot + 8].copy_from_slice(&bits.to_le_bytes());
        }
        let store = &mut self.tables[t];
        store.index.push_back(p as u64);
        store.write_off += size;
        store.bytes += size as u64;
        Ok(())
    }

    /// A chunk for table `t` to write into, by the fair-share rule of the module doc.
    fn take_chunk(&mut self, t: usize) -> u32 {
        if let Some(c) = self.free.pop() {
            return c;
        }
        let share = self.share_chunks();
        let held = self.tables[t].chunks.len();
        let victim = if held >= share && held > 0 {
            t
        } else {
            // Furthest over its share; on a tie the lowest id. One exists (see module doc).
            (0..self.tables.len())
                .filter(|&u| u != t && !self.tables[u].chunks.is_empty())
                .max_by_key(|&u| (self.tables[u].chunks.len(), std::cmp::Reverse(u)))
                .expect("a full ring has a table holding chunks")
        };
        self.evict_oldest_chunk(victim)
    }

    /// Drop the oldest chunk of a table with the tuples in it; returns the chunk.
    fn evict_oldest_chunk(&mut self, t: usize) -> u32 {
        let chunk = self.chunk as u64;
        let store = &mut self.tables[t];
        let c = store.chunks.pop_front().expect("victim holds a chunk");
        let (lo, hi) = (c as u64 * chunk, c as u64 * chunk + chunk);
        let mut n = 0;
        while let Some(&pos) = store.index.front() {
            if pos < lo || pos >= hi {
                break;
            }
            let len = u32::from_le_bytes(self.buf[pos as usize + 4..pos as usize + 8].try_into().unwrap()) as u64;
            store.bytes -= len;
            store.index.pop_front();
            n += 1;
        }
        if store.chunks.is_empty() {
            store.write_off = 0;
        }
        store.evicted += n;
        self.evicted += n;
        c
    }

    fn record(&self, phys: u64) -> &[u8] {
        let p = phys as usize;
        let len = u32::from_le_bytes(self.buf[p + 4..p + 8].try_into().unwrap()) as usize;
        &self.buf[p..p + len]
    }

    fn ts_at(&self, phys: u64) -> i64 {
        let p = phys as usize;
        i64::from_le_bytes(self.buf[p + 8..p + 16].try_into().unwrap())
    }

    /// Index (into the table's live tuples, oldest = 0) of the first tuple whose
    /// timestamp is >= `ts` (or > `ts` when `strict`). Timestamps never decrease.
    pub fn lower_bound(&self, table: TableId, ts: i64, strict: bool) -> usize {
        let idx = &self.tables[table as usize].index;
        idx.partition_point(|&pos| {
            let t = self.ts_at(pos);
            if strict {
                t <= ts
            } else {
                t < ts
            }
        })
    }

    /// The tuples with index in `from..to` (oldest first).
    pub fn rows<'a>(
        &'a self,
        table: TableId,
        types: &'a [ColType],
        from: usize,
        to: usize,
    ) -> impl Iterator<Item = RowView<'a>> + 'a {
        self.tables[table as usize].index.range(from..to).map(move |&pos| RowView { rec: self.record(pos), types })
    }
}

impl<'a> RowView<'a> {
    pub fn ts(&self) -> i64 {
        i64::from_le_bytes(self.rec[8..16].try_into().unwrap())
    }

    /// Column 0 is `timestamp`; declared columns start at 1.
    #[inline]
    pub fn get(&self, col: usize) -> ValueRef<'a> {
        if col == 0 {
            return ValueRef::Tstamp(self.ts());
        }
        let i = col - 1;
        let slot = HEADER + 8 * i;
        let bits = u64::from_le_bytes(self.rec[slot..slot + 8].try_into().unwrap());
        match self.types[i] {
            ColType::Boolean => ValueRef::Bool(bits != 0),
            ColType::Integer | ColType::Tinyint | ColType::Smallint => ValueRef::Int(bits as i64),
            ColType::Tstamp => ValueRef::Tstamp(bits as i64),
            ColType::Real => ValueRef::Real(f64::from_bits(bits)),
            ColType::Character | ColType::Varchar(_) | ColType::Blob(_) => {
                let off = (bits & 0xffff_ffff) as usize;
                let len = (bits >> 32) as usize;
                let bytes = &self.rec[off..off + len];
                // SAFETY: text slots are only ever written by `append` from a &str, and a
                // record is never modified afterwards, so these bytes are valid UTF-8.
                // Skipping re-validation matters: this runs once per row per text column.
                ValueRef::Str(unsafe { std::str::from_utf8_unchecked(bytes) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(r: &mut Ring, t: TableId, from: i64, n: i64) {
        for i in from..from + n {
            let s = format!("row{i}");
            r.append(t, i, &[ValueRef::Int(i), ValueRef::Str(&s)]).unwrap();
        }
    }

    fn live(r: &Ring, t: TableId) -> Vec<i64> {
        let types = [ColType::Integer, ColType::Varchar(64)];
        r.rows(t, &types, 0, r.len(t)).map(|v| v.ts()).collect()
    }

    #[test]
    fn a_table_alone_wraps_and_keeps_its_newest_tuples() {
        let mut r = Ring::new(64 << 10);
        let a = r.add_table();
        fill(&mut r, a, 0, 10_000);
        assert!(r.evicted() > 0 && r.used_bytes() <= r.capacity() as u64);
        let got = live(&r, a);
        let oldest = got[0];
        assert_eq!(got, (oldest..10_000).collect::<Vec<_>>(), "newest tuples, in order, no gaps");
        assert!(r.table_bytes(a) > (r.capacity() - r.chunk_size()) as u64 * 3 / 4, "a lone table may use the whole ring");
        let types = [ColType::Integer, ColType::Varchar(64)];
        for v in r.rows(a, &types, 0, r.len(a)) {
            assert_eq!(v.get(2), ValueRef::Str(&format!("row{}", v.ts())));
        }
    }

    #[test]
    fn a_flood_in_one_table_never_evicts_a_table_within_its_share() {
        let mut r = Ring::new(64 << 10);
        let quiet = r.add_table();
        let flood = r.add_table();
        fill(&mut r, quiet, 0, 100);
        fill(&mut r, flood, 1_000_000, 50_000);
        assert_eq!(live(&r, quiet), (0..100).collect::<Vec<_>>());
        assert_eq!(r.evicted_from(quiet), 0);
        assert!(r.evicted_from(flood) > 0);
        assert!(r.used_bytes() <= r.capacity() as u64);
    }

    #[test]
    fn a_table_below_its_share_takes_back_borrowed_chunks() {
        let mut r = Ring::new(64 << 10);
        let a = r.add_table();
        let b = r.add_table();
        fill(&mut r, a, 0, 20_000); // a borrows the whole ring
        assert_eq!(r.held_bytes(a), r.capacity() as u64);
        fill(&mut r, b, 1_000_000, 20_000); // b reclaims its half from a's oldest
        assert_eq!(r.held_bytes(a), r.share_bytes());
        assert_eq!(r.held_bytes(b), r.share_bytes());
        let got = live(&r, a);
        assert_eq!(got, (got[0]..20_000).collect::<Vec<_>>(), "a lost only its oldest tuples");
    }
}
