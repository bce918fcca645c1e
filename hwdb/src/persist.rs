//! Persistent tables on disk: a write-through SQLite copy of every persistent table,
//! plus the catalog (table definitions) and saved queries, so a restarted daemon
//! comes back with the same tables, rows and queries. Reads are served from memory;
//! SQLite is only written to, and read once at start.

use std::path::Path;

use rusqlite::types::{ToSqlOutput, Value as SqlValue};
use rusqlite::{params, Connection};

use crate::value::{ColType, Value};

pub struct PersistStore {
    conn: Connection,
    in_txn: bool,
}

fn sql_err(e: rusqlite::Error) -> String {
    format!("persistent store: {e}")
}

/// SQLite table holding the rows of hwdb table `name` (prefixed so names never clash
/// with our own bookkeeping tables).
fn row_table(name: &str) -> String {
    format!("\"rows_{}\"", name.to_ascii_lowercase())
}

fn to_sql(v: &Value) -> ToSqlOutput<'_> {
    match v {
        Value::Null => ToSqlOutput::Owned(SqlValue::Null),
        Value::Bool(b) => ToSqlOutput::Owned(SqlValue::Integer(*b as i64)),
        Value::Int(i) | Value::Tstamp(i) => ToSqlOutput::Owned(SqlValue::Integer(*i)),
        Value::Real(r) => ToSqlOutput::Owned(SqlValue::Real(*r)),
        Value::Str(s) => ToSqlOutput::Borrowed(rusqlite::types::ValueRef::Text(s.as_bytes())),
    }
}

fn from_sql(v: SqlValue, ty: ColType) -> Value {
    match (v, ty) {
        (SqlValue::Null, _) => Value::Null,
        (SqlValue::Integer(i), ColType::Boolean) => Value::Bool(i != 0),
        (SqlValue::Integer(i), ColType::Tstamp) => Value::Tstamp(i),
        (SqlValue::Integer(i), ColType::Real) => Value::Real(i as f64),
        (SqlValue::Integer(i), _) if ty.is_text() => Value::Str(i.to_string()),
        (SqlValue::Integer(i), _) => Value::Int(i),
        (SqlValue::Real(r), _) => Value::Real(r),
        (SqlValue::Text(s), _) => Value::Str(s),
        (SqlValue::Blob(b), _) => Value::Str(String::from_utf8_lossy(&b).into_owned()),
    }
}

