//! Runs a `select` over rows handed to it by the storage layer (the window has already
//! been applied): filter, projection, grouping and aggregates, ordering, limit.
//! Works on borrowed rows so a scan over a million ring tuples allocates only for
//! the rows it returns and the groups it creates.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::ast::{bind_literal, Aggregate, CmpOp, Expr, Select, SelectItem};
use crate::error::{HwdbError, Result};
use crate::result::ResultSet;
use crate::value::{ColType, Value, ValueRef};

/// Anything a select can read: column 0 is the timestamp, declared columns follow.
pub trait Row<'a> {
    fn get(&self, col: usize) -> ValueRef<'a>;
}

impl<'a> Row<'a> for crate::ring::RowView<'a> {
    #[inline]
    fn get(&self, col: usize) -> ValueRef<'a> {
        crate::ring::RowView::get(self, col)
    }
}

/// The column list of a table as a select sees it: `timestamp` first.
pub struct Columns<'s> {
    pub names: Vec<&'s str>,
    pub types: Vec<ColType>,
}

impl<'s> Columns<'s> {
    pub fn new(declared: &'s [(String, ColType)]) -> Columns<'s> {
        let mut names = vec!["timestamp"];
        let mut types = vec![ColType::Tstamp];
        for (n, t) in declared {
            names.push(n.as_str());
            types.push(*t);
        }
        Columns { names, types }
    }

    pub fn find(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n.eq_ignore_ascii_case(name))
    }

    fn require(&self, name: &str, table: &str) -> Result<usize> {
        self.find(name).ok_or_else(|| HwdbError::new(format!("unknown column '{name}' in table {table}")))
    }
}

/// A WHERE clause bound to column positions and typed constants.
pub enum Predicate {
    Cmp { col: usize, op: CmpOp, value: Value },
    And(Box<Predicate>, Box<Predicate>),
    Or(Box<Predicate>, Box<Predicate>),
    Not(Box<Predicate>),
}

pub fn bind_filter(expr: &Expr, cols: &Columns, table: &str, src: &str) -> Result<Predicate> {
    Ok(match expr {
        Expr::Cmp { column, op, value, pos } => {
            let col = cols
                .find(column)
                .ok_or_else(|| HwdbError::at(src, *pos, &format!("unknown column '{column}' in table {table}")))?;
            let ty = cols.types[col];
            if matches!(op, CmpOp::Contains | CmpOp::NotContains) && !ty.is_text() {
                return Err(HwdbError::at(src, *pos, &format!("contains needs a text column, '{column}' is {}", ty.wire_name())));
            }
            // Comparing a text column with any literal compares text; otherwise convert.
            let value = bind_literal(value, ty).map_err(|e| HwdbError::at(src, *pos, &e))?;
            Predicate::Cmp { col, op: *op, value }
        }
        Expr::And(a, b) => Predicate::And(Box::new(bind_filter(a, cols, table, src)?), Box::new(bind_filter(b, cols, table, src)?)),
        Expr::Or(a, b) => Predicate::Or(Box::new(bind_filter(a, cols, table, src)?), Box::new(bind_filter(b, cols, table, src)?)),
        Expr::Not(a) => Predicate::Not(Box::new(bind_filter(a, cols, table, src)?)),
    })
}

impl Predicate {
    pub fn eval<'a, R: Row<'a>>(&self, row: &R) -> bool {
        match self {
            Predicate::Cmp { col, op, value } => {
                let v = row.get(*col);
                let c = value.as_ref();
                match op {
                    CmpOp::Eq => v.cmp_to(c).is_eq(),
                    CmpOp::Ne => v.cmp_to(c).is_ne(),
                    CmpOp::Lt => v.cmp_to(c).is_lt(),
                    CmpOp::Gt => v.cmp_to(c).is_gt(),
                    CmpOp::Le => v.cmp_to(c).is_le(),
                    CmpOp::Ge => v.cmp_to(c).is_ge(),
                    CmpOp::Contains | CmpOp::NotContains => {
                        let hit = matches!((v, c), (ValueRef::Str(h), ValueRef::Str(n)) if h.contains(n));
                        hit == (*op == CmpOp::Contains)
                    }
                }
            }
            Predicate::And(a, b) => a.eval(row) && b.eval(row),
            Predicate::Or(a, b) => a.eval(row) || b.eval(row),
            Predicate::Not(a) => !a.eval(row),
        }
    }
}

