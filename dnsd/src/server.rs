//! The query path. UDP: one thread reads client queries, answers blocked/pending ones
//! itself, answers from the cache, and sends the rest upstream (forward.rs: the upstream
//! resolvers directly, dnsmasq for the household's own names) under a random id; a second
//! thread relays the answers back (so the two halves run on both cores); a timer thread
//! moves silent queries on to the next upstream, then dnsmasq, then SERVFAIL. TCP, DNS over
//! TLS and DNS over HTTPS: stream.rs and doh.rs, through the same `handle` and `finish`.
//!
//! Allowed queries answered a moment ago are answered from a small cache (cache.rs) after
//! the policy check, without any upstream round trip.
//!
//! Every query yields a `q` event line for the controller; answers carrying addresses
//! yield `a` lines (deduplicated) so the controller can learn name -> address mappings.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use crate::cache::{Cache, Key};
use crate::forward::{InFlight, Reject, Table, Upstreams};
use crate::policy::{Device, Policy, Verdict};
use crate::wire;

const TIMER_TICK: Duration = Duration::from_millis(10);
const RELOAD_EVERY: Duration = Duration::from_secs(1);
const RELEARN_AFTER: Duration = Duration::from_secs(60);
const LEARNED_CAP: usize = 100_000;

#[derive(Default)]
pub struct Stats {
    pub queries: AtomicU64,
    pub forwarded: AtomicU64,
    pub direct: AtomicU64,
    pub via_dnsmasq: AtomicU64,
    pub retries: AtomicU64,
    pub servfail: AtomicU64,
    pub mismatched: AtomicU64,
    pub late: AtomicU64,
    pub cache_hits: AtomicU64,
    pub answered: AtomicU64,
    pub blocked: AtomicU64,
    pub pending: AtomicU64,
    pub cutoff: AtomicU64,
    pub refused: AtomicU64,
    pub malformed: AtomicU64,
    pub timeouts: AtomicU64,
    pub tcp_queries: AtomicU64,
    pub events_dropped: AtomicU64,
    pub panics: AtomicU64,
    pub safe_search: AtomicU64,
    pub bogus: AtomicU64,
    pub dot_queries: AtomicU64,
    pub doh_queries: AtomicU64,
}

impl Stats {
    pub fn line(&self) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "queries={} forwarded={} direct={} via_dnsmasq={} retries={} servfail={} mismatched={} late={} cache_hits={} answered={} blocked={} pending={} cutoff={} refused={} malformed={} timeouts={} tcp_queries={} events_dropped={} panics={} safe_search={} bogus={} dot_queries={} doh_queries={}",
            g(&self.queries), g(&self.forwarded), g(&self.direct), g(&self.via_dnsmasq), g(&self.retries),
            g(&self.servfail), g(&self.mismatched), g(&self.late), g(&self.cache_hits), g(&self.answered), g(&self.blocked), g(&self.pending),
            g(&self.cutoff), g(&self.refused), g(&self.malformed), g(&self.timeouts), g(&self.tcp_queries),
            g(&self.events_dropped), g(&self.panics), g(&self.safe_search), g(&self.bogus), g(&self.dot_queries),
            g(&self.doh_queries)
        )
    }
}

pub struct Shared {
    pub policy: RwLock<Policy>,
    pub events: SyncSender<String>,
    pub stats: Stats,
    learned: Mutex<HashMap<String, (Instant, u64)>>,
    cache: Mutex<Cache>,
    /// With a validating resolver: where its SERVFAILs go to be told apart (bogus.rs).
    pub bogus: OnceLock<crate::bogus::Prober>,
    /// The router's encrypted DNS, announced to devices that ask (ddr.rs).
    pub endpoints: OnceLock<crate::ddr::Endpoints>,
}

