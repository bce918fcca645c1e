//! The statements of the hwdb language, as produced by the parser.

use crate::value::{ColType, Value};

#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    CreateTable(CreateTable),
    Insert(Insert),
    Select(Select),
    Update(Update),
    Delete(Delete),
    ShowTables,
    ShowQueries,
    ShowSubscriptions,
    SaveQuery { name: String, select: Select, text: String },
    ExecQuery(String),
    DeleteQuery(String),
    Subscribe(Subscription),
    Unsubscribe(Subscription),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    pub name: String,
    pub ty: ColType,
    pub primary_key: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    pub name: String,
    pub persistent: bool,
    pub columns: Vec<ColumnDef>,
}

/// A literal as written; it is converted to the column's type when bound to a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `'...'` or `"..."`: the original accepted only these, and converted by column type.
    Quoted(String),
    /// Bare number, kept as text so it can become an integer or a real.
    Number(String),
    Bool(bool),
    Tstamp(i64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Insert {
    pub table: String,
    pub values: Vec<(Literal, usize)>,
    pub upsert: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Aggregate {
    Count,
    Min,
    Max,
    Avg,
    Sum,
}

impl Aggregate {
    pub fn name(self) -> &'static str {
        match self {
            Aggregate::Count => "count",
            Aggregate::Min => "min",
            Aggregate::Max => "max",
            Aggregate::Avg => "avg",
            Aggregate::Sum => "sum",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum SelectItem {
    /// A plain column (may be `timestamp`).
    Column(String),
    /// `count(*)` has `column == None`.
    Agg(Aggregate, Option<String>),
}

impl SelectItem {
    /// The name shown in the result header, e.g. `max(rssi)`.
    pub fn label(&self) -> String {
        match self {
            SelectItem::Column(c) => c.clone(),
            SelectItem::Agg(a, None) => format!("{}(*)", a.name()),
            SelectItem::Agg(a, Some(c)) => format!("{}({})", a.name(), c),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeUnit {
    Millis,
    Seconds,
    Minutes,
    Hours,
}

impl TimeUnit {
    pub fn nanos(self) -> i64 {
        match self {
            TimeUnit::Millis => 1_000_000,
            TimeUnit::Seconds => 1_000_000_000,
            TimeUnit::Minutes => 60_000_000_000,
            TimeUnit::Hours => 3_600_000_000_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Window {
    /// Tuples no older than `amount` units before now.
    Range { amount: i64, unit: TimeUnit },
    /// The newest `n` tuples.
    Rows(u64),
    /// `[last]`, the newest tuple (`[rows 1]`).
    Last,
    /// `[now]`: tuples stamped within the current second (see README).
    Now,
    /// Strictly newer than the timestamp.
    Since(i64),
    /// Between two timestamps; the flags say whether each bound is included.
    Interval { from: i64, from_inclusive: bool, to: i64, to_inclusive: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    Contains,
    NotContains,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Cmp { column: String, op: CmpOp, value: Literal, pos: usize },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderKey {
    pub item: SelectItem,
    pub descending: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    /// Empty means `*`.
    pub items: Vec<SelectItem>,
    pub table: String,
    pub window: Option<Window>,
    pub filter: Option<Expr>,
    pub group_by: Vec<String>,
    pub order_by: Vec<OrderKey>,
    pub limit: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AssignOp {
    Set,
    Add,
    Sub,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    pub column: String,
    pub op: AssignOp,
    pub value: Literal,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub table: String,
    pub assignments: Vec<Assignment>,
    pub filter: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Delete {
    pub table: String,
    pub filter: Option<Expr>,
}

/// A callback target: the subscriber's SRPC server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Subscription {
    pub query: String,
    pub host: String,
    pub port: u16,
    pub service: String,
}

/// Convert a literal for a column of type `ty`; Err holds a short reason.
pub fn bind_literal(lit: &Literal, ty: ColType) -> Result<Value, String> {
    let text = match lit {
        Literal::Quoted(s) | Literal::Number(s) => s.as_str(),
        Literal::Bool(b) => {
            return match ty {
                ColType::Boolean => Ok(Value::Bool(*b)),
                _ if ty.is_text() => Ok(Value::Str(b.to_string())),
                _ => Err(format!("boolean given for {} column", ty.wire_name())),
            }
        }
        Literal::Tstamp(t) => {
            return match ty {
                ColType::Tstamp | ColType::Integer => Ok(Value::Tstamp(*t)),
                _ => Err(format!("timestamp given for {} column", ty.wire_name())),
            }
        }
    };
    let bad = || format!("'{}' is not a valid {}", truncate(text, 40), ty.wire_name());
    match ty {
        ColType::Boolean => match text.to_ascii_lowercase().as_str() {
            "true" | "1" | "t" | "yes" => Ok(Value::Bool(true)),
            "false" | "0" | "f" | "no" => Ok(Value::Bool(false)),
            _ => Err(bad()),
        },
        ColType::Integer | ColType::Tinyint | ColType::Smallint => {
            let v: i64 = text.trim().parse().map_err(|_| bad())?;
            let (lo, hi) = match ty {
                ColType::Tinyint => (i8::MIN as i64, i8::MAX as i64),
                ColType::Smallint => (i16::MIN as i64, i16::MAX as i64),
                _ => (i64::MIN, i64::MAX),
            };
            if v < lo || v > hi {
                return Err(format!("{v} is out of range for {}", ty.wire_name()));
            }
            Ok(Value::Int(v))
        }
        ColType::Real => {
            let v: f64 = text.trim().parse().map_err(|_| bad())?;
            Ok(Value::Real(v))
        }
        ColType::Tstamp => {
            if let Some(t) = crate::value::parse_tstamp(text) {
                Ok(Value::Tstamp(t))
            } else if let Some(t) = crate::value::parse_datetime(text) {
                Ok(Value::Tstamp(t))
            } else {
                text.trim().parse().map(Value::Tstamp).map_err(|_| bad())
            }
        }
        ColType::Character => {
            if text.chars().count() > 1 {
                Err(format!("'{}' is longer than 1 character", truncate(text, 40)))
            } else {
                Ok(Value::Str(text.to_string()))
            }
        }
        ColType::Varchar(n) | ColType::Blob(n) => {
            if text.len() > n as usize {
                Err(format!("value of {} bytes is longer than {}({n})", text.len(), ty.wire_name()))
            } else {
                Ok(Value::Str(text.to_string()))
            }
        }
    }
}

pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let t: String = s.chars().take(max).collect();
        format!("{t}...")
    }
}
