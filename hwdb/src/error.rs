//! The one error type: a message that goes back to the client as `1<|>message<|>0<|>0<|>`.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HwdbError {
    pub message: String,
}

impl HwdbError {
    pub fn new(message: impl Into<String>) -> Self {
        HwdbError { message: message.into() }
    }

    /// `syntax error at N: what`, where N is the 1-based character column in the statement.
    pub fn syntax(src: &str, byte_pos: usize, what: &str) -> Self {
        HwdbError::new(format!("syntax error at {}: {what}", column_of(src, byte_pos)))
    }

    /// A semantic error tied to a place in the statement.
    pub fn at(src: &str, byte_pos: usize, what: &str) -> Self {
        HwdbError::new(format!("error at {}: {what}", column_of(src, byte_pos)))
    }
}

pub fn column_of(src: &str, byte_pos: usize) -> usize {
    let p = byte_pos.min(src.len());
    src.char_indices().take_while(|(i, _)| *i < p).count() + 1
}

impl fmt::Display for HwdbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HwdbError {}

pub type Result<T> = std::result::Result<T, HwdbError>;
