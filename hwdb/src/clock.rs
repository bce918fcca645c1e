//! Where "now" comes from. The storage layer never calls the OS clock directly so
//! tests can drive windows (`[range ...]`, `[now]`) with a hand-moved clock.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    fn now_ns(&self) -> i64;
}

/// The real wall clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ns(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to (tests and the benchmark).
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    pub fn new(start_ns: i64) -> Self {
        ManualClock { now: AtomicI64::new(start_ns) }
    }
    pub fn set(&self, ns: i64) {
        self.now.store(ns, Ordering::SeqCst);
    }
    pub fn advance(&self, ns: i64) {
        self.now.fetch_add(ns, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}
