//! Query results and the `<|>` response format:
//!   `<status><|><message><|><ncols><|><nrows><|>\n`
//!   `type:name<|>type:name<|>...\n`          (only when ncols > 0)
//!   `v<|>v<|>...\n`                          (one line per row)
//! Status 0 is success, 1 is error (then ncols = nrows = 0).

use crate::error::HwdbError;
use crate::value::{unescape, ColType, Value};

pub const SEP: &str = "<|>";

#[derive(Debug, Clone, PartialEq)]
pub struct ResultSet {
    pub message: String,
    pub columns: Vec<(ColType, String)>,
    pub rows: Vec<Vec<Value>>,
}

impl ResultSet {
    pub fn ok() -> ResultSet {
        ResultSet::message("Success")
    }

    pub fn message(msg: impl Into<String>) -> ResultSet {
        ResultSet { message: msg.into(), columns: Vec::new(), rows: Vec::new() }
    }

    pub fn to_wire(&self) -> String {
        let mut out = String::with_capacity(64 + self.rows.len() * 16 * self.columns.len().max(1));
        out.push('0');
        out.push_str(SEP);
        out.push_str(&clean_message(&self.message));
        out.push_str(SEP);
        out.push_str(&format!("{}{SEP}{}{SEP}\n", self.columns.len(), self.rows.len()));
        if !self.columns.is_empty() {
            for (ty, name) in &self.columns {
                out.push_str(ty.wire_name());
                out.push(':');
                out.push_str(name);
                out.push_str(SEP);
            }
            out.push('\n');
        }
        for row in &self.rows {
            for v in row {
                v.as_ref().write_wire(&mut out);
                out.push_str(SEP);
            }
            out.push('\n');
        }
        out
    }
}

/// Messages travel inside the header line, so they must not contain the separator or newlines.
fn clean_message(m: &str) -> String {
    m.replace(SEP, "< | >").replace(['\n', '\r'], " ")
}

pub fn error_wire(e: &HwdbError) -> String {
    format!("1{SEP}{}{SEP}0{SEP}0{SEP}\n", clean_message(&e.message))
}

/// A parsed response, as the Rust client and the CLI see it (values stay text).
#[derive(Debug, Clone, PartialEq)]
pub struct WireResult {
    pub status: u32,
    pub message: String,
    pub columns: Vec<(String, String)>,
    pub rows: Vec<Vec<String>>,
}

/// Parse a response; Err if it is not in the `<|>` format at all.
pub fn parse_wire(text: &str) -> Result<WireResult, String> {
    let mut lines = text.split('\n');
    let header = lines.next().ok_or("empty response")?;
    let h: Vec<&str> = header.split(SEP).collect();
    if h.len() < 4 {
        return Err(format!("bad response header: {}", crate::ast::truncate(header, 80)));
    }
    let status = h[0].parse().map_err(|_| "bad status")?;
    let ncols: usize = h[2].parse().map_err(|_| "bad column count")?;
    let nrows: usize = h[3].parse().map_err(|_| "bad row count")?;
    let mut columns = Vec::new();
    if ncols > 0 {
        let line = lines.next().ok_or("missing column line")?;
        for d in line.split(SEP).take(ncols) {
            let (ty, name) = d.split_once(':').unwrap_or(("varchar", d));
            columns.push((ty.to_string(), name.to_string()));
        }
    }
    let mut rows = Vec::with_capacity(nrows);
    for _ in 0..nrows {
        let line = lines.next().ok_or("missing row")?;
        rows.push(line.split(SEP).take(ncols).map(unescape).collect());
    }
    Ok(WireResult { status, message: h[1].to_string(), columns, rows })
}
