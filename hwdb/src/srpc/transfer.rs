//! One message in flight, from each side.
//!
//! `Outgoing` sends FRAGMENT 1..n-1 with up to `window` unacknowledged at a time, then,
//! once every fragment is acknowledged, the last piece (QUERY or RESPONSE). The oldest
//! unacknowledged transmission has a timer that starts at 2 ticks and doubles at each
//! retransmission; after `attempts` transmissions without any progress the transfer fails.
//! `Incoming` reassembles fragments that may arrive duplicated or out of order.

use std::time::{Duration, Instant};

use super::wire::{Command, FRAGMENT_SIZE};
use super::Timing;

pub struct Outgoing {
    pub seqno: u32,
    packets: Vec<Vec<u8>>,
    acked: Vec<bool>,
    sent: Vec<bool>,
    frags_acked: usize,
    window: usize,
    first_rto: Duration,
    rto: Duration,
    deadline: Instant,
    attempts: u32,
    max_attempts: u32,
    final_acked: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum TimerResult {
    Idle,
    Resend,
    TimedOut,
}

impl Outgoing {
    pub fn new(seqno: u32, packets: Vec<Vec<u8>>, timing: &Timing, now: Instant) -> Outgoing {
        let n = packets.len();
        Outgoing {
            seqno,
            packets,
            acked: vec![false; n],
            sent: vec![false; n],
            frags_acked: 0,
            window: timing.window.max(1),
            first_rto: timing.first_retry(),
            rto: timing.first_retry(),
            deadline: now + timing.first_retry(),
            attempts: 1,
            max_attempts: timing.attempts,
            final_acked: false,
        }
    }

    fn n_frags(&self) -> usize {
        self.packets.len() - 1
    }

    /// Packets that may go out now (new fragments within the window, or the last piece).
    pub fn pump(&mut self) -> Vec<&[u8]> {
        let mut idx = Vec::new();
        let in_flight = (0..self.n_frags()).filter(|&i| self.sent[i] && !self.acked[i]).count();
        let mut budget = self.window.saturating_sub(in_flight);
        for i in 0..self.n_frags() {
            if budget == 0 {
                break;
            }
            if !self.sent[i] {
                self.sent[i] = true;
                idx.push(i);
                budget -= 1;
            }
        }
        let last = self.n_frags();
        if self.frags_acked == self.n_frags() && !self.sent[last] {
            self.sent[last] = true;
            idx.push(last);
        }
        idx.into_iter().map(|i| self.packets[i].as_slice()).collect()
    }

    fn progress(&mut self, now: Instant) {
        self.attempts = 1;
        self.rto = self.first_rto;
        self.deadline = now + self.rto;
    }

    /// FACK for fragment `fnum` (1-based).
    pub fn on_fack(&mut self, fnum: u32, now: Instant) {
        let i = fnum as usize;
        if i == 0 || i > self.n_frags() || self.acked[i - 1] {
            return;
        }
        self.acked[i - 1] = true;
        self.frags_acked += 1;
        self.progress(now);
    }

    /// The last piece was acknowledged (QACK/RACK, or for a query, the response began).
    pub fn on_final_ack(&mut self) {
        self.final_acked = true;
    }

    pub fn done(&self) -> bool {
        self.final_acked
    }

    /// The packet holding the last piece (kept by servers to answer duplicate queries).
    pub fn final_packet(&self) -> &[u8] {
        self.packets.last().expect("a message has at least one packet")
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Check the retransmission timer; on `Resend` call `unacked()` for what to send.
    pub fn on_timer(&mut self, now: Instant) -> TimerResult {
        if self.final_acked || now < self.deadline {
            return TimerResult::Idle;
        }
        if self.attempts >= self.max_attempts {
            return TimerResult::TimedOut;
        }
        self.attempts += 1;
        self.rto *= 2;
        self.deadline = now + self.rto;
        TimerResult::Resend
    }

    /// Everything sent but not yet acknowledged.
    pub fn unacked(&self) -> Vec<&[u8]> {
        (0..self.packets.len())
            .filter(|&i| self.sent[i] && !self.acked[i] && !(i == self.n_frags() && self.final_acked))
            .map(|i| self.packets[i].as_slice())
            .collect()
    }
}

/// Reassembly of one incoming message.
pub struct Incoming {
    pub seqno: u32,
    pub nfrags: u32,
    tlen: usize,
    buf: Vec<u8>,
    have: Vec<bool>,
    count: u32,
}

impl Incoming {
    pub fn new(seqno: u32, nfrags: u32, tlen: u32) -> Incoming {
        Incoming { seqno, nfrags, tlen: tlen as usize, buf: Vec::new(), have: vec![false; nfrags as usize], count: 0 }
    }

    /// Whether a packet belongs to this message (same seqno and shape).
    pub fn matches(&self, seqno: u32, nfrags: u32, tlen: u32) -> bool {
        self.seqno == seqno && self.nfrags == nfrags && self.tlen == tlen as usize
    }

    /// Store fragment `fnum` (duplicates are ignored).
    pub fn add(&mut self, fnum: u32, data: &[u8]) {
        let i = fnum as usize - 1;
        if self.have[i] {
            return;
        }
        let at = i * FRAGMENT_SIZE;
        if self.buf.len() < at + data.len() {
            self.buf.resize(at + data.len(), 0);
        }
        self.buf[at..at + data.len()].copy_from_slice(data);
        self.have[i] = true;
        self.count += 1;
    }

    pub fn complete(&self) -> bool {
        self.count == self.nfrags
    }

    pub fn take(self) -> Vec<u8> {
        let mut b = self.buf;
        b.truncate(self.tlen);
        b
    }
}

/// Whether a command is the last piece of a message in the direction it travels.
pub fn is_final(c: Command) -> bool {
    matches!(c, Command::Query | Command::Response)
}

impl Incoming {
    /// How many of fragments 1..n-1 are here (the last piece is only accepted after them).
    pub fn received_before_last(&self) -> u32 {
        self.have[..self.have.len() - 1].iter().filter(|&&h| h).count() as u32
    }
}
