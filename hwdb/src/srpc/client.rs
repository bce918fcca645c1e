//! A blocking SRPC client connection: `connect` then any number of `call`s, one at a
//! time. Every wait is bounded by the call timeout, so nothing can hang forever.

use std::io::{self, ErrorKind};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::transfer::{Incoming, Outgoing, TimerResult};
use super::wire::{self, Command, Packet, SEQNO_LIMIT};
use super::Timing;

static SUBPORT_COUNTER: AtomicU32 = AtomicU32::new(1);

/// `(pid & 0xffff) << 16 | counter`, as the original did.
pub fn new_subport() -> u32 {
    let c = SUBPORT_COUNTER.fetch_add(1, Ordering::Relaxed) & 0xffff;
    ((std::process::id() & 0xffff) << 16) | c
}

pub struct Client {
    sock: UdpSocket,
    server: SocketAddr,
    service: String,
    subport: u32,
    seqno: u32,
    timeout: Duration,
    timing: Timing,
    buf: Vec<u8>,
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(ErrorKind::TimedOut, what.to_string())
}

impl Client {
    /// Connect to `service` at `addr`; `timeout` bounds this and every later call.
    pub fn connect(addr: impl ToSocketAddrs, service: &str, timeout: Duration) -> io::Result<Client> {
        Client::connect_with(addr, service, timeout, Timing::default())
    }