impl Shared {
    pub fn new(events: SyncSender<String>) -> Arc<Shared> {
        Arc::new(Shared { policy: RwLock::new(Policy::default()), events, stats: Stats::default(), learned: Mutex::new(HashMap::new()),
                    cache: Mutex::new(Cache::new(crate::cache::CAPACITY)), bogus: OnceLock::new(), endpoints: OnceLock::new() })
    }

    pub fn flush_cache(&self) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Events are best effort: if the controller falls behind, drop and count.
    fn emit(&self, line: String) {
        if let Err(TrySendError::Full(_)) = self.events.try_send(line) {
            self.stats.events_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn query_event(&self, mac: &str, qtype: u16, verdict: &str, latency_us: u64, name: &str) {
        self.emit(format!("q {} {} {} {} {}\n", mac, qtype, verdict, latency_us, if name.is_empty() { "." } else { name }));
    }
}

/// An allowed query on its way upstream.
pub struct Forward {
    pub mac: Arc<str>,
    pub name: String,
    pub qtype: u16,
    /// Set for restricted devices: their answers' CNAME targets are checked too.
    check: Option<Device>,
    /// None for queries the cache does not handle.
    key: Option<Key>,
    question_end: usize,
    /// Safe-search: the query goes upstream for the engine's safe host instead.
    pub safe: Option<Box<SafeSearch>>,
    /// The client set "checking disabled": cleared on the way to a validating resolver
    /// (every answer a device gets is validated), set again in the answer it gets.
    pub cd: bool,
}

/// A query answered with a CNAME to a search engine's safe host (safesearch.rs).
pub struct SafeSearch {
    /// The client's own query (header and question), for the answer.
    original: Vec<u8>,
    question: wire::Question,
    target: &'static str,
    /// What goes upstream: the same query for `target`.
    pub upstream_query: Vec<u8>,
}

impl Forward {
    /// The bytes to send upstream: the client's query, or its safe-search rewrite.
    pub fn upstream_query<'a>(&'a self, client_query: &'a [u8]) -> &'a [u8] {
        self.safe.as_ref().map_or(client_query, |s| &s.upstream_query)
    }
}

pub enum Outcome {
    Reply(Vec<u8>),
    Drop,
    Forward(Forward),
}

fn read_policy(shared: &Shared) -> std::sync::RwLockReadGuard<'_, Policy> {
    shared.policy.read().unwrap_or_else(|e| e.into_inner())
}

/// Decide what to do with one query from `src`.
pub fn handle(shared: &Shared, src: IpAddr, buf: &[u8], tcp: bool) -> Outcome {
    shared.stats.queries.fetch_add(1, Ordering::Relaxed);
    let q = match wire::parse_query(buf) {
        Ok(q) => q,
        Err(e) => {
            shared.stats.malformed.fetch_add(1, Ordering::Relaxed);
            return match e {
                wire::WireError::Format => wire::reply_header_only(buf, wire::RCODE_FORMERR).map_or(Outcome::Drop, Outcome::Reply),
                wire::WireError::NotImplemented => wire::reply_header_only(buf, wire::RCODE_NOTIMP).map_or(Outcome::Drop, Outcome::Reply),
                _ => Outcome::Drop,
            };
        }
    };
    let policy = read_policy(shared);
    let dev = match policy.devices.get(&crate::policy::device_key(src)) {
        Some(d) => d,
        None => {
            // Not a leased device address: we do not know whose policy applies.
            shared.stats.refused.fetch_add(1, Ordering::Relaxed);
            shared.query_event("-", q.qtype, "unknown", 0, &q.name);
            return Outcome::Reply(wire::reply(buf, &q, wire::RCODE_REFUSED));
        }
    };
    if let (Some(endpoints), false) = (shared.endpoints.get(), dev.state == crate::policy::State::Blacklisted) {
        // Discovery of the router's encrypted DNS, and the router's own name: every device
        // may know them (a pending one then gets its waiting-page answers over TLS too).
        let gateways = crate::ddr::Gateways { v4: dev.router, v6: dev.router6 };
        if let Some(answer) = endpoints.answer(buf, &q, &gateways) {
            shared.stats.answered.fetch_add(1, Ordering::Relaxed);
            shared.query_event(&dev.mac, q.qtype, "allowed", 0, &q.name);
            return Outcome::Reply(answer);
        }
    }
    let verdict = policy.decide(dev, &q.name);
    let outcome = match verdict {
        Verdict::Allowed => {
            let check = if policy.restricted(dev) { Some(dev.clone()) } else { None };
            let safe = if policy.safe_search { crate::safesearch::target(&q.name) } else { None };
            if let Some(target) = safe {
                // Not cached: the cache is keyed by the client's question, this answer is built.
                let upstream_query = wire::with_question(buf, &q, target);
                let safe = SafeSearch { original: buf[..q.end].to_vec(), question: q.clone(), target, upstream_query };
                let question_end = safe.upstream_query.len();
                return Outcome::Forward(Forward { mac: dev.mac.clone(), name: q.name, qtype: q.qtype, check, key: None,
                                                  question_end, safe: Some(Box::new(safe)), cd: false });
            }
            let key = Key::of(buf, &q, tcp);
            return Outcome::Forward(Forward { mac: dev.mac.clone(), name: q.name, qtype: q.qtype, check, key, question_end: q.end,
                                              safe: None, cd: false });
        }
        Verdict::Blocked if policy.drop_blocked => Outcome::Drop,
        Verdict::Blocked | Verdict::Bypass => Outcome::Reply(wire::reply(buf, &q, wire::RCODE_NXDOMAIN)),
        Verdict::Pending | Verdict::CutOff => Outcome::Reply(wire::captive(buf, &q, dev.router, dev.router6)),
        Verdict::Blacklisted => Outcome::Drop,
    };
    let counter = match verdict {
        Verdict::Pending => &shared.stats.pending,
        Verdict::CutOff => &shared.stats.cutoff,
        _ => &shared.stats.blocked,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    shared.query_event(&dev.mac, q.qtype, verdict.as_str(), 0, &q.name);
    outcome
}

/// Post-process an upstream's answer: CNAME check for restricted devices, learning, logging.
/// Returns a replacement answer when the original must not reach the device.
pub fn finish(shared: &Shared, fwd: &Forward, answer_buf: &[u8], latency_us: u64) -> Option<Vec<u8>> {
    let answer = wire::parse_answer(answer_buf);
    let mut verdict = "allowed";
    let mut replacement = None;
    if let Some(ans) = &answer {
        replacement = cname_check(shared, fwd, &ans.cnames, answer_buf, ans.question_end);
        if replacement.is_some() {
            verdict = "blocked";
        }
        if !ans.addrs.is_empty() {
            learn(shared, fwd, ans);
        }
        if let Some(key) = &fwd.key {
            // The raw answer: other devices may use it; the CNAME check runs on every hit.
            let mut cache = shared.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.insert(key.clone(), answer_buf, ans.cnames.clone(), Instant::now());
        }
    }
    shared.stats.answered.fetch_add(1, Ordering::Relaxed);
    match (answer.as_ref().map(|a| a.rcode), shared.bogus.get()) {
        // Was it DNSSEC? The prober asks again with checking disabled, then logs the query.
        (Some(wire::RCODE_SERVFAIL), Some(prober)) => prober.check(shared, fwd, latency_us),
        _ => shared.query_event(&fwd.mac, fwd.qtype, verdict, latency_us, &fwd.name),
    }
    if let (None, Some(safe), Some(ans)) = (&replacement, &fwd.safe, &answer) {
        shared.stats.safe_search.fetch_add(1, Ordering::Relaxed);
        return Some(wire::alias_answer(&safe.original, &safe.question, safe.target, ans));
    }
    replacement
}

/// For restricted devices: an answer that aliases to a blocked name becomes NXDOMAIN
/// (or nothing, with blocked_answer = "drop"). None: send the answer as it is.
fn cname_check(shared: &Shared, fwd: &Forward, cnames: &[String], answer_buf: &[u8], question_end: usize) -> Option<Vec<u8>> {
    let dev = fwd.check.as_ref()?;
    let policy = read_policy(shared);
    if !cnames.iter().any(|c| policy.name_allowed(dev, c) == Verdict::Blocked) {
        return None;
    }
    shared.stats.blocked.fetch_add(1, Ordering::Relaxed);
    Some(if policy.drop_blocked { Vec::new() } else {
        wire::nxdomain_from_answer(answer_buf, question_end).unwrap_or_default()
    })
}

/// The answer to an allowed query from the cache, if it has a fresh one; an empty
/// reply means "send nothing". `t0`: when the query arrived (for the latency logged).
pub fn from_cache(shared: &Shared, fwd: &Forward, query: &[u8], t0: Instant) -> Option<Vec<u8>> {
    let key = fwd.key.as_ref()?;
    let hit = shared.cache.lock().unwrap_or_else(|e| e.into_inner()).get(key, query, fwd.question_end, Instant::now())?;
    shared.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
    let replacement = cname_check(shared, fwd, &hit.cnames, &hit.answer, fwd.question_end);
    let verdict = if replacement.is_some() { "blocked" } else { "allowed" };
    shared.query_event(&fwd.mac, fwd.qtype, verdict, t0.elapsed().as_micros() as u64, &fwd.name);
    Some(replacement.unwrap_or(hit.answer))
}

fn learn(shared: &Shared, fwd: &Forward, ans: &wire::Answer) {
    let mut addrs: Vec<String> = ans.addrs.iter().map(|a| a.to_string()).collect();
    addrs.sort();
    let digest = addrs.iter().fold(0xcbf29ce484222325u64, |h, a| {
        a.bytes().fold(h, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3))
    });
    {
        let mut learned = shared.learned.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if let Some((when, d)) = learned.get(&fwd.name) {
            if *d == digest && now.duration_since(*when) < RELEARN_AFTER {
                return;
            }
        }
        if learned.len() >= LEARNED_CAP {
            learned.clear();
        }
        learned.insert(fwd.name.clone(), (now, digest));
    }
    // The CNAME chain goes along: the addresses belong to every name in it.
    let chain = if ans.cnames.is_empty() { "-".to_string() } else { ans.cnames.join(",") };
    shared.emit(format!("a {} {} {} {} {}\n", fwd.mac, ans.min_ttl, if fwd.name.is_empty() { "." } else { &fwd.name },
                        addrs.join(","), chain));
}

/// Before a query goes to a validating resolver: clear its CD bit (every answer a device
/// gets is validated; the cache then holds validated answers only) and say whether it was
/// set. `query` is the client's message.
pub fn take_cd(query: &mut [u8], validating: bool) -> bool {
    let cd = validating && query.len() > 3 && query[3] & wire::FLAG_CD as u8 != 0;
    if cd {
        query[3] &= !(wire::FLAG_CD as u8);
    }
    cd
}

/// The answer to a client that set CD says so again (RFC 4035 3.2.2 copies the bit).
pub fn give_cd(answer: &mut [u8], cd: bool) {
    if cd && answer.len() > 3 {
        answer[3] |= wire::FLAG_CD as u8;
    }
}

pub fn guard<F: FnOnce()>(shared: &Shared, f: F) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        shared.stats.panics.fetch_add(1, Ordering::Relaxed);
    }
}

