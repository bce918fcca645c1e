//! The database: the table catalog, stream tables in the ring, persistent tables in
//! memory with a SQLite copy, saved queries and subscriptions. `handle_request` turns
//! one `SQL:`/`BULK:` request into one `<|>` response.

use std::collections::HashMap;
use std::sync::Arc;

use crate::ast::*;
use crate::clock::Clock;
use crate::error::{HwdbError, Result};
use crate::exec::{bind_filter, run_select, Columns, Predicate};
use crate::fastinsert::{bind_fast, scan_insert, FastLit};
use crate::parser::parse;
use crate::persist::PersistStore;
use crate::ptable::{apply_assign, key_text, sorted_rows, PRow, PRowRef, PersistentRows};
use crate::result::{error_wire, ResultSet};
use crate::ring::{Ring, TableId};
use crate::value::{ColType, Value, ValueRef};

/// How far back `[now]` reaches: tuples stamped within the last second.
const NOW_WINDOW_NS: i64 = 1_000_000_000;
const MAX_COLUMNS: usize = 256;

pub struct TableSchema {
    pub name: String,
    pub persistent: bool,
    /// Declared columns (without the implicit timestamp).
    pub columns: Vec<(String, ColType)>,
}

enum Storage {
    Stream(TableId),
    Persistent(PersistentRows),
}

struct Table {
    schema: TableSchema,
    storage: Storage,
    /// Set by inserts/updates; drained when subscriptions are notified.
    touched: bool,
}

struct SavedQuery {
    name: String,
    text: String,
    select: Select,
}

/// A result to deliver to one subscriber.
#[derive(Debug, Clone)]
pub struct Notification {
    pub subscriber: Subscription,
    pub payload: String,
}

pub struct Database {
    clock: Arc<dyn Clock>,
    ring: Ring,
    tables: Vec<Table>,
    by_name: HashMap<String, usize>,
    store: Option<PersistStore>,
    queries: HashMap<String, SavedQuery>,
    subscriptions: Vec<Subscription>,
    last_ts: i64,
    seq: u64,
}

impl Database {
    /// A database with a ring of `ring_bytes`; with a store, persistent tables, the
    /// catalog and saved queries are reloaded from it.
    pub fn new(clock: Arc<dyn Clock>, ring_bytes: usize, store: Option<PersistStore>) -> Result<Database> {
        let mut db = Database {
            clock,
            ring: Ring::new(ring_bytes),
            tables: Vec::new(),
            by_name: HashMap::new(),
            store: None,
            queries: HashMap::new(),
            subscriptions: Vec::new(),
            last_ts: 0,
            seq: 0,
        };
        if let Some(store) = store {
            db.reload(&store)?;
            db.store = Some(store);
        }
        Ok(db)
    }