    pub fn connect_with(addr: impl ToSocketAddrs, service: &str, timeout: Duration, timing: Timing) -> io::Result<Client> {
        let server = addr.to_socket_addrs()?.next().ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, "no address"))?;
        let bind: SocketAddr = if server.is_ipv4() { "0.0.0.0:0".parse().unwrap() } else { "[::]:0".parse().unwrap() };
        let sock = UdpSocket::bind(bind)?;
        sock.connect(server)?;
        let mut c = Client {
            sock,
            server,
            service: service.to_string(),
            subport: new_subport(),
            seqno: 1,
            timeout,
            timing,
            buf: vec![0u8; 65536],
        };
        c.handshake(Instant::now() + timeout)?;
        Ok(c)
    }

    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// Start the seqno at this value (tests use it to exercise the SEQNO reset).
    pub fn set_seqno(&mut self, seqno: u32) {
        self.seqno = seqno;
    }

    pub fn seqno(&self) -> u32 {
        self.seqno
    }

    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    fn send(&self, pkt: &[u8]) {
        // A lost datagram is handled by retransmission; a send error is the same to us.
        let _ = self.sock.send(pkt);
    }

    /// Wait for one packet of our connection until `until`; None on timeout.
    fn recv_until(&mut self, until: Instant) -> io::Result<Option<usize>> {
        loop {
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            self.sock.set_read_timeout(Some((until - now).max(Duration::from_micros(100))))?;
            match self.sock.recv(&mut self.buf) {
                Ok(n) => {
                    if n >= wire::HEADER_LEN && self.buf[0..4] == self.subport.to_be_bytes() {
                        return Ok(Some(n));
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return Ok(None),
                // ICMP port unreachable from an earlier send: the server may be restarting.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => std::thread::sleep(Duration::from_millis(5)),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Send `pkt` and wait for a reply with command `want` and our seqno, retransmitting with backoff.
    fn exchange(&mut self, pkt: &[u8], want: Command, deadline: Instant) -> io::Result<()> {
        let mut rto = self.timing.first_retry();
        for _ in 0..self.timing.attempts {
            self.send(pkt);
            let until = (Instant::now() + rto).min(deadline);
            while let Some(n) = self.recv_until(until)? {
                if let Ok(p) = wire::decode(&self.buf[..n]) {
                    if p.command == want && p.seqno == self.seqno {
                        return Ok(());
                    }
                    if p.command == Command::Ping {
                        self.send(&wire::control(self.subport, p.seqno, Command::Pack));
                    }
                }
            }
            if Instant::now() >= deadline {
                break;
            }
            rto *= 2;
        }
        Err(timed_out(&format!("no {want:?} from {} (server down or unreachable)", self.server)))
    }

    fn handshake(&mut self, deadline: Instant) -> io::Result<()> {
        self.seqno = 1;
        let pkt = wire::connect(self.subport, 1, &self.service);
        self.exchange(&pkt, Command::Cack, deadline)
    }

    /// One request, one response. Retries transparently if the server has forgotten
    /// this connection (it answers DISCONNECT to packets of unknown connections).
    pub fn call(&mut self, request: &[u8]) -> io::Result<Vec<u8>> {
        let deadline = Instant::now() + self.timeout;
        for _ in 0..3 {
            match self.call_once(request, deadline)? {
                Some(resp) => return Ok(resp),
                None => {
                    self.subport = new_subport();
                    self.handshake(deadline)?;
                }
            }
        }
        Err(io::Error::new(ErrorKind::ConnectionReset, "server keeps dropping the connection"))
    }

    /// Ok(None) means the server does not know the connection (reconnect and retry).
    fn call_once(&mut self, request: &[u8], deadline: Instant) -> io::Result<Option<Vec<u8>>> {
        if self.seqno >= SEQNO_LIMIT {
            self.seqno = 1;
            let pkt = wire::control(self.subport, 1, Command::Seqno);
            self.exchange(&pkt, Command::Sack, deadline)?;
        }
        self.seqno += 1;
        let seqno = self.seqno;
        let packets = wire::split_message(self.subport, seqno, Command::Query, request);
        let mut out = Outgoing::new(seqno, packets, &self.timing, Instant::now());
        for p in out.pump() {
            let _ = self.sock.send(p);
        }
        let mut incoming: Option<Incoming> = None;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(timed_out(&format!("no response from {} within {:?}", self.server, self.timeout)));
            }
            let until = if out.done() { deadline } else { out.deadline().min(deadline) };
            let Some(n) = self.recv_until(until)? else {
                match out.on_timer(Instant::now()) {
                    TimerResult::Resend => {
                        for p in out.unacked() {
                            let _ = self.sock.send(p);
                        }
                    }
                    TimerResult::TimedOut => {
                        return Err(timed_out(&format!("query to {} not acknowledged (server down?)", self.server)))
                    }
                    TimerResult::Idle => {}
                }
                continue;
            };
            let pkt: Vec<u8> = self.buf[..n].to_vec();
            let Ok(p) = wire::decode(&pkt) else { continue };
            if let Some(resp) = self.on_packet(&p, seqno, &mut out, &mut incoming)? {
                return Ok(Some(resp));
            }
            if p.command == Command::Disconnect && !out.done() {
                return Ok(None);
            }
            for q in out.pump() {
                let _ = self.sock.send(q);
            }
        }
    }

    /// Handle one packet during a call; Some(response) when it is complete.
    fn on_packet(&mut self, p: &Packet, seqno: u32, out: &mut Outgoing, incoming: &mut Option<Incoming>) -> io::Result<Option<Vec<u8>>> {
        let now = Instant::now();
        match p.command {
            Command::Ping => self.send(&wire::control(self.subport, p.seqno, Command::Pack)),
            Command::Fack if p.seqno == seqno => out.on_fack(p.fnum, now),
            Command::Qack if p.seqno == seqno => out.on_final_ack(),
            Command::Fragment | Command::Response if p.seqno == seqno => {
                // The response has started, so the query arrived.
                out.on_final_ack();
                if !incoming.as_ref().is_some_and(|i| i.matches(p.seqno, p.nfrags, p.tlen)) {
                    *incoming = Some(Incoming::new(p.seqno, p.nfrags, p.tlen));
                }
                let inc = incoming.as_mut().expect("just set");
                if p.command == Command::Fragment {
                    inc.add(p.fnum, p.data);
                    self.send(&wire::fack(self.subport, seqno, p.fnum, p.nfrags));
                } else if inc.nfrags - 1 == inc.received_before_last() {
                    inc.add(p.fnum, p.data);
                    if inc.complete() {
                        self.send(&wire::control(self.subport, seqno, Command::Rack));
                        return Ok(incoming.take().map(|i| i.take()));
                    }
                }
            }
            // A retransmitted response to an earlier call: our RACK was lost, repeat it.
            Command::Response if p.seqno < seqno => self.send(&wire::control(self.subport, p.seqno, Command::Rack)),
            Command::Fragment if p.seqno < seqno => self.send(&wire::fack(self.subport, p.seqno, p.fnum, p.nfrags)),
            _ => {}
        }
        Ok(None)
    }

    /// Tell the server we are leaving (best effort, short wait).
    pub fn disconnect(mut self) {
        let pkt = wire::control(self.subport, self.seqno, Command::Disconnect);
        let _ = self.exchange_short(&pkt);
    }

    fn exchange_short(&mut self, pkt: &[u8]) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_millis(200);
        self.exchange(pkt, Command::Dack, deadline)
    }
}