// ---------------------------------------------------------------------------- UDP

/// The routes (resolvers, dnsmasq) and the queries in flight: one lock, taken once per
/// query on the way out and once per answer on the way back.
pub struct Flight {
    pub upstreams: Upstreams,
    pub table: Table<Forward>,
}

fn lock_flight(flight: &Mutex<Flight>) -> std::sync::MutexGuard<'_, Flight> {
    flight.lock().unwrap_or_else(|e| e.into_inner())
}

/// No step left for `q` (or no room in the table): SERVFAIL, so the device moves on now
/// instead of waiting for its own timeout.
fn give_up(shared: &Shared, sock: &UdpSocket, mut q: InFlight<Forward>, timed_out: bool) {
    q.query[..2].copy_from_slice(&q.orig_id.to_be_bytes());
    if timed_out {
        shared.stats.timeouts.fetch_add(1, Ordering::Relaxed);
        shared.query_event(&q.data.mac, q.data.qtype, "timeout", q.t0.elapsed().as_micros() as u64, &q.data.name);
    }
    shared.stats.servfail.fetch_add(1, Ordering::Relaxed);
    if let Ok(parsed) = wire::parse_query(&q.query) {
        let _ = sock.send_to(&wire::reply(&q.query, &parsed, wire::RCODE_SERVFAIL), q.client);
    }
}