    fn reload(&mut self, store: &PersistStore) -> Result<()> {
        for (name, ddl) in store.catalog().map_err(HwdbError::new)? {
            let Statement::CreateTable(ct) = parse(&ddl)? else {
                return Err(HwdbError::new(format!("catalog entry for {name} is not a create statement")));
            };
            self.create_table(&ct, &ddl)?;
            let t = self.by_name[&name.to_ascii_lowercase()];
            let types: Vec<ColType> = self.tables[t].schema.columns.iter().map(|c| c.1).collect();
            if let Storage::Persistent(p) = &mut self.tables[t].storage {
                for (ts, seq, values) in store.load_rows(&name, &types).map_err(HwdbError::new)? {
                    self.last_ts = self.last_ts.max(ts);
                    self.seq = self.seq.max(seq);
                    p.rows.insert(key_text(&values[0]), PRow { ts, seq, values });
                }
            }
        }
        for (name, sql) in store.saved_queries().map_err(HwdbError::new)? {
            if let Statement::Select(select) = parse(&sql)? {
                self.queries.insert(name.clone(), SavedQuery { name, text: sql, select });
            }
        }
        Ok(())
    }

    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ns()
    }

    /// Strictly increasing arrival stamps, so `[since t]` never misses a tuple that
    /// arrived in the same clock tick as `t`.
    fn next_ts(&mut self) -> i64 {
        let ts = self.clock.now_ns().max(self.last_ts + 1);
        self.last_ts = ts;
        ts
    }

    /// Case-insensitive table lookup; a linear scan beats hashing a lowered copy for the
    /// handful of tables a router has.
    fn find_table(&self, name: &str) -> Option<usize> {
        if self.tables.len() <= 32 {
            self.tables.iter().position(|t| t.schema.name.eq_ignore_ascii_case(name))
        } else {
            self.by_name.get(&name.to_ascii_lowercase()).copied()
        }
    }

    /// The insert fast path (see `fastinsert`): binds the statement's values, borrowed from
    /// its text, onto `out`. None means "use the full parser" (which also explains errors).
    fn fast_bind<'a>(&self, sql: &'a str, lits: &mut Vec<FastLit<'a>>, out: &mut Vec<ValueRef<'a>>) -> Option<(usize, bool)> {
        let (name, upsert) = scan_insert(sql, lits)?;
        let t = self.find_table(name)?;
        let schema = &self.tables[t].schema;
        if lits.len() != schema.columns.len() || (upsert && !schema.persistent) {
            return None;
        }
        let start = out.len();
        for (lit, (_, ty)) in lits.iter().zip(&schema.columns) {
            match bind_fast(*lit, *ty) {
                Some(v) => out.push(v),
                None => {
                    out.truncate(start);
                    return None;
                }
            }
        }
        Some((t, upsert))
    }

    /// Store one tuple bound by `fast_bind`.
    fn store_bound(&mut self, t: usize, values: &[ValueRef], upsert: bool) -> Result<()> {
        match self.tables[t].storage {
            Storage::Stream(id) => {
                let ts = self.next_ts();
                self.seq += 1;
                self.ring.append(id, ts, values).map_err(HwdbError::new)?;
                self.tables[t].touched = true;
                Ok(())
            }
            Storage::Persistent(_) => self.apply_insert(t, values.iter().map(|v| v.to_value()).collect(), upsert),
        }
    }

    fn fast_insert(&mut self, sql: &str) -> Option<Result<()>> {
        let mut lits = Vec::with_capacity(16);
        let mut values = Vec::with_capacity(16);
        let (t, upsert) = self.fast_bind(sql, &mut lits, &mut values)?;
        Some(self.store_bound(t, &values, upsert))
    }

    fn table_index(&self, name: &str) -> Result<usize> {
        self.find_table(name)
            .ok_or_else(|| HwdbError::new(format!("no such table: {name}")))
    }

    /// Handle one request in wire framing and return the wire response.
    pub fn handle_request(&mut self, req: &[u8]) -> String {
        let out = match std::str::from_utf8(req) {
            Err(e) => Err(HwdbError::new(format!("request is not valid UTF-8 (byte {})", e.valid_up_to()))),
            Ok(text) => self.handle_text(text),
        };
        if let Some(store) = &mut self.store {
            if let Err(e) = store.commit() {
                return error_wire(&HwdbError::new(e));
            }
        }
        match out {
            Ok(rs) => rs.to_wire(),
            Err(e) => error_wire(&e),
        }
    }

    fn handle_text(&mut self, text: &str) -> Result<ResultSet> {
        if let Some(sql) = text.strip_prefix("SQL:") {
            self.execute_uncommitted(sql.trim())
        } else if let Some(rest) = text.strip_prefix("BULK:") {
            let (count, body) = rest.split_once('\n').unwrap_or((rest, ""));
            let n: usize = count
                .trim()
                .parse()
                .map_err(|_| HwdbError::new(format!("BULK: expected a statement count, found '{}'", truncate(count.trim(), 20))))?;
            self.bulk(n, body)
        } else {
            Err(HwdbError::new("request must start with 'SQL:' or 'BULK:<n>'"))
        }
    }

    /// Up to `n` insert statements, one per line. All are checked before any is applied,
    /// so a bad line leaves the database unchanged.
    fn bulk(&mut self, n: usize, body: &str) -> Result<ResultSet> {
        let lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.len() != n {
            return Err(HwdbError::new(format!("BULK:{n} announced {n} statements but {} were sent", lines.len())));
        }
        // Pass 1: bind every line (values borrowed from the request, in one flat vector).
        // Pass 2: store them. A bad line therefore changes nothing.
        enum Bound {
            Fast { t: usize, upsert: bool, range: std::ops::Range<usize> },
            Slow { t: usize, values: Vec<Value>, upsert: bool },
        }
        let mut flat: Vec<ValueRef> = Vec::with_capacity(n * 8);
        let mut lits = Vec::with_capacity(16);
        let mut bound = Vec::with_capacity(n);
        for (i, line) in lines.iter().enumerate() {
            let start = flat.len();
            if let Some((t, upsert)) = self.fast_bind(line, &mut lits, &mut flat) {
                bound.push(Bound::Fast { t, upsert, range: start..flat.len() });
                continue;
            }
            let stmt = parse(line).map_err(|e| HwdbError::new(format!("line {}: {}", i + 1, e.message)))?;
            let Statement::Insert(ins) = stmt else {
                return Err(HwdbError::new(format!("line {}: only insert statements are allowed in BULK", i + 1)));
            };
            let (t, values, upsert) = self.bind_insert(&ins, line).map_err(|e| HwdbError::new(format!("line {}: {}", i + 1, e.message)))?;
            bound.push(Bound::Slow { t, values, upsert });
        }
        for b in bound {
            match b {
                Bound::Fast { t, upsert, range } => self.store_bound(t, &flat[range], upsert)?,
                Bound::Slow { t, values, upsert } => self.apply_insert(t, values, upsert)?,
            }
        }
        Ok(ResultSet::message(format!("Success: {n} rows")))
    }

    /// Parse and run one statement (persistent changes are committed before it returns).
    pub fn execute(&mut self, sql: &str) -> Result<ResultSet> {
        let out = self.execute_uncommitted(sql);
        if let Some(store) = &mut self.store {
            store.commit().map_err(HwdbError::new)?;
        }
        out
    }

    fn execute_uncommitted(&mut self, sql: &str) -> Result<ResultSet> {
        if sql.as_bytes().first().is_some_and(|c| c.eq_ignore_ascii_case(&b'i')) {
            if let Some(r) = self.fast_insert(sql) {
                return r.map(|_| ResultSet::ok());
            }
        }
        let stmt = parse(sql)?;
        self.run(stmt, sql)
    }

    fn run(&mut self, stmt: Statement, src: &str) -> Result<ResultSet> {
        match stmt {
            Statement::CreateTable(ct) => {
                if self.by_name.contains_key(&ct.name.to_ascii_lowercase()) {
                    return Ok(ResultSet::message(format!("Success: table {} exists", ct.name)));
                }
                let ddl = ddl_of(&ct);
                self.create_table(&ct, &ddl)?;
                if let Some(store) = &mut self.store {
                    let types: Vec<ColType> = ct.columns.iter().map(|c| c.ty).collect();
                    store
                        .create_table(&ct.name, &ddl, if ct.persistent { Some(&types) } else { None })
                        .map_err(HwdbError::new)?;
                }
                Ok(ResultSet::ok())
            }
            Statement::Insert(ins) => {
                let (t, values, upsert) = self.bind_insert(&ins, src)?;
                self.apply_insert(t, values, upsert)?;
                Ok(ResultSet::ok())
            }
            Statement::Select(sel) => self.select(&sel, src),
            Statement::Update(u) => self.update(&u, src),
            Statement::Delete(d) => self.delete(&d, src),
            Statement::ShowTables => Ok(self.show_tables()),
            Statement::ShowQueries => {
                let mut rs = ResultSet::ok();
                rs.columns = vec![(ColType::Varchar(64), "name".into()), (ColType::Varchar(1024), "query".into())];
                let mut qs: Vec<&SavedQuery> = self.queries.values().collect();
                qs.sort_by(|a, b| a.name.cmp(&b.name));
                rs.rows = qs.iter().map(|q| vec![Value::Str(q.name.clone()), Value::Str(q.text.clone())]).collect();
                Ok(rs)
            }
            Statement::ShowSubscriptions => {
                let mut rs = ResultSet::ok();
                rs.columns = vec![
                    (ColType::Varchar(64), "query".into()),
                    (ColType::Varchar(64), "host".into()),
                    (ColType::Integer, "port".into()),
                    (ColType::Varchar(64), "service".into()),
                ];
                rs.rows = self
                    .subscriptions
                    .iter()
                    .map(|s| vec![Value::Str(s.query.clone()), Value::Str(s.host.clone()), Value::Int(s.port as i64), Value::Str(s.service.clone())])
                    .collect();
                Ok(rs)
            }
            Statement::SaveQuery { name, select, text } => {
                let t = self.table_index(&select.table)?;
                // Check it now so a broken query is refused at save time, not at exec time.
                self.select_on(t, &select, &text)?;
                if let Some(store) = &mut self.store {
                    store.save_query(&name, &text).map_err(HwdbError::new)?;
                }
                self.queries.insert(name.to_ascii_lowercase(), SavedQuery { name, text, select });
                Ok(ResultSet::ok())
            }
            Statement::ExecQuery(name) => {
                let q = self.query(&name)?;
                let (sel, text) = (q.select.clone(), q.text.clone());
                self.select(&sel, &text)
            }
            Statement::DeleteQuery(name) => {
                let key = name.to_ascii_lowercase();
                if self.queries.remove(&key).is_none() {
                    return Err(HwdbError::new(format!("no such query: {name}")));
                }
                self.subscriptions.retain(|s| !s.query.eq_ignore_ascii_case(&name));
                if let Some(store) = &mut self.store {
                    store.delete_query(&name).map_err(HwdbError::new)?;
                }
                Ok(ResultSet::ok())
            }
            Statement::Subscribe(sub) => {
                self.query(&sub.query)?;
                if !self.subscriptions.contains(&sub) {
                    self.subscriptions.push(sub);
                }
                Ok(ResultSet::ok())
            }
            Statement::Unsubscribe(sub) => {
                let before = self.subscriptions.len();
                self.subscriptions.retain(|s| s != &sub);
                if self.subscriptions.len() == before {
                    return Err(HwdbError::new(format!("no such subscription to {}", sub.query)));
                }
                Ok(ResultSet::ok())
            }
        }
    }

    fn query(&self, name: &str) -> Result<&SavedQuery> {
        self.queries.get(&name.to_ascii_lowercase()).ok_or_else(|| HwdbError::new(format!("no such query: {name}")))
    }

    fn create_table(&mut self, ct: &CreateTable, _ddl: &str) -> Result<()> {
        if ct.columns.len() > MAX_COLUMNS {
            return Err(HwdbError::new(format!("a table may have at most {MAX_COLUMNS} columns")));
        }
        for (i, c) in ct.columns.iter().enumerate() {
            if ct.columns[..i].iter().any(|o| o.name.eq_ignore_ascii_case(&c.name)) {
                return Err(HwdbError::new(format!("column '{}' is declared twice", c.name)));
            }
            if c.primary_key && (i != 0 || !ct.persistent) {
                return Err(HwdbError::new(if ct.persistent {
                    "the primary key must be the first column".to_string()
                } else {
                    "only persistent tables have a primary key (create persistenttable)".to_string()
                }));
            }
        }
        if self.tables.len() >= u16::MAX as usize - 1 {
            return Err(HwdbError::new("too many tables"));
        }
        let storage = if ct.persistent { Storage::Persistent(PersistentRows::default()) } else { Storage::Stream(self.ring.add_table()) };
        let schema = TableSchema {
            name: ct.name.clone(),
            persistent: ct.persistent,
            columns: ct.columns.iter().map(|c| (c.name.clone(), c.ty)).collect(),
        };
        self.by_name.insert(ct.name.to_ascii_lowercase(), self.tables.len());
        self.tables.push(Table { schema, storage, touched: false });
        Ok(())
    }

    fn bind_insert(&self, ins: &Insert, src: &str) -> Result<(usize, Vec<Value>, bool)> {
        let t = self.table_index(&ins.table)?;
        let schema = &self.tables[t].schema;
        if ins.values.len() != schema.columns.len() {
            return Err(HwdbError::new(format!(
                "table {} has {} columns but {} values were given",
                schema.name,
                schema.columns.len(),
                ins.values.len()
            )));
        }
        if ins.upsert && !schema.persistent {
            return Err(HwdbError::new(format!("on duplicate key update needs a persistent table; {} is a stream table", schema.name)));
        }
        let values = ins
            .values
            .iter()
            .zip(&schema.columns)
            .map(|((lit, pos), (cname, ty))| {
                bind_literal(lit, *ty).map_err(|e| HwdbError::at(src, *pos, &format!("column {cname}: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((t, values, ins.upsert))
    }

    fn apply_insert(&mut self, t: usize, values: Vec<Value>, upsert: bool) -> Result<()> {
        let ts = self.next_ts();
        self.seq += 1;
        let seq = self.seq;
        let table = &mut self.tables[t];
        match &mut table.storage {
            Storage::Stream(id) => {
                let refs: Vec<ValueRef> = values.iter().map(|v| v.as_ref()).collect();
                self.ring.append(*id, ts, &refs).map_err(HwdbError::new)?
            }
            Storage::Persistent(p) => {
                let key = key_text(&values[0]);
                if !upsert && p.rows.contains_key(&key) {
                    return Err(HwdbError::new(format!(
                        "duplicate key '{}' in table {} (add 'on duplicate key update' to replace it)",
                        truncate(&key, 40),
                        table.schema.name
                    )));
                }
                if let Some(store) = &mut self.store {
                    store.upsert(&table.schema.name, ts, seq, &values).map_err(HwdbError::new)?;
                }
                p.rows.insert(key, PRow { ts, seq, values });
            }
        }
        table.touched = true;
        Ok(())
    }

    fn select(&self, sel: &Select, src: &str) -> Result<ResultSet> {
        let t = self.table_index(&sel.table)?;
        self.select_on(t, sel, src)
    }

    fn select_on(&self, t: usize, sel: &Select, src: &str) -> Result<ResultSet> {
        let table = &self.tables[t];
        let cols = Columns::new(&table.schema.columns);
        let now = self.now();
        let types: Vec<ColType> = table.schema.columns.iter().map(|c| c.1).collect();
        match &table.storage {
            Storage::Stream(id) => {
                let len = self.ring.len(*id);
                let (from, to) = window_bounds(sel.window, now, len, |ts, strict| self.ring.lower_bound(*id, ts, strict));
                run_select(sel, &cols, src, self.ring.rows(*id, &types, from, to))
            }
            Storage::Persistent(p) => {
                let sorted = sorted_rows(p);
                let (from, to) = window_bounds(sel.window, now, sorted.len(), |ts, strict| {
                    sorted.partition_point(|r| if strict { r.ts <= ts } else { r.ts < ts })
                });
                run_select(sel, &cols, src, sorted[from..to].iter().map(|r| PRowRef(r)))
            }
        }
    }

    fn persistent_target(&self, name: &str, verb: &str) -> Result<usize> {
        let t = self.table_index(name)?;
        if !self.tables[t].schema.persistent {
            return Err(HwdbError::new(format!("{verb} works on persistent tables only; {name} is a stream table")));
        }
        Ok(t)
    }

    fn matching_keys(&self, t: usize, filter: Option<&Expr>, src: &str) -> Result<Vec<String>> {
        let table = &self.tables[t];
        let cols = Columns::new(&table.schema.columns);
        let pred: Option<Predicate> = match filter {
            Some(e) => Some(bind_filter(e, &cols, &table.schema.name, src)?),
            None => None,
        };
        let Storage::Persistent(p) = &table.storage else { unreachable!() };
        Ok(p.rows
            .iter()
            .filter(|(_, r)| pred.as_ref().is_none_or(|f| f.eval(&PRowRef(r))))
            .map(|(k, _)| k.clone())
            .collect())
    }

    fn update(&mut self, u: &Update, src: &str) -> Result<ResultSet> {
        let t = self.persistent_target(&u.table, "update")?;
        let schema = &self.tables[t].schema;
        let mut plan = Vec::new();
        for a in &u.assignments {
            let idx = schema
                .columns
                .iter()
                .position(|c| c.0.eq_ignore_ascii_case(&a.column))
                .ok_or_else(|| HwdbError::new(format!("unknown column '{}' in table {}", a.column, schema.name)))?;
            if idx == 0 {
                return Err(HwdbError::new(format!("cannot update the primary key '{}'", a.column)));
            }
            let ty = schema.columns[idx].1;
            if a.op != AssignOp::Set && !ty.is_numeric() {
                return Err(HwdbError::new(format!("+= and -= need a numeric column; '{}' is {}", a.column, ty.wire_name())));
            }
            let v = bind_literal(&a.value, ty).map_err(|e| HwdbError::new(format!("column {}: {e}", a.column)))?;
            plan.push((idx, a.op, v));
        }
        let keys = self.matching_keys(t, u.filter.as_ref(), src)?;
        for key in &keys {
            let ts = self.next_ts();
            self.seq += 1;
            let seq = self.seq;
            let table = &mut self.tables[t];
            let Storage::Persistent(p) = &mut table.storage else { unreachable!() };
            let row = p.rows.get_mut(key).expect("key from matching_keys");
            for (idx, op, v) in &plan {
                row.values[*idx] = apply_assign(&row.values[*idx], *op, v);
            }
            row.ts = ts;
            row.seq = seq;
            if let Some(store) = &mut self.store {
                store.upsert(&table.schema.name, ts, seq, &row.values).map_err(HwdbError::new)?;
            }
            table.touched = true;
        }
        Ok(ResultSet::message(format!("Success: {} rows updated", keys.len())))
    }

    fn delete(&mut self, d: &Delete, src: &str) -> Result<ResultSet> {
        let t = self.persistent_target(&d.table, "delete")?;
        let keys = self.matching_keys(t, d.filter.as_ref(), src)?;
        let table = &mut self.tables[t];
        let Storage::Persistent(p) = &mut table.storage else { unreachable!() };
        for key in &keys {
            if let Some(row) = p.rows.remove(key) {
                if let Some(store) = &mut self.store {
                    store.delete_row(&table.schema.name, &row.values[0]).map_err(HwdbError::new)?;
                }
            }
        }
        table.touched |= !keys.is_empty();
        Ok(ResultSet::message(format!("Success: {} rows deleted", keys.len())))
    }

    fn show_tables(&self) -> ResultSet {
        let mut rs = ResultSet::ok();
        rs.columns = vec![
            (ColType::Varchar(64), "name".into()),
            (ColType::Varchar(16), "kind".into()),
            (ColType::Integer, "rows".into()),
        ];
        for t in &self.tables {
            let (kind, rows) = match &t.storage {
                Storage::Stream(id) => ("stream", self.ring.len(*id)),
                Storage::Persistent(p) => ("persistent", p.rows.len()),
            };
            rs.rows.push(vec![Value::Str(t.schema.name.clone()), Value::Str(kind.into()), Value::Int(rows as i64)]);
        }
        rs
    }

    pub fn subscriptions(&self) -> &[Subscription] {
        &self.subscriptions
    }

    /// Forget a subscriber that stopped answering.
    pub fn drop_subscriber(&mut self, sub: &Subscription) {
        self.subscriptions.retain(|s| s != sub);
    }

    /// After a request: run every subscribed query whose table changed, one result per
    /// subscriber. Clears the changed flags.
    pub fn take_notifications(&mut self) -> Vec<Notification> {
        let touched: Vec<usize> = (0..self.tables.len()).filter(|&t| self.tables[t].touched).collect();
        if touched.is_empty() {
            return Vec::new();
        }
        for &t in &touched {
            self.tables[t].touched = false;
        }
        let mut out = Vec::new();
        if self.subscriptions.is_empty() {
            return out;
        }
        let mut by_query: HashMap<String, Vec<Subscription>> = HashMap::new();
        for s in &self.subscriptions {
            by_query.entry(s.query.to_ascii_lowercase()).or_default().push(s.clone());
        }
        for (qname, subs) in by_query {
            let Some(q) = self.queries.get(&qname) else { continue };
            let Ok(t) = self.table_index(&q.select.table) else { continue };
            if !touched.contains(&t) {
                continue;
            }
            let payload = match self.select_on(t, &q.select, &q.text) {
                Ok(mut rs) => {
                    rs.message = q.name.clone();
                    rs.to_wire()
                }
                Err(e) => error_wire(&e),
            };
            for s in subs {
                out.push(Notification { subscriber: s, payload: payload.clone() });
            }
        }
        out
    }
}

/// The slice `from..to` of a table's tuples (oldest first) selected by a window.
/// `lower_bound(ts, strict)` gives the first index with timestamp >= ts (> ts if strict).
fn window_bounds(window: Option<Window>, now: i64, len: usize, lower_bound: impl Fn(i64, bool) -> usize) -> (usize, usize) {
    match window {
        None => (0, len),
        Some(Window::Range { amount, unit }) => (lower_bound(now.saturating_sub(amount * unit.nanos()), false), len),
        Some(Window::Rows(n)) => (len - (n.min(len as u64) as usize), len),
        Some(Window::Last) => (len.saturating_sub(1), len),
        Some(Window::Now) => (lower_bound(now.saturating_sub(NOW_WINDOW_NS), false), len),
        Some(Window::Since(t)) => (lower_bound(t, true), len),
        Some(Window::Interval { from, from_inclusive, to, to_inclusive }) => {
            let a = lower_bound(from, !from_inclusive);
            let b = lower_bound(to, to_inclusive);
            (a, b.max(a))
        }
    }
}

/// Canonical `create` statement for the catalog.
fn ddl_of(ct: &CreateTable) -> String {
    let cols: Vec<String> = ct
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let pk = if ct.persistent && i == 0 { " primary key" } else { "" };
            format!("{} {}{pk}", c.name, c.ty.ddl())
        })
        .collect();
    format!("create {} {} ({})", if ct.persistent { "persistenttable" } else { "table" }, ct.name, cols.join(", "))
}
