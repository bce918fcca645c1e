//! Fast path for the statement the router sends most: `insert into T values (...)`.
//! A byte scanner picks out the table name and the literals as slices of the statement
//! (no tokens, no AST, no per-value allocation). Anything unusual -- escapes inside
//! strings, comments, odd spacing of keywords, errors of any kind -- makes it return
//! None and the full parser handles the statement, so error messages stay identical.

use crate::value::{parse_tstamp, ColType, ValueRef};

#[derive(Debug, Clone, Copy)]
pub enum FastLit<'a> {
    /// A quoted string without escapes.
    Text(&'a str),
    /// A bare number (sign included).
    Num(&'a str),
    Bool(bool),
    Tstamp(i64),
}

struct Scanner<'a> {
    src: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn ident(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        if self.i < self.b.len() && (self.b[self.i].is_ascii_alphabetic() || self.b[self.i] == b'_') {
            while self.i < self.b.len() && (self.b[self.i].is_ascii_alphanumeric() || self.b[self.i] == b'_') {
                self.i += 1;
            }
            Some(&self.src[start..self.i])
        } else {
            None
        }
    }

    fn keyword(&mut self, kw: &str) -> Option<()> {
        self.ident().filter(|w| w.eq_ignore_ascii_case(kw)).map(|_| ())
    }

    fn sym(&mut self, c: u8) -> bool {
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self) -> Option<FastLit<'a>> {
        self.ws();
        let c = *self.b.get(self.i)?;
        match c {
            b'\'' | b'"' => {
                let start = self.i + 1;
                let end = start + self.b[start..].iter().position(|&x| x == c || x == b'\\')?;
                if self.b[end] == b'\\' || self.b.get(end + 1) == Some(&c) {
                    return None; // escapes: leave to the full lexer
                }
                self.i = end + 1;
                Some(FastLit::Text(&self.src[start..end]))
            }
            b'@' => {
                let end = self.i + 1 + self.b[self.i + 1..].iter().position(|&x| x == b'@')?;
                let t = parse_tstamp(&self.src[self.i..=end])?;
                self.i = end + 1;
                Some(FastLit::Tstamp(t))
            }
            b'-' | b'+' | b'0'..=b'9' | b'.' => {
                let start = self.i;
                self.i += 1;
                while self.i < self.b.len() && (self.b[self.i].is_ascii_digit() || self.b[self.i] == b'.') {
                    self.i += 1;
                }
                Some(FastLit::Num(&self.src[start..self.i]))
            }
            _ => match self.ident()? {
                w if w.eq_ignore_ascii_case("true") => Some(FastLit::Bool(true)),
                w if w.eq_ignore_ascii_case("false") => Some(FastLit::Bool(false)),
                _ => None,
            },
        }
    }
}

/// Scan `insert into T values (l1, ...)` [`on duplicate key update`] [`;`].
/// Fills `out` with the literals and returns (table, upsert), or None.
pub fn scan_insert<'a>(sql: &'a str, out: &mut Vec<FastLit<'a>>) -> Option<(&'a str, bool)> {
    let mut s = Scanner { src: sql, b: sql.as_bytes(), i: 0 };
    s.keyword("insert")?;
    s.keyword("into")?;
    let table = s.ident()?;
    s.keyword("values")?;
    if !s.sym(b'(') {
        return None;
    }
    out.clear();
    loop {
        out.push(s.literal()?);
        if s.sym(b')') {
            break;
        }
        if !s.sym(b',') {
            return None;
        }
    }
    let mut upsert = false;
    s.ws();
    if s.i < s.b.len() && s.b[s.i] != b';' {
        s.keyword("on")?;
        s.keyword("duplicate")?;
        s.keyword("key")?;
        s.keyword("update")?;
        upsert = true;
    }
    s.sym(b';');
    s.ws();
    (s.i == s.b.len()).then_some((table, upsert))
}

/// Convert a literal for a column; None when the full binder should decide (and explain).
pub fn bind_fast<'a>(lit: FastLit<'a>, ty: ColType) -> Option<ValueRef<'a>> {
    let int_range = |v: i64| -> Option<ValueRef<'a>> {
        let ok = match ty {
            ColType::Tinyint => (i8::MIN as i64..=i8::MAX as i64).contains(&v),
            ColType::Smallint => (i16::MIN as i64..=i16::MAX as i64).contains(&v),
            _ => true,
        };
        ok.then_some(ValueRef::Int(v))
    };
    match (lit, ty) {
        (FastLit::Text(s), ColType::Varchar(n) | ColType::Blob(n)) => (s.len() <= n as usize).then_some(ValueRef::Str(s)),
        (FastLit::Text(s), ColType::Character) => (s.chars().count() <= 1).then_some(ValueRef::Str(s)),
        (FastLit::Num(s) | FastLit::Text(s), ColType::Integer | ColType::Tinyint | ColType::Smallint) => int_range(s.parse().ok()?),
        (FastLit::Num(s) | FastLit::Text(s), ColType::Real) => s.parse().ok().map(ValueRef::Real),
        (FastLit::Text(s), ColType::Tstamp) => parse_tstamp(s).map(ValueRef::Tstamp),
        (FastLit::Num(s), ColType::Tstamp) => s.parse().ok().map(ValueRef::Tstamp),
        (FastLit::Tstamp(t), ColType::Tstamp) => Some(ValueRef::Tstamp(t)),
        (FastLit::Bool(b), ColType::Boolean) => Some(ValueRef::Bool(b)),
        (FastLit::Text(s), ColType::Boolean) if s.eq_ignore_ascii_case("true") => Some(ValueRef::Bool(true)),
        (FastLit::Text(s), ColType::Boolean) if s.eq_ignore_ascii_case("false") => Some(ValueRef::Bool(false)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_common_inserts_and_declines_the_rest() {
        let mut v = Vec::new();
        assert_eq!(scan_insert("insert into Flows values (6, '1.2.3.4', -5, 1.5, true, @ff@)", &mut v), Some(("Flows", false)));
        assert_eq!(v.len(), 6);
        assert_eq!(scan_insert("INSERT INTO L VALUES ('a') on duplicate key update;", &mut v), Some(("L", true)));
        assert!(scan_insert("insert into L values ('it''s')", &mut v).is_none());
        assert!(scan_insert("insert into L values ('a\\n')", &mut v).is_none());
        assert!(scan_insert("insert into L values ('a'", &mut v).is_none());
        assert!(scan_insert("insert into L values ('a') junk", &mut v).is_none());
        assert!(scan_insert("select * from L", &mut v).is_none());
    }
}