/// Sends upstream, by destination (a query that is retried counts once per try).
pub fn count_step(shared: &Shared, fallback: bool) {
    let counter = if fallback { &shared.stats.via_dnsmasq } else { &shared.stats.direct };
    counter.fetch_add(1, Ordering::Relaxed);
}

pub fn serve_udp(shared: Arc<Shared>, listen: SocketAddr, upstreams: Upstreams) -> std::io::Result<Vec<thread::JoinHandle<()>>> {
    let sock = UdpSocket::bind(listen)?;
    // One socket for every upstream, unconnected: answers are matched by sender, id and question.
    let up = UdpSocket::bind(if upstreams.fallback.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" })?;
    let validating = upstreams.validator().is_some();
    let flight = Arc::new(Mutex::new(Flight { upstreams, table: Table::new() }));
    let mut threads = Vec::new();

    {
        let (shared, sock, up, flight) = (shared.clone(), sock.try_clone()?, up.try_clone()?, flight.clone());
        threads.push(thread::Builder::new().name("udp-in".into()).spawn(move || {
            let mut buf = vec![0u8; 65535];
            loop {
                let (n, client) = match sock.recv_from(&mut buf) {
                    Ok(r) => r,
                    Err(_) => continue,
                };
                let t0 = Instant::now();
                let cd = take_cd(&mut buf[..n], validating);
                guard(&shared, || match handle(&shared, client.ip(), &buf[..n], false) {
                    Outcome::Reply(r) => {
                        let _ = sock.send_to(&r, client);
                    }
                    Outcome::Drop => {}
                    Outcome::Forward(mut fwd) => {
                        fwd.cd = cd;
                        if let Some(mut reply) = from_cache(&shared, &fwd, &buf[..n], t0) {
                            if !reply.is_empty() {
                                give_cd(&mut reply, cd);
                                let _ = sock.send_to(&reply, client);
                            }
                            return;
                        }
                        let question_end = fwd.question_end;
                        let rewritten = fwd.safe.is_some();
                        let q = InFlight::new(client, t0, fwd.upstream_query(&buf[..n]).to_vec(), question_end, fwd);
                        let sent = {
                            let mut f = lock_flight(&flight);
                            let step = f.upstreams.first(&q.data.name, t0);
                            let (addr, timeout, fallback) = (f.upstreams.addr(step).expect("first step exists"),
                                                             f.upstreams.timeout(step), f.upstreams.is_fallback(step));
                            f.table.insert(q, step, addr, timeout, t0)
                                .map(|id| (id, addr, fallback, if rewritten { f.table.query(id).to_vec() } else { Vec::new() }))
                        };
                        match sent {
                            Ok((id, addr, fallback, rewritten_query)) => {
                                buf[..2].copy_from_slice(&id.to_be_bytes());
                                shared.stats.forwarded.fetch_add(1, Ordering::Relaxed);
                                count_step(&shared, fallback);
                                let _ = up.send_to(if rewritten { &rewritten_query } else { &buf[..n] }, addr);
                            }
                            Err(q) => give_up(&shared, &sock, q, false),
                        }
                    }
                });
            }
        })?);
    }

    {
        let (shared, sock, up, flight) = (shared.clone(), sock.try_clone()?, up.try_clone()?, flight.clone());
        threads.push(thread::Builder::new().name("udp-up".into()).spawn(move || {
            let mut buf = vec![0u8; 65535];
            loop {
                let (n, from) = match up.recv_from(&mut buf) {
                    Ok(r) => r,
                    Err(_) => continue,
                };
                guard(&shared, || {
                    let taken = {
                        let mut f = lock_flight(&flight);
                        let taken = f.table.take_answer(from, &buf[..n]);
                        if let Ok(q) = &taken {
                            f.upstreams.answered(q.step);
                        }
                        taken
                    };
                    let q = match taken {
                        Ok(q) => q,
                        Err(Reject::Mismatch) => {
                            shared.stats.mismatched.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                        Err(Reject::UnknownId) => {
                            shared.stats.late.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                    };
                    buf[..2].copy_from_slice(&q.orig_id.to_be_bytes());
                    let latency = q.t0.elapsed().as_micros() as u64;
                    match finish(&shared, &q.data, &buf[..n], latency) {
                        None => {
                            give_cd(&mut buf[..n], q.data.cd);
                            let _ = sock.send_to(&buf[..n], q.client);
                        }
                        Some(mut r) if !r.is_empty() => {
                            give_cd(&mut r, q.data.cd);
                            let _ = sock.send_to(&r, q.client);
                        }
                        Some(_) => {}
                    }
                });
            }
        })?);
    }

    {
        // Timeouts: a query whose upstream is silent moves on to the next upstream, then
        // dnsmasq, then SERVFAIL. Also notices a new resolv file (the WAN lease renewed).
        let (shared, flight) = (shared.clone(), flight);
        threads.push(thread::Builder::new().name("udp-timer".into()).spawn(move || {
            let mut last_reload = Instant::now();
            loop {
                thread::sleep(TIMER_TICK);
                guard(&shared, || sweep(&shared, &flight, &sock, &up, &mut last_reload));
            }
        })?);
    }
    Ok(threads)
}

/// One timer tick: resend timed-out queries to their next step, SERVFAIL the rest.
pub fn sweep(shared: &Shared, flight: &Mutex<Flight>, sock: &UdpSocket, up: &UdpSocket, last_reload: &mut Instant) {
    let now = Instant::now();
    let mut resend = Vec::new();
    let mut failed = Vec::new();
    {
        let mut f = lock_flight(flight);
        if now.duration_since(*last_reload) >= RELOAD_EVERY {
            *last_reload = now;
            if f.upstreams.reload() {
                let list: Vec<String> = f.upstreams.resolvers.iter().map(|r| r.addr.to_string()).collect();
                eprintln!("homework-dnsd: upstream resolvers: {}", if list.is_empty() { "none (all via dnsmasq)".into() } else { list.join(" ") });
            }
        }
        for q in f.table.expired(now) {
            let next = f.upstreams.after_timeout(q.step, now).and_then(|s| f.upstreams.addr(s).map(|a| (s, a)));
            let Some((step, addr)) = next else {
                failed.push(q);
                continue;
            };
            let (timeout, fallback) = (f.upstreams.timeout(step), f.upstreams.is_fallback(step));
            match f.table.insert(q, step, addr, timeout, now) {
                Ok(id) => resend.push((addr, fallback, f.table.query(id).to_vec())),
                Err(q) => failed.push(q),
            }
        }
    }
    for (addr, fallback, query) in resend {
        shared.stats.retries.fetch_add(1, Ordering::Relaxed);
        count_step(shared, fallback);
        let _ = up.send_to(&query, addr);
    }
    for q in failed {
        give_up(shared, sock, q, true);
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