/// FxHash-style multiplicative hasher: group keys are short and not attacker-chosen
/// enough to need SipHash, and this is the inner loop of `group by`.
#[derive(Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64)
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64)
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A hashable view of a value, used as (part of) a group key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum KeyPart<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Real(u64),
    Str(&'a str),
}

impl<'a> KeyPart<'a> {
    fn of(v: ValueRef<'a>) -> KeyPart<'a> {
        match v {
            ValueRef::Null => KeyPart::Null,
            ValueRef::Bool(b) => KeyPart::Bool(b),
            ValueRef::Int(i) | ValueRef::Tstamp(i) => KeyPart::Int(i),
            ValueRef::Real(r) => KeyPart::Real(r.to_bits()),
            ValueRef::Str(s) => KeyPart::Str(s),
        }
    }
}

#[derive(Clone, Copy)]
enum AggState<'a> {
    Count(i64),
    MinMax(Option<ValueRef<'a>>),
    SumInt(i64),
    SumReal(f64),
    Avg(f64, i64),
}

/// One output column of an aggregate query.
enum OutCol {
    /// Position in the group key.
    Key(usize),
    Agg,
}

fn agg_type(agg: Aggregate, ty: Option<ColType>) -> ColType {
    match (agg, ty) {
        (Aggregate::Count, _) => ColType::Integer,
        (Aggregate::Avg, _) => ColType::Real,
        (Aggregate::Sum, Some(ColType::Real)) => ColType::Real,
        (Aggregate::Sum, _) => ColType::Integer,
        (_, Some(t)) => t,
        (_, None) => ColType::Integer,
    }
}

fn new_state<'a>(agg: Aggregate, ty: Option<ColType>) -> AggState<'a> {
    match agg {
        Aggregate::Count => AggState::Count(0),
        Aggregate::Min | Aggregate::Max => AggState::MinMax(None),
        Aggregate::Sum if ty == Some(ColType::Real) => AggState::SumReal(0.0),
        Aggregate::Sum => AggState::SumInt(0),
        Aggregate::Avg => AggState::Avg(0.0, 0),
    }
}

impl<'a> AggState<'a> {
    #[inline]
    fn feed(&mut self, agg: Aggregate, v: ValueRef<'a>) {
        match self {
            AggState::Count(n) => *n += 1,
            AggState::MinMax(cur) => {
                let better = match cur {
                    None => true,
                    Some(c) => {
                        let o = v.cmp_to(*c);
                        if agg == Aggregate::Min {
                            o.is_lt()
                        } else {
                            o.is_gt()
                        }
                    }
                };
                if better {
                    *cur = Some(v);
                }
            }
            AggState::SumInt(s) => {
                if let ValueRef::Int(i) | ValueRef::Tstamp(i) = v {
                    *s = s.wrapping_add(i);
                } else if let ValueRef::Bool(b) = v {
                    *s += b as i64;
                }
            }
            AggState::SumReal(s) => *s += v.as_f64().unwrap_or(0.0),
            AggState::Avg(s, n) => {
                if let Some(x) = v.as_f64() {
                    *s += x;
                    *n += 1;
                }
            }
        }
    }

