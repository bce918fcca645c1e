//! homework-dhcpd: answers DHCP for devices whose lease the controller already granted
//! (renewals, re-asks) or whose offer it made (the REQUEST that takes it), and offers a
//! never-seen device a block the controller reserved for it (newdev.rs), straight from
//! the bridge's raw socket; every other frame goes to the
//! controller unchanged. See control.rs for the protocol, dhcp.rs for the rules.

mod bpf;
mod control;
mod dhcp;
mod newdev;
mod sys;

#[cfg(test)]
mod dhcp_tests;

use std::io::ErrorKind;
use std::os::raw::c_int;
use std::process::exit;
use std::time::{Duration, Instant};

use control::{Batch, Stats};
use dhcp::{Action, Kind, Table, Why};
use newdev::NewDevices;
use libc::{pollfd, POLLERR, POLLHUP, POLLIN, POLLNVAL};

const RCVBUF: c_int = 4 << 20; // a burst of a thousand clients fits
const FRAMES_PER_TURN: usize = 64; // then table updates get a turn
const CONTROL_PER_TURN: usize = 1024;
// What was answered is told to the controller in batches, one message per device: at
// thousands of renewals a second a message per answer costs the controller (which books
// each one) the CPU the answers need, and its bursts of booking showed as our slowest
// answers. Half a second: the controller's expiry trails the client's by at most that,
// against lease times of 30 s and more (dhcpd_link.BOOK_EVERY is the same).
const TELL_EVERY: Duration = Duration::from_millis(500);
const TELL_AT_MOST: usize = 4096; // devices in one batch before it goes early

fn usage() -> ! {
    eprintln!("usage: homework-dhcpd --interface IFNAME --control-fd N [--dnr PRIORITY:ADN_HEX:PARAMS_HEX ...]");
    exit(2)
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// `--dnr PRIORITY:ADN:PARAMS` (the wire-format name and SvcParams in hex): one encrypted
/// DNS endpoint announced in option 162.
fn dnr_instance(text: &str) -> Option<dhcp::DnrInstance> {
    let mut parts = text.split(':');
    let priority = parts.next()?.parse().ok()?;
    let (adn, params) = (hex(parts.next()?)?, hex(parts.next()?)?);
    (parts.next().is_none() && !adn.is_empty() && adn.len() < 256).then_some((priority, adn, params))
}

fn args() -> (String, c_int) {
    let mut interface = None;
    let mut fd = None;
    let mut dnr = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--interface" => interface = it.next(),
            "--control-fd" => fd = it.next().and_then(|v| v.parse::<c_int>().ok()).filter(|&n| n >= 0),
            "--dnr" => dnr.push(it.next().as_deref().and_then(dnr_instance).unwrap_or_else(|| usage())),
            _ => usage(),
        }
    }
    let _ = dhcp::DNR.set(dnr);
    match (interface, fd) {
        (Some(i), Some(f)) => (i, f),
        _ => usage(),
    }
}

struct Daemon {
    sock: c_int,
    ctl: c_int,
    table: Table,
    new: NewDevices,
    stats: Stats,
    out: Vec<u8>,
    answered: Batch,
    tell_at: Option<Instant>,
}

impl Daemon {
    /// Never blocks: a slow controller loses messages (counted), not the data path.
    fn tell(&mut self, msg: &[u8]) -> bool {
        sys::send_now(self.ctl, msg).is_ok()
    }

    fn punt(&mut self, frame: &[u8]) {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        out.push(b'P');
        out.extend_from_slice(frame);
        if self.tell(&out) {
            self.stats.punted += 1;
        } else {
            self.stats.punt_dropped += 1;
        }
        self.out = out;
    }

