//! hwdb: the Homework stream database.
//!
//! Modules, each with one job:
//! - `lexer`, `parser`, `ast`: the query language
//! - `ring`: stream tables in one fixed-size circular buffer
//! - `ptable`: persistent tables in memory (what queries read)
//! - `persist`: persistent tables, catalog and saved queries in SQLite
//! - `fastinsert`: allocation-free path for plain insert statements
//! - `exec`: running a select over rows (filter, group, aggregate, order)
//! - `engine`: the database itself, requests in, `<|>` responses out
//! - `result`: the response format
//! - `srpc`: the UDP RPC transport (client and server)
//! - `server`: the daemon's glue: SRPC server + engine + subscription callbacks

pub mod ast;
pub mod clock;
pub mod engine;
pub mod error;
pub mod exec;
pub mod fastinsert;
pub mod lexer;
pub mod parser;
pub mod persist;
pub mod ptable;
pub mod result;
pub mod srpc;
pub mod server;
pub mod ring;
pub mod value;

pub use engine::Database;
pub use error::HwdbError;
