//! SRPC, the original Homework UDP RPC, plus the improvements our spec asks for.
//!
//! - `wire`: packet layout (12-byte header, commands 1-14, fragment payloads)
//! - `transfer`: sending one message reliably (fragments, acks, retransmission with
//!   backoff) and reassembling one on the other side
//! - `client`: a blocking client connection (`connect`, `call`)
//! - `server`: a single-threaded server loop that answers many connections at once

pub mod client;
pub mod server;
pub mod transfer;
pub mod wire;

use std::time::Duration;

/// Timer settings shared by both ends. The defaults are the original's.
#[derive(Debug, Clone)]
pub struct Timing {
    /// The protocol's clock tick.
    pub tick: Duration,
    /// Retransmit after this many ticks, doubling each time.
    pub first_retry_ticks: u32,
    /// Give up after this many unanswered transmissions (~5 s with the defaults).
    pub attempts: u32,
    /// Idle connections are pinged this often...
    pub ping_interval: Duration,
    /// ...and purged after this many unanswered pings.
    pub max_missed_pings: u32,
    /// Fragments in flight before waiting for FACKs (1 = the original stop-and-wait).
    pub window: usize,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            tick: Duration::from_millis(20),
            first_retry_ticks: 2,
            attempts: 7,
            ping_interval: Duration::from_secs(60),
            max_missed_pings: 3,
            window: 32,
        }
    }
}

impl Timing {
    pub fn first_retry(&self) -> Duration {
        self.tick * self.first_retry_ticks
    }
}
