//! Just enough JSON for the control messages: one flat object per message. Nested values
//! are parsed (and ignored by the caller) so an extra field never breaks a message.

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// Kept as text: the caller wants exact integers (ports, lease times), not f64.
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(fields) => fields.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A non-negative integer written without fraction or exponent.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Num(n) if n.bytes().all(|b| b.is_ascii_digit()) => n.parse().ok(),
            _ => None,
        }
    }
}

const MAX_DEPTH: usize = 32;

pub fn parse(text: &[u8]) -> Result<Json, &'static str> {
    let mut p = Parser { s: text, i: 0 };
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err("trailing data");
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Result<(), &'static str> {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err("unexpected character")
        }
    }

    fn word(&mut self, w: &[u8], v: Json) -> Result<Json, &'static str> {
        if self.s[self.i..].starts_with(w) {
            self.i += w.len();
            Ok(v)
        } else {
            Err("bad literal")
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, &'static str> {
        if depth > MAX_DEPTH {
            return Err("too deep");
        }
        self.ws();
        match self.peek().ok_or("unexpected end")? {
            b'{' => {
                self.i += 1;
                let mut fields = Vec::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(fields));
                }
                loop {
                    self.ws();
                    if self.peek() != Some(b'"') {
                        return Err("expected a key");
                    }
                    let key = self.string()?;
                    self.eat(b':')?;
                    fields.push((key, self.value(depth + 1)?));
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(fields));
                        }
                        _ => return Err("expected , or }"),
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(Json::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Arr(items));
                        }
                        _ => return Err("expected , or ]"),
                    }
                }
            }
            b'"' => Ok(Json::Str(self.string()?)),
            b't' => self.word(b"true", Json::Bool(true)),
            b'f' => self.word(b"false", Json::Bool(false)),
            b'n' => self.word(b"null", Json::Null),
            b'-' | b'0'..=b'9' => {
                let start = self.i;
                while self.i < self.s.len() && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    self.i += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|_| "bad number")?;
                text.parse::<f64>().map_err(|_| "bad number")?;
                Ok(Json::Num(text.to_string()))
            }
            _ => Err("unexpected character"),
        }
    }

    fn hex4(&mut self) -> Result<u32, &'static str> {
        let digits = self.s.get(self.i..self.i + 4).ok_or("truncated escape")?;
        let text = std::str::from_utf8(digits).map_err(|_| "bad escape")?;
        let v = u32::from_str_radix(text, 16).map_err(|_| "bad escape")?;
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, &'static str> {
        self.i += 1; // opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = self.peek().ok_or("unterminated string")?;
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(out).map_err(|_| "bad UTF-8"),
                b'\\' => {
                    let e = self.peek().ok_or("unterminated string")?;
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                if !self.s[self.i..].starts_with(b"\\u") {
                                    return Err("lone surrogate");
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err("lone surrogate");
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            char::from_u32(code).ok_or("bad escape")?
                        }
                        _ => return Err("bad escape"),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                0..=0x1F => return Err("control character in string"),
                _ => out.push(c),
            }
        }
    }
}

/// `s` as a JSON string literal (quotes included).
pub fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_objects_and_refuses_garbage() {
        let v = parse(br#" {"a": "x\"\u00e9\ud83d\ude00", "n": 3600, "f": -1.5e3, "z": [true, null, {}]} "#).unwrap();
        assert_eq!(v.get("a").unwrap().as_str(), Some("x\"\u{e9}\u{1F600}"));
        assert_eq!(v.get("n").unwrap().as_u64(), Some(3600));
        assert_eq!(v.get("f").unwrap().as_u64(), None);
        for bad in [&b""[..], b"{", b"{\"a\":}", b"{\"a\":1,}", b"[1 2]", b"{\"a\":1} x", b"\"\\x\"", b"nul", b"{1:2}", b"\"\xff\""] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let deep = "[".repeat(100);
        assert!(parse(deep.as_bytes()).is_err());
    }

    #[test]
    fn quotes_strings() {
        let mut s = String::new();
        quote("a\"b\\c\n", &mut s);
        assert_eq!(s, r#""a\"b\\c\u000a""#);
    }
}