impl PersistStore {
    pub fn open(dir: &Path) -> Result<PersistStore, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create state dir {}: {e}", dir.display()))?;
        let conn = Connection::open(dir.join("hwdb.sqlite")).map_err(sql_err)?;
        PersistStore::init(conn)
    }

    /// An in-memory store (tests).
    pub fn in_memory() -> Result<PersistStore, String> {
        PersistStore::init(Connection::open_in_memory().map_err(sql_err)?)
    }

    fn init(conn: Connection) -> Result<PersistStore, String> {
        // WAL + NORMAL: a crash may lose the last transaction but never corrupts the file.
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
             CREATE TABLE IF NOT EXISTS hwdb_catalog (name TEXT PRIMARY KEY, ddl TEXT NOT NULL, seq INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS hwdb_queries (name TEXT PRIMARY KEY, sql TEXT NOT NULL);",
        )
        .map_err(sql_err)?;
        Ok(PersistStore { conn, in_txn: false })
    }

    /// Group the writes of one request into one transaction (commit with `commit`).
    fn begin(&mut self) -> Result<(), String> {
        if !self.in_txn {
            self.conn.execute_batch("BEGIN").map_err(sql_err)?;
            self.in_txn = true;
        }
        Ok(())
    }

    pub fn commit(&mut self) -> Result<(), String> {
        if self.in_txn {
            self.in_txn = false;
            self.conn.execute_batch("COMMIT").map_err(sql_err)?;
        }
        Ok(())
    }

    /// Table definitions in creation order: (name, `create ...` statement).
    pub fn catalog(&self) -> Result<Vec<(String, String)>, String> {
        let mut st = self.conn.prepare("SELECT name, ddl FROM hwdb_catalog ORDER BY seq").map_err(sql_err)?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(sql_err)?;
        rows.collect::<Result<_, _>>().map_err(sql_err)
    }

    pub fn saved_queries(&self) -> Result<Vec<(String, String)>, String> {
        let mut st = self.conn.prepare("SELECT name, sql FROM hwdb_queries").map_err(sql_err)?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(sql_err)?;
        rows.collect::<Result<_, _>>().map_err(sql_err)
    }

    /// Record a table definition; a persistent table also gets its SQLite row table.
    pub fn create_table(&mut self, name: &str, ddl: &str, persistent_cols: Option<&[ColType]>) -> Result<(), String> {
        self.begin()?;
        self.conn
            .execute(
                "INSERT OR IGNORE INTO hwdb_catalog (name, ddl, seq) VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM hwdb_catalog))",
                params![name.to_ascii_lowercase(), ddl],
            )
            .map_err(sql_err)?;
        if let Some(types) = persistent_cols {
            let cols: Vec<String> = (0..types.len()).map(|i| format!("c{i}")).collect();
            let sql = format!(
                "CREATE TABLE IF NOT EXISTS {} (ts INTEGER NOT NULL, seq INTEGER NOT NULL, {}, PRIMARY KEY (c0))",
                row_table(name),
                cols.join(", ")
            );
            self.conn.execute(&sql, []).map_err(sql_err)?;
        }
        Ok(())
    }

    pub fn save_query(&mut self, name: &str, sql: &str) -> Result<(), String> {
        self.begin()?;
        self.conn
            .execute("INSERT OR REPLACE INTO hwdb_queries (name, sql) VALUES (?1, ?2)", params![name.to_ascii_lowercase(), sql])
            .map_err(sql_err)?;
        Ok(())
    }

    pub fn delete_query(&mut self, name: &str) -> Result<(), String> {
        self.begin()?;
        self.conn.execute("DELETE FROM hwdb_queries WHERE name = ?1", params![name.to_ascii_lowercase()]).map_err(sql_err)?;
        Ok(())
    }

    /// Insert or replace the row whose key is `values[0]`.
    pub fn upsert(&mut self, table: &str, ts: i64, seq: u64, values: &[Value]) -> Result<(), String> {
        self.begin()?;
        let marks: Vec<String> = (0..values.len() + 2).map(|i| format!("?{}", i + 1)).collect();
        let sql = format!("INSERT OR REPLACE INTO {} VALUES ({})", row_table(table), marks.join(", "));
        let mut st = self.conn.prepare_cached(&sql).map_err(sql_err)?;
        let mut args: Vec<ToSqlOutput<'_>> = vec![ToSqlOutput::Owned(SqlValue::Integer(ts)), ToSqlOutput::Owned(SqlValue::Integer(seq as i64))];
        args.extend(values.iter().map(to_sql));
        st.execute(rusqlite::params_from_iter(args.iter())).map_err(sql_err)?;
        Ok(())
    }

    pub fn delete_row(&mut self, table: &str, key: &Value) -> Result<(), String> {
        self.begin()?;
        let sql = format!("DELETE FROM {} WHERE c0 = ?1", row_table(table));
        let mut st = self.conn.prepare_cached(&sql).map_err(sql_err)?;
        st.execute([to_sql(key)]).map_err(sql_err)?;
        Ok(())
    }

    /// All rows of a persistent table, oldest first: (ts, seq, values).
    pub fn load_rows(&self, table: &str, types: &[ColType]) -> Result<Vec<(i64, u64, Vec<Value>)>, String> {
        let sql = format!("SELECT * FROM {} ORDER BY ts, seq", row_table(table));
        let mut st = self.conn.prepare(&sql).map_err(sql_err)?;
        let mut rows = st.query([]).map_err(sql_err)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(sql_err)? {
            let ts: i64 = r.get(0).map_err(sql_err)?;
            let seq: i64 = r.get(1).map_err(sql_err)?;
            let mut vals = Vec::with_capacity(types.len());
            for (i, ty) in types.iter().enumerate() {
                let v: SqlValue = r.get(i + 2).map_err(sql_err)?;
                vals.push(from_sql(v, *ty));
            }
            out.push((ts, seq as u64, vals));
        }
        Ok(out)
    }
}
