//! Persistent tables in memory: rows keyed by the text of their primary key, each with
//! the timestamp of its last insert/upsert/update (so it counts as newest for windows).
//! The SQLite copy is kept by `persist`; this is what queries read.

use std::collections::HashMap;

use crate::ast::AssignOp;
use crate::exec::Row;
use crate::value::{Value, ValueRef};

/// A persistent table's rows, keyed by the text of the primary key.
#[derive(Default)]
pub struct PersistentRows {
    pub rows: HashMap<String, PRow>,
}

pub struct PRow {
    pub ts: i64,
    /// Tie-break for rows with equal timestamps (restored from disk).
    pub seq: u64,
    pub values: Vec<Value>,
}

pub struct PRowRef<'a>(pub &'a PRow);

impl<'a> Row<'a> for PRowRef<'a> {
    fn get(&self, col: usize) -> ValueRef<'a> {
        if col == 0 {
            ValueRef::Tstamp(self.0.ts)
        } else {
            self.0.values[col - 1].as_ref()
        }
    }
}

/// The primary key's text form, used as the map key.
pub fn key_text(v: &Value) -> String {
    let mut s = String::new();
    v.as_ref().write_wire(&mut s);
    s
}

/// Rows oldest first, ready for windowing.
pub fn sorted_rows(p: &PersistentRows) -> Vec<&PRow> {
    let mut v: Vec<&PRow> = p.rows.values().collect();
    v.sort_by_key(|r| (r.ts, r.seq));
    v
}

/// The new value of a column after `=`, `+=` or `-=`.
pub fn apply_assign(cur: &Value, op: AssignOp, v: &Value) -> Value {
    match (op, cur, v) {
        (AssignOp::Set, _, v) => v.clone(),
        (AssignOp::Add, Value::Int(a), Value::Int(b)) => Value::Int(a.wrapping_add(*b)),
        (AssignOp::Sub, Value::Int(a), Value::Int(b)) => Value::Int(a.wrapping_sub(*b)),
        (AssignOp::Add, Value::Tstamp(a), Value::Tstamp(b)) => Value::Tstamp(a.wrapping_add(*b)),
        (AssignOp::Sub, Value::Tstamp(a), Value::Tstamp(b)) => Value::Tstamp(a.wrapping_sub(*b)),
        (AssignOp::Add, a, b) => Value::Real(a.as_ref().as_f64().unwrap_or(0.0) + b.as_ref().as_f64().unwrap_or(0.0)),
        (AssignOp::Sub, a, b) => Value::Real(a.as_ref().as_f64().unwrap_or(0.0) - b.as_ref().as_f64().unwrap_or(0.0)),
    }
}
