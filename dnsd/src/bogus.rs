//! Telling a DNSSEC failure from any other SERVFAIL. The validating resolver (unbound)
//! answers SERVFAIL both when an answer fails validation and when it cannot reach an
//! upstream; the query log must say "bogus" for the first. So each SERVFAIL it sends is
//! asked again here with "checking disabled" (CD): if the resolver then has the data, the
//! only thing wrong with it was its signatures (unbound keeps bogus answers for a minute,
//! so the second question is answered from its cache). The device already has its
//! SERVFAIL: this runs on a thread of its own, off the query path, and logs the query
//! when it knows the verdict. A full queue logs "allowed" as before, never blocks.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::server::{Forward, Shared};
use crate::wire;

const QUEUE: usize = 1024;
const WAIT: Duration = Duration::from_secs(2);

struct Check {
    mac: Arc<str>,
    qtype: u16,
    name: String,
    latency_us: u64,
}

pub struct Prober {
    tx: SyncSender<Check>,
}

impl Prober {
    /// Starts the prober thread, asking `validator`.
    pub fn start(shared: Arc<Shared>, validator: SocketAddr) -> std::io::Result<Prober> {
        let sock = UdpSocket::bind(if validator.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" })?;
        sock.connect(validator)?;
        sock.set_read_timeout(Some(WAIT))?;
        let (tx, rx) = sync_channel(QUEUE);
        thread::Builder::new().name("bogus".into()).spawn(move || run(&shared, &sock, rx))?;
        Ok(Prober { tx })
    }

    /// `fwd` got SERVFAIL from the validator: find out why, then log it.
    pub fn check(&self, shared: &Shared, fwd: &Forward, latency_us: u64) {
        let check = Check { mac: fwd.mac.clone(), qtype: fwd.qtype, name: fwd.name.clone(), latency_us };
        if let Err(TrySendError::Full(c) | TrySendError::Disconnected(c)) = self.tx.try_send(check) {
            shared.query_event(&c.mac, c.qtype, "allowed", c.latency_us, &c.name);
        }
    }
}

fn run(shared: &Shared, sock: &UdpSocket, rx: Receiver<Check>) {
    let mut id = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.subsec_nanos()) as u16;
    let mut buf = vec![0u8; 4096];
    while let Ok(c) = rx.recv() {
        id = id.wrapping_mul(75).wrapping_add(74); // distinct ids in a row; the socket is ours alone
        let bogus = sock.send(&wire::query(id, &c.name, c.qtype, wire::FLAG_RD | wire::FLAG_CD)).is_ok()
            && answered_without_checks(sock, id, &mut buf);
        if bogus {
            shared.stats.bogus.fetch_add(1, Ordering::Relaxed);
        }
        shared.query_event(&c.mac, c.qtype, if bogus { "bogus" } else { "allowed" }, c.latency_us, &c.name);
    }
}

/// The answer to our CD query `id` is NOERROR or NXDOMAIN (late answers to earlier
/// questions are skipped).
fn answered_without_checks(sock: &UdpSocket, id: u16, buf: &mut [u8]) -> bool {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        let Ok(n) = sock.recv(buf) else { return false };
        if n >= wire::HEADER && u16::from_be_bytes([buf[0], buf[1]]) == id && buf[2] & 0x80 != 0 {
            return matches!(buf[3] & 0xF, 0 | wire::RCODE_NXDOMAIN);
        }
    }
    false
}
