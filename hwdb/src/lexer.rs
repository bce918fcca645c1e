//! Splits a statement into tokens, each remembering its byte offset for error messages.

use crate::error::HwdbError;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// Identifier or keyword (keywords are recognised by the parser, case-insensitively).
    Ident(String),
    /// An integer or decimal number without sign.
    Number(String),
    /// Anything else starting with a digit: an IP address or `YYYY/MM/DD:hh:mm:ss`.
    Word(String),
    Str(String),
    /// `@hex@`, already decoded.
    Tstamp(i64),
    Sym(&'static str),
    End,
}

impl Tok {
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("'{}'", crate::ast::truncate(s, 30)),
            Tok::Number(s) | Tok::Word(s) => format!("'{}'", crate::ast::truncate(s, 30)),
            Tok::Str(_) => "a string".to_string(),
            Tok::Tstamp(_) => "a timestamp".to_string(),
            Tok::Sym(s) => format!("'{s}'"),
            Tok::End => "end of statement".to_string(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    /// Byte offset in the statement.
    pub pos: usize,
}

/// Two-character symbols first so `<=` is not read as `<`.
const SYMBOLS: [&str; 18] =
    ["!=", "<>", "<=", ">=", "+=", "-=", "(", ")", "[", "]", ",", "*", "=", "<", ">", ";", "-", "+"];

pub fn tokenize(src: &str) -> Result<Vec<Token>, HwdbError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token { tok: Tok::Ident(src[start..i].to_string()), pos: start });
        } else if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(|b| b.is_ascii_digit())) {
            // Digits, dots, slashes and colons: a number, an address or a date.
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'.' | b'/' | b':')) {
                i += 1;
            }
            let text = &src[start..i];
            let is_number = text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                && text.bytes().filter(|&b| b == b'.').count() <= 1;
            let tok = if is_number { Tok::Number(text.to_string()) } else { Tok::Word(text.to_string()) };
            out.push(Token { tok, pos: start });
        } else if c == b'\'' || c == b'"' {
            let (s, next) = lex_string(src, i, c)?;
            out.push(Token { tok: Tok::Str(s), pos: start });
            i = next;
        } else if c == b'@' {
            let end = src[i + 1..].find('@').map(|e| i + 1 + e);
            let Some(end) = end else {
                return Err(HwdbError::syntax(src, start, "unterminated timestamp, expected '@hex@'"));
            };
            match crate::value::parse_tstamp(&src[i..=end]) {
                Some(t) => out.push(Token { tok: Tok::Tstamp(t), pos: start }),
                None => return Err(HwdbError::syntax(src, start, "bad timestamp, expected '@' and 1-16 hex digits '@'")),
            }
            i = end + 1;
        } else {
            let rest = &src[i..];
            match SYMBOLS.iter().find(|s| rest.starts_with(**s)) {
                Some(sym) => {
                    out.push(Token { tok: Tok::Sym(sym), pos: start });
                    i += sym.len();
                }
                None => {
                    let ch = rest.chars().next().unwrap_or('?');
                    return Err(HwdbError::syntax(src, start, &format!("unexpected character '{ch}'")));
                }
            }
        }
    }
    out.push(Token { tok: Tok::End, pos: src.len() });
    Ok(out)
}

/// A quoted string; the quote character is escaped by doubling it (`'it''s'`) or by a backslash.
fn lex_string(src: &str, start: usize, quote: u8) -> Result<(String, usize), HwdbError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = start + 1;
    while i < bytes.len() {
        let b = bytes[i];
        if b == quote {
            if bytes.get(i + 1) == Some(&quote) {
                out.push(quote);
                i += 2;
                continue;
            }
            // Slicing happened on byte boundaries of valid UTF-8, so this cannot fail.
            return Ok((String::from_utf8(out).unwrap_or_default(), i + 1));
        }
        if b == b'\\' && i + 1 < bytes.len() {
            let e = bytes[i + 1];
            out.push(match e {
                b'n' => b'\n',
                b't' => b'\t',
                b'r' => b'\r',
                other => other,
            });
            i += 2;
            continue;
        }
        out.push(b);
        i += 1;
    }
    Err(HwdbError::syntax(src, start, "unterminated string"))
}
