//! The stream-table store: one fixed-size circular byte buffer shared by every stream
//! table. Tuples are appended in arrival order; when the buffer is full the oldest
//! tuples (of whichever tables) are evicted first. Each table keeps an index of the
//! positions of its own live tuples so windows and scans never touch other tables.
//!
//! Record layout (little-endian, 8-byte aligned so every field read is cheap):
//!   u16 table id (PAD = filler up to the end of the buffer), u16 unused, u32 record length,
//!   i64 timestamp, then one 8-byte slot per column (integers, reals, booleans in place;
//!   text as u32 offset-in-record + u32 length), then the text bytes.

use std::collections::VecDeque;

use crate::value::{ColType, ValueRef};

const HEADER: usize = 16;
const PAD: u16 = u16::MAX;

pub type TableId = u16;

pub struct Ring {
    buf: Vec<u8>,
    /// Logical offsets grow forever; the physical offset is `pos % cap`.
    head: u64,
    tail: u64,
    /// Per table, the physical offsets of its live tuples, oldest first (physical, so a
    /// scan needs no division per row).
    tables: Vec<VecDeque<u64>>,
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
    /// `capacity` bytes, rounded down to a multiple of 8 (at least 4 KiB).
    pub fn new(capacity: usize) -> Ring {
        let cap = (capacity.max(4096)) & !7;
        Ring { buf: vec![0; cap], head: 0, tail: 0, tables: Vec::new(), evicted: 0 }
    }

    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    pub fn used_bytes(&self) -> u64 {
        self.tail - self.head
    }

    /// Total number of tuples evicted to make room since start.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    pub fn add_table(&mut self) -> TableId {
        self.tables.push(VecDeque::new());
        (self.tables.len() - 1) as TableId
    }

    pub fn len(&self, table: TableId) -> usize {
        self.tables[table as usize].len()
    }

    /// Bytes a tuple with these values needs.
    pub fn record_size(values: &[ValueRef]) -> usize {
        let text: usize = values.iter().map(|v| if let ValueRef::Str(s) = v { s.len() } else { 0 }).sum();
        align8(HEADER + 8 * values.len() + text)
    }

    /// Append a tuple (values already type-checked, one per declared column).
    /// Returns Err if a single tuple is larger than the whole buffer.
    pub fn append(&mut self, table: TableId, ts: i64, values: &[ValueRef]) -> Result<(), String> {
        let size = Ring::record_size(values);
        let cap = self.buf.len();
        if size > cap {
            return Err(format!("tuple of {size} bytes does not fit in the {cap}-byte ring"));
        }
        let phys = (self.tail % cap as u64) as usize;
        let wrap = if cap - phys < size { cap - phys } else { 0 };
        let start = self.tail + wrap as u64;
        while start + size as u64 - self.head > cap as u64 {
            self.evict_oldest();
        }
        if wrap >= HEADER {
            self.buf[phys..phys + 2].copy_from_slice(&PAD.to_le_bytes());
            self.buf[phys + 4..phys + 8].copy_from_slice(&(wrap as u32).to_le_bytes());
        }
        let p = (start % cap as u64) as usize;
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
        self.tables[table as usize].push_back(p as u64);
        self.tail = start + size as u64;
        Ok(())
    }

    fn evict_oldest(&mut self) {
        let cap = self.buf.len();
        let phys = (self.head % cap as u64) as usize;
        if cap - phys < HEADER {
            // Too small for even a pad header: the writer skipped it.
            self.head += (cap - phys) as u64;
            return;
        }
        let table = u16::from_le_bytes([self.buf[phys], self.buf[phys + 1]]);
        let len = u32::from_le_bytes(self.buf[phys + 4..phys + 8].try_into().unwrap()) as u64;
        if table != PAD {
            let front = self.tables[table as usize].pop_front();
            debug_assert_eq!(front, Some(phys as u64));
            self.evicted += 1;
        }
        self.head += len;
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
        let idx = &self.tables[table as usize];
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
        self.tables[table as usize].range(from..to).map(move |&pos| RowView { rec: self.record(pos), types })
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

    #[test]
    fn wraps_and_evicts_oldest_across_tables() {
        let mut r = Ring::new(4096);
        let a = r.add_table();
        let b = r.add_table();
        let types = [ColType::Integer, ColType::Varchar(64)];
        for i in 0..1000i64 {
            let t = if i % 3 == 0 { b } else { a };
            let s = format!("row{i}");
            r.append(t, i, &[ValueRef::Int(i), ValueRef::Str(&s)]).unwrap();
        }
        assert!(r.used_bytes() <= 4096);
        assert!(r.evicted() > 0);
        let live_a: Vec<i64> = r.rows(a, &types, 0, r.len(a)).map(|v| v.ts()).collect();
        let live_b: Vec<i64> = r.rows(b, &types, 0, r.len(b)).map(|v| v.ts()).collect();
        let oldest = live_a[0].min(live_b[0]);
        // Everything newer than the oldest survivor is still there, in order.
        let mut all: Vec<i64> = live_a.iter().chain(live_b.iter()).copied().collect();
        all.sort();
        assert_eq!(all, (oldest..1000).collect::<Vec<_>>());
        for v in r.rows(a, &types, 0, r.len(a)) {
            assert_eq!(v.get(2), ValueRef::Str(&format!("row{}", v.ts())));
        }
    }
}
