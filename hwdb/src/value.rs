//! Column types and values, and how they are written on the wire.

use std::fmt::Write as _;

/// Declared type of a column (the original hwdb's type names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    Boolean,
    Integer,
    Real,
    Character,
    Varchar(u32),
    Blob(u32),
    Tinyint,
    Smallint,
    Tstamp,
}

impl ColType {
    /// The name used in the `type:name` column descriptors of a response.
    pub fn wire_name(self) -> &'static str {
        match self {
            ColType::Boolean => "boolean",
            ColType::Integer => "integer",
            ColType::Real => "real",
            ColType::Character => "character",
            ColType::Varchar(_) => "varchar",
            ColType::Blob(_) => "blob",
            ColType::Tinyint => "tinyint",
            ColType::Smallint => "smallint",
            ColType::Tstamp => "tstamp",
        }
    }

    /// The declaration as written in `create table` (used to persist the catalog).
    pub fn ddl(self) -> String {
        match self {
            ColType::Varchar(n) => format!("varchar({n})"),
            ColType::Blob(n) => format!("blob({n})"),
            other => other.wire_name().to_string(),
        }
    }

    pub fn is_text(self) -> bool {
        matches!(self, ColType::Character | ColType::Varchar(_) | ColType::Blob(_))
    }

    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            ColType::Integer | ColType::Tinyint | ColType::Smallint | ColType::Real | ColType::Tstamp
        )
    }
}

/// An owned value, as held by persistent tables and results.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Real(f64),
    Str(String),
    Tstamp(i64),
}

/// A value borrowed from storage; used while scanning so nothing is allocated per row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Real(f64),
    Str(&'a str),
    Tstamp(i64),
}

impl Value {
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Bool(b) => ValueRef::Bool(*b),
            Value::Int(i) => ValueRef::Int(*i),
            Value::Real(r) => ValueRef::Real(*r),
            Value::Str(s) => ValueRef::Str(s),
            Value::Tstamp(t) => ValueRef::Tstamp(*t),
        }
    }
}

impl<'a> ValueRef<'a> {
    pub fn to_value(self) -> Value {
        match self {
            ValueRef::Null => Value::Null,
            ValueRef::Bool(b) => Value::Bool(b),
            ValueRef::Int(i) => Value::Int(i),
            ValueRef::Real(r) => Value::Real(r),
            ValueRef::Str(s) => Value::Str(s.to_string()),
            ValueRef::Tstamp(t) => Value::Tstamp(t),
        }
    }

    /// Numeric view used by comparisons and aggregates (bools count as 0/1).
    pub fn as_f64(self) -> Option<f64> {
        match self {
            ValueRef::Int(i) | ValueRef::Tstamp(i) => Some(i as f64),
            ValueRef::Real(r) => Some(r),
            ValueRef::Bool(b) => Some(b as i64 as f64),
            _ => None,
        }
    }

    /// Total order between values of one column (NULL sorts first).
    pub fn cmp_to(self, other: ValueRef<'_>) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        match (self, other) {
            (ValueRef::Null, ValueRef::Null) => Equal,
            (ValueRef::Null, _) => Less,
            (_, ValueRef::Null) => Greater,
            (ValueRef::Str(a), ValueRef::Str(b)) => a.cmp(b),
            (ValueRef::Int(a), ValueRef::Int(b))
            | (ValueRef::Tstamp(a), ValueRef::Tstamp(b))
            | (ValueRef::Int(a), ValueRef::Tstamp(b))
            | (ValueRef::Tstamp(a), ValueRef::Int(b)) => a.cmp(&b),
            (ValueRef::Bool(a), ValueRef::Bool(b)) => a.cmp(&b),
            (a, b) => match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Equal),
                _ => Equal,
            },
        }
    }

    /// Append the wire text of this value. Text is escaped so that a value can never
    /// break the `<|>` / newline framing: `\` -> `\\`, newline -> `\n`, CR -> `\r`, `|` -> `\|`.
    pub fn write_wire(self, out: &mut String) {
        match self {
            ValueRef::Null => {}
            ValueRef::Bool(b) => out.push_str(if b { "true" } else { "false" }),
            ValueRef::Int(i) => {
                let _ = write!(out, "{i}");
            }
            ValueRef::Real(r) => write_real(out, r),
            ValueRef::Str(s) => escape_into(s, out),
            ValueRef::Tstamp(t) => write_tstamp(out, t),
        }
    }
}

pub fn write_real(out: &mut String, r: f64) {
    if r.is_finite() && r == r.trunc() && r.abs() < 1e15 {
        let _ = write!(out, "{r:.1}");
    } else {
        let _ = write!(out, "{r}");
    }
}

/// `@%016x@`, the original's timestamp notation.
pub fn write_tstamp(out: &mut String, t: i64) {
    let _ = write!(out, "@{:016x}@", t as u64);
}

pub fn format_tstamp(t: i64) -> String {
    let mut s = String::with_capacity(18);
    write_tstamp(&mut s, t);
    s
}

fn escape_into(s: &str, out: &mut String) {
    if !s.bytes().any(|b| matches!(b, b'\\' | b'\n' | b'\r' | b'|')) {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '|' => out.push_str("\\|"),
            c => out.push(c),
        }
    }
}

/// Inverse of the wire escaping (used by the Rust client and CLI).
pub fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some(o) => out.push(o),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Parse `@hex@` into nanoseconds.
pub fn parse_tstamp(s: &str) -> Option<i64> {
    let inner = s.strip_prefix('@')?.strip_suffix('@')?;
    if inner.is_empty() || inner.len() > 16 {
        return None;
    }
    u64::from_str_radix(inner, 16).ok().map(|v| v as i64)
}

/// Parse `YYYY/MM/DD:hh:mm:ss` (UTC) into nanoseconds since the epoch.
pub fn parse_datetime(s: &str) -> Option<i64> {
    let (date, time) = s.split_once(':')?;
    let d: Vec<&str> = date.split('/').collect();
    let t: Vec<&str> = time.split(':').collect();
    if d.len() != 3 || t.len() != 3 {
        return None;
    }
    let num = |x: &str| -> Option<i64> {
        if x.is_empty() || x.len() > 4 || !x.bytes().all(|b| b.is_ascii_digit()) {
            None
        } else {
            x.parse().ok()
        }
    };
    let (y, mo, da) = (num(d[0])?, num(d[1])?, num(d[2])?);
    let (h, mi, se) = (num(t[0])?, num(t[1])?, num(t[2])?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&da) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let days = days_from_civil(y, mo, da);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se;
    secs.checked_mul(1_000_000_000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (era-based arithmetic:
/// shift the year to start in March so the leap day is last).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tstamp_roundtrip() {
        let s = format_tstamp(0x1234_5678_9abc);
        assert_eq!(s, "@0000123456789abc@");
        assert_eq!(parse_tstamp(&s), Some(0x1234_5678_9abc));
        assert_eq!(parse_tstamp("@@"), None);
    }

    #[test]
    fn datetime_is_utc() {
        assert_eq!(parse_datetime("1970/01/01:00:00:00"), Some(0));
        assert_eq!(parse_datetime("2000/03/01:00:00:01"), Some(951_868_801_000_000_000));
        assert_eq!(parse_datetime("2024/13/01:00:00:00"), None);
    }

    #[test]
    fn escaping_roundtrip() {
        let mut s = String::new();
        ValueRef::Str("a<|>b\nc\\").write_wire(&mut s);
        assert!(!s.contains("<|>") && !s.contains('\n'));
        assert_eq!(unescape(&s), "a<|>b\nc\\");
    }
}