    fn finish(self) -> Value {
        match self {
            AggState::Count(n) | AggState::SumInt(n) => Value::Int(n),
            AggState::SumReal(s) => Value::Real(s),
            AggState::Avg(_, 0) => Value::Null,
            AggState::Avg(s, n) => Value::Real(s / n as f64),
            AggState::MinMax(v) => v.map(|v| v.to_value()).unwrap_or(Value::Null),
        }
    }
}

/// Execute `sel` over `rows` (already windowed, oldest first).
pub fn run_select<'a, R: Row<'a>>(
    sel: &Select,
    cols: &Columns,
    src: &str,
    rows: impl Iterator<Item = R>,
) -> Result<ResultSet> {
    let filter = match &sel.filter {
        Some(e) => Some(bind_filter(e, cols, &sel.table, src)?),
        None => None,
    };
    let has_agg = sel.items.iter().any(|i| matches!(i, SelectItem::Agg(..)));
    let mut rs = if has_agg || !sel.group_by.is_empty() {
        aggregate(sel, cols, filter.as_ref(), rows)?
    } else {
        project(sel, cols, filter.as_ref(), rows)?
    };
    if let Some(n) = sel.limit {
        rs.rows.truncate(n as usize);
    }
    Ok(rs)
}

fn project<'a, R: Row<'a>>(sel: &Select, cols: &Columns, filter: Option<&Predicate>, rows: impl Iterator<Item = R>) -> Result<ResultSet> {
    let wanted: Vec<usize> = if sel.items.is_empty() {
        (0..cols.names.len()).collect()
    } else {
        sel.items
            .iter()
            .map(|i| match i {
                SelectItem::Column(c) => cols.require(c, &sel.table),
                SelectItem::Agg(..) => unreachable!("aggregates go through aggregate()"),
            })
            .collect::<Result<_>>()?
    };
    // Order-by columns that are not selected ride along at the end and are cut after sorting.
    let mut fetch = wanted.clone();
    let mut sort_keys = Vec::new();
    for k in &sel.order_by {
        let SelectItem::Column(c) = &k.item else {
            return Err(HwdbError::new(format!("cannot order by {} in a query without aggregates", k.item.label())));
        };
        let col = cols.require(c, &sel.table)?;
        let at = match fetch.iter().position(|&f| f == col) {
            Some(p) => p,
            None => {
                fetch.push(col);
                fetch.len() - 1
            }
        };
        sort_keys.push((at, k.descending));
    }
    // Without ordering, a limit can stop the scan early.
    let early_limit = if sort_keys.is_empty() { sel.limit.map(|n| n as usize) } else { None };
    let mut out = Vec::new();
    for row in rows {
        if let Some(f) = filter {
            if !f.eval(&row) {
                continue;
            }
        }
        out.push(fetch.iter().map(|&c| row.get(c).to_value()).collect::<Vec<_>>());
        if early_limit.is_some_and(|n| out.len() >= n) {
            break;
        }
    }
    sort_rows(&mut out, &sort_keys);
    if fetch.len() > wanted.len() {
        for r in &mut out {
            r.truncate(wanted.len());
        }
    }
    Ok(ResultSet {
        message: "Success".into(),
        columns: wanted.iter().map(|&c| (cols.types[c], cols.names[c].to_string())).collect(),
        rows: out,
    })
}

fn sort_rows(rows: &mut [Vec<Value>], keys: &[(usize, bool)]) {
    if keys.is_empty() {
        return;
    }
    rows.sort_by(|a, b| {
        for &(k, desc) in keys {
            let o = a[k].as_ref().cmp_to(b[k].as_ref());
            if o.is_ne() {
                return if desc { o.reverse() } else { o };
            }
        }
        std::cmp::Ordering::Equal
    });
}

fn aggregate<'a, R: Row<'a>>(sel: &Select, cols: &Columns, filter: Option<&Predicate>, rows: impl Iterator<Item = R>) -> Result<ResultSet> {
    if sel.items.is_empty() {
        return Err(HwdbError::new("select * cannot be combined with group by"));
    }
    let group_cols: Vec<usize> = sel.group_by.iter().map(|g| cols.require(g, &sel.table)).collect::<Result<_>>()?;
    let mut out_cols = Vec::new();
    let mut header = Vec::new();
    let mut aggs: Vec<(Aggregate, Option<usize>)> = Vec::new();
    for item in &sel.items {
        match item {
            SelectItem::Column(c) => {
                let col = cols.require(c, &sel.table)?;
                let k = group_cols.iter().position(|&g| g == col).ok_or_else(|| {
                    HwdbError::new(format!("column '{c}' must appear in group by or inside an aggregate"))
                })?;
                out_cols.push(OutCol::Key(k));
                header.push((cols.types[col], cols.names[col].to_string()));
            }
            SelectItem::Agg(a, c) => {
                let col = match c {
                    Some(c) => Some(cols.require(c, &sel.table)?),
                    None => None,
                };
                let ty = col.map(|c| cols.types[c]);
                if matches!(a, Aggregate::Sum | Aggregate::Avg) && !ty.is_some_and(|t| t.is_numeric() || t == ColType::Boolean) {
                    return Err(HwdbError::new(format!("{} needs a numeric column", item.label())));
                }
                out_cols.push(OutCol::Agg);
                header.push((agg_type(*a, ty), item.label()));
                aggs.push((*a, col));
            }
        }
    }
    let initial: Vec<AggState> = aggs.iter().map(|(a, c)| new_state(*a, c.map(|c| cols.types[c]))).collect();

    // Groups in first-seen order; the map points into `groups`.
    let mut index: FastMap<Box<[KeyPart<'a>]>, usize> = FastMap::default();
    let mut index1: FastMap<KeyPart<'a>, usize> = FastMap::default();
    let mut groups: Vec<(Vec<ValueRef<'a>>, Vec<AggState<'a>>)> = Vec::new();
    if group_cols.is_empty() {
        groups.push((Vec::new(), initial.clone()));
    }
    let mut key: Vec<KeyPart<'a>> = Vec::with_capacity(group_cols.len());
    for row in rows {
        if let Some(f) = filter {
            if !f.eval(&row) {
                continue;
            }
        }
        let g = if group_cols.is_empty() {
            0
        } else if group_cols.len() == 1 {
            // The common case gets a map keyed by the value itself: no slice compare.
            let k = KeyPart::of(row.get(group_cols[0]));
            match index1.get(&k) {
                Some(&g) => g,
                None => {
                    groups.push((vec![row.get(group_cols[0])], initial.clone()));
                    index1.insert(k, groups.len() - 1);
                    groups.len() - 1
                }
            }
        } else {
            key.clear();
            key.extend(group_cols.iter().map(|&c| KeyPart::of(row.get(c))));
            match index.get(&key[..]) {
                Some(&g) => g,
                None => {
                    groups.push((group_cols.iter().map(|&c| row.get(c)).collect(), initial.clone()));
                    index.insert(key.clone().into_boxed_slice(), groups.len() - 1);
                    groups.len() - 1
                }
            }
        };
        let states = &mut groups[g].1;
        for (s, (a, c)) in states.iter_mut().zip(aggs.iter()) {
            let v = match c {
                Some(c) => row.get(*c),
                None => ValueRef::Null,
            };
            s.feed(*a, v);
        }
    }
    let mut out: Vec<Vec<Value>> = groups
        .into_iter()
        .map(|(keyvals, states)| {
            let mut agg_i = 0;
            out_cols
                .iter()
                .map(|oc| match oc {
                    OutCol::Key(k) => keyvals[*k].to_value(),
                    OutCol::Agg => {
                        agg_i += 1;
                        states[agg_i - 1].finish()
                    }
                })
                .collect()
        })
        .collect();
    let labels: Vec<String> = sel.items.iter().map(|i| i.label()).collect();
    let mut sort_keys = Vec::new();
    for k in &sel.order_by {
        let label = k.item.label();
        let at = labels.iter().position(|l| l.eq_ignore_ascii_case(&label)).ok_or_else(|| {
            HwdbError::new(format!("order by {label}: it must be one of the selected columns"))
        })?;
        sort_keys.push((at, k.descending));
    }
    sort_rows(&mut out, &sort_keys);
    Ok(ResultSet { message: "Success".into(), columns: header, rows: out })
}