    fn frame(&mut self, frame: &[u8]) {
        self.stats.frames += 1;
        let (action, chaddr) = match dhcp::read(frame) {
            Err(action) => (action, None),
            Ok((port, req)) => {
                if let Some(entry) = self.new.offer(&req, port, &self.table, Instant::now()) {
                    self.table.insert(req.chaddr(), entry);
                }
                (dhcp::decide_request(&req, port, &self.table), Some(req.chaddr()))
            }
        };
        match action {
            Action::Drop => self.stats.dropped += 1,
            Action::Punt(why) => {
                if why == Why::Malformed {
                    self.stats.malformed += 1;
                }
                // What this device was answered meanwhile goes first: the controller books
                // it before it decides this request (a renewal, then a RELEASE within the
                // batch, would otherwise book the renewal after the release and revive it).
                if let Some(msg) = chaddr.and_then(|mac| self.answered.take_one(&mac)) {
                    if !self.tell(msg.as_bytes()) {
                        self.stats.note_dropped += 1;
                    }
                }
                self.punt(frame);
            }
            Action::Answer(reply, note) => {
                if sys::send_now(self.sock, &reply).is_err() {
                    // The controller can still answer it as a packet-out.
                    self.stats.send_errors += 1;
                    self.punt(frame);
                    return;
                }
                self.stats.answered += 1;
                match note.kind {
                    Kind::Offered => self.stats.offers += 1,
                    Kind::Acked => self.stats.acks += 1,
                }
                if let Some(now) = self.answered.add(note, &self.table) {
                    if !self.tell(now.as_bytes()) {
                        self.stats.note_dropped += 1;
                    }
                    return;
                }
                self.tell_at.get_or_insert_with(|| Instant::now() + TELL_EVERY);
                if self.answered.len() >= TELL_AT_MOST {
                    self.tell_answered();
                }
            }
        }
    }

    /// The batch of answers to the controller, one message per device.
    fn tell_answered(&mut self) {
        self.tell_at = None;
        for msg in self.answered.take() {
            if !self.tell(msg.as_bytes()) {
                self.stats.note_dropped += 1;
            }
        }
    }

    /// Milliseconds poll may wait: until the batch is due, or for ever without one.
    fn wait_ms(&self) -> c_int {
        match self.tell_at {
            None => -1,
            Some(at) => at.saturating_duration_since(Instant::now()).as_millis().min(1000) as c_int,
        }
    }

    /// Drain the control socket; exits on EOF (the controller is gone).
    fn control(&mut self, buf: &mut [u8]) {
        for _ in 0..CONTROL_PER_TURN {
            match sys::recv_now(self.ctl, buf) {
                Ok(0) => exit(0),
                Ok(n) => {
                    for reply in control::apply_all(&buf[..n], &mut self.table, &mut self.new, &mut self.stats) {
                        let _ = self.tell(reply.as_bytes());
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => exit(0),
                Err(e) => {
                    eprintln!("homework-dhcpd: control socket: {e}");
                    exit(1)
                }
            }
        }
    }

    fn frames(&mut self, buf: &mut [u8]) {
        for _ in 0..FRAMES_PER_TURN {
            match sys::recv_now(self.sock, buf) {
                Ok(n) => self.frame(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    // ENETDOWN and the like: the bridge is being reconfigured; keep going.
                    eprintln!("homework-dhcpd: read failed: {e}");
                    return;
                }
            }
        }
    }
}

fn main() {
    let (interface, ctl) = args();
    sys::exit_on_sigterm();
    let prog = bpf::program();
    let sock = match sys::open_packet_socket(&interface, &prog, RCVBUF) {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("homework-dhcpd: cannot open a raw socket on {interface}: {e}");
            exit(1)
        }
    };
    let mut d = Daemon {
        sock: sock.0,
        ctl,
        table: Table::new(),
        new: NewDevices::default(),
        stats: Stats::default(),
        out: Vec::with_capacity(2048),
        answered: Batch::default(),
        tell_at: None,
    };
    let mut frame_buf = vec![0u8; 65536];
    let mut ctl_buf = vec![0u8; 65536];
    loop {
        let mut fds = [pollfd { fd: ctl, events: POLLIN, revents: 0 }, pollfd { fd: d.sock, events: POLLIN, revents: 0 }];
        match sys::poll_fds(&mut fds, d.wait_ms()) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("homework-dhcpd: poll: {e}");
                exit(1)
            }
        }
        if fds[0].revents & POLLNVAL != 0 {
            eprintln!("homework-dhcpd: --control-fd {ctl} is not open");
            exit(1)
        }
        // Table updates first, so a frame queued after a `set` sees it.
        if fds[0].revents & (POLLIN | POLLHUP | POLLERR) != 0 {
            d.control(&mut ctl_buf);
        }
        if fds[1].revents & (POLLIN | POLLERR) != 0 {
            d.frames(&mut frame_buf);
        }
        if d.tell_at.is_some_and(|at| Instant::now() >= at) {
            d.tell_answered();
        }
    }
}
