//! Where an allowed query goes when the cache cannot answer it, and the table of queries
//! in flight.
//!
//! Names of the household (single labels, the local domains, reverse names of private
//! address ranges) go to dnsmasq, the only one that knows them. Every other name goes to
//! the validating resolver (unbound, `--resolver`) when there is one: it checks DNSSEC and
//! speaks to the household's chosen upstreams (plain or over TLS), so nothing may go around
//! it; a query it does not answer in time gets SERVFAIL. Without one, every other name goes
//! straight to the upstream resolvers: the ones in the resolv file the WAN's DHCP lease
//! writes, the same file dnsmasq reads, so the two never disagree. An upstream that does
//! not answer in time is skipped for a while and the query moves on to the next one, then
//! to dnsmasq as the fallback, then SERVFAIL.
//!
//! In flight: upstream ids are random (not sequential) and an answer counts only if it
//! comes from the address the query went to, under an id we gave, with the question we
//! asked; anything else is dropped and counted, so a spoofed answer has to guess the id
//! and the source port (the kernel picks a random ephemeral one).

use std::collections::hash_map::RandomState;
use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use crate::wire;

/// How long one upstream resolver gets before the query moves on.
pub const RESOLVER_TIMEOUT: Duration = Duration::from_millis(700);
/// dnsmasq (local names, and the last try) may itself be waiting on an upstream.
pub const FALLBACK_TIMEOUT: Duration = Duration::from_millis(1500);
/// The validating resolver may be fetching a chain of keys, or opening a TLS connection
/// upstream; it is the only way out, so it gets as long as a stub resolver waits.
pub const VALIDATOR_TIMEOUT: Duration = Duration::from_millis(4000);
/// A resolver that let a query time out is not tried first for this long.
pub const DOWN_FOR: Duration = Duration::from_secs(10);
const MAX_RESOLVERS: usize = 8;

// ------------------------------------------------------------------------ routing

pub struct Resolver {
    pub addr: SocketAddr,
    down_until: Option<Instant>,
}

/// The upstream resolvers (from the resolv file, or the one validating resolver) and
/// dnsmasq, the fallback.
pub struct Upstreams {
    pub fallback: SocketAddr,
    pub resolvers: Vec<Resolver>,
    resolv_file: Option<PathBuf>,
    seen: Option<SystemTime>,
    route: Route,
}

/// Where a query over TCP goes (one connection per client, no retries): the household's
/// names to dnsmasq, the rest to the validating resolver, or to dnsmasq without one.
#[derive(Clone, Debug)]
pub struct Route {
    pub fallback: SocketAddr,
    pub validator: Option<SocketAddr>,
    local_domains: Vec<String>,
}

impl Route {
    pub fn new(fallback: SocketAddr, validator: Option<SocketAddr>, local_domains: Vec<String>) -> Route {
        Route { fallback, validator, local_domains }
    }

    pub fn tcp_target(&self, name: &str) -> SocketAddr {
        match self.validator {
            Some(v) if !self.local(name) => v,
            _ => self.fallback,
        }
    }

    /// Names only dnsmasq can answer: the household's own.
    pub fn local(&self, name: &str) -> bool {
        !name.contains('.')
            || self.local_domains.iter().any(|d| name == d || (name.ends_with(d.as_str()) && name.as_bytes()[name.len() - d.len() - 1] == b'.'))
            || private_reverse(name)
    }
}

/// Step `i` of a query's route: resolver i, or dnsmasq when i == resolvers.len().
pub type Step = usize;

impl Upstreams {
    pub fn new(fallback: SocketAddr, resolv_file: Option<PathBuf>, local_domains: Vec<String>) -> Upstreams {
        let route = Route::new(fallback, None, local_domains);
        let mut u = Upstreams { fallback, resolvers: Vec::new(), resolv_file, seen: None, route };
        u.reload();
        u
    }

    /// Every name but the household's own goes to `validator`, and only there.
    pub fn validating(fallback: SocketAddr, validator: SocketAddr, local_domains: Vec<String>) -> Upstreams {
        Upstreams { fallback, resolvers: vec![Resolver { addr: validator, down_until: None }], resolv_file: None,
                    seen: None, route: Route::new(fallback, Some(validator), local_domains) }
    }

    /// The validating resolver, if answers must pass it.
    pub fn validator(&self) -> Option<SocketAddr> {
        self.route.validator
    }

    pub fn route(&self) -> Route {
        self.route.clone()
    }

    /// Re-read the resolv file if it changed (the WAN lease renewed with new servers).
    /// Returns true when the list was replaced.
    pub fn reload(&mut self) -> bool {
        let Some(path) = &self.resolv_file else { return false };
        let mtime = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if mtime == self.seen && (mtime.is_some() || self.resolvers.is_empty()) {
            return false;
        }
        self.seen = mtime;
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let addrs = parse_resolv(&text, self.fallback);
        let changed = addrs != self.resolvers.iter().map(|r| r.addr).collect::<Vec<_>>();
        if changed {
            self.resolvers = addrs.into_iter().map(|addr| Resolver { addr, down_until: None }).collect();
        }
        changed
    }

    #[cfg(test)]
    pub fn set_resolvers(&mut self, addrs: Vec<SocketAddr>) {
        self.resolvers = addrs.into_iter().map(|addr| Resolver { addr, down_until: None }).collect();
    }

    pub fn addr(&self, step: Step) -> Option<SocketAddr> {
        match step.cmp(&self.resolvers.len()) {
            std::cmp::Ordering::Less => Some(self.resolvers[step].addr),
            std::cmp::Ordering::Equal => Some(self.fallback),
            std::cmp::Ordering::Greater => None,
        }
    }

    pub fn timeout(&self, step: Step) -> Duration {
        match (step < self.resolvers.len(), self.route.validator.is_some()) {
            (true, true) => VALIDATOR_TIMEOUT,
            (true, false) => RESOLVER_TIMEOUT,
            (false, _) => FALLBACK_TIMEOUT,
        }
    }

    pub fn is_fallback(&self, step: Step) -> bool {
        step >= self.resolvers.len()
    }

    /// The first step for `name`: the first resolver that is up, or dnsmasq.
    pub fn first(&self, name: &str, now: Instant) -> Step {
        if self.local(name) {
            return self.resolvers.len();
        }
        if self.route.validator.is_some() {
            return 0; // never around it, even while it is slow
        }
        self.next_up(0, now)
    }

    /// After `step` timed out: mark its resolver down, return the next step (None: give up).
    pub fn after_timeout(&mut self, step: Step, now: Instant) -> Option<Step> {
        if step >= self.resolvers.len() || self.route.validator.is_some() {
            return None;
        }
        self.resolvers[step].down_until = Some(now + DOWN_FOR);
        Some(self.next_up(step + 1, now))
    }

    /// An answer came from resolver `step`: it is up again.
    pub fn answered(&mut self, step: Step) {
        if let Some(r) = self.resolvers.get_mut(step) {
            r.down_until = None;
        }
    }

    fn next_up(&self, from: Step, now: Instant) -> Step {
        (from..self.resolvers.len())
            .find(|&i| self.resolvers[i].down_until.is_none_or(|t| t <= now))
            .unwrap_or(self.resolvers.len())
    }

    /// Names only dnsmasq can answer: the household's own.
    pub fn local(&self, name: &str) -> bool {
        self.route.local(name)
    }
}

/// "nameserver X" lines; loopback addresses and dnsmasq itself are skipped (they would
/// send the query back into the router), as are addresses of the other family.
pub fn parse_resolv(text: &str, fallback: SocketAddr) -> Vec<SocketAddr> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("nameserver") {
            continue;
        }
        let Some(Ok(ip)) = words.next().map(|w| w.split('%').next().unwrap_or(w).parse::<IpAddr>()) else { continue };
        let addr = SocketAddr::new(ip, 53);
        if ip.is_loopback() || ip.is_unspecified() || addr == fallback || ip.is_ipv4() != fallback.is_ipv4()
            || out.contains(&addr) || out.len() >= MAX_RESOLVERS
        {
            continue;
        }
        out.push(addr);
    }
    out
}

/// PTR names of private, link-local and loopback addresses (the LAN pool among them):
/// no public resolver knows them (dnsmasq's bogus-priv answers them locally).
fn private_reverse(name: &str) -> bool {
    if let Some(rest) = name.strip_suffix(".in-addr.arpa").or(if name == "in-addr.arpa" { Some("") } else { None }) {
        let mut labels = rest.rsplit('.');
        let first: Option<u8> = labels.next().and_then(|l| l.parse().ok());
        let second: Option<u8> = labels.next().and_then(|l| l.parse().ok());
        return match (first, second) {
            (Some(10 | 127), _) => true,
            (Some(192), Some(168)) | (Some(169), Some(254)) => true,
            (Some(172), Some(s)) => (16..32).contains(&s),
            (Some(172 | 192 | 169), None) | (None, _) => true,
            _ => false,
        };
    }
    if let Some(rest) = name.strip_suffix(".ip6.arpa") {
        // nibbles, least significant first: fc00::/7 (ULA) and fe80::/10 (link-local)
        let top: String = rest.rsplit('.').take(3).collect();
        return top.starts_with("fc") || top.starts_with("fd") || ["fe8", "fe9", "fea", "feb"].contains(&top.as_str())
            || top.len() < 3;
    }
    false
}

// ------------------------------------------------------------------------ in flight

pub struct InFlight<T> {
    pub client: SocketAddr,
    pub orig_id: u16,
    /// When the client's query arrived (the latency logged).
    pub t0: Instant,
    /// The query as sent upstream (our id in it): resent as is to the next step.
    pub query: Vec<u8>,
    pub question_end: usize,
    pub step: Step,
    pub target: SocketAddr,
    pub data: T,
    gen: u32,
}

impl<T> InFlight<T> {
    pub fn new(client: SocketAddr, t0: Instant, query: Vec<u8>, question_end: usize, data: T) -> InFlight<T> {
        let orig_id = u16::from_be_bytes([query[0], query[1]]);
        InFlight { client, orig_id, t0, query, question_end, step: 0, target: fallback_unset(), data, gen: 0 }
    }
}

fn fallback_unset() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 0))
}

/// Why an answer was not accepted.
#[derive(Debug, PartialEq, Eq)]
pub enum Reject {
    /// No query of ours under that id (late answer after a retry, or a guess).
    UnknownId,
    /// Right id, wrong sender or wrong question: a spoofing attempt or a confused server.
    Mismatch,
}

/// (deadline, upstream id, generation) of the queries sent with one timeout, oldest first.
type Deadlines = VecDeque<(Instant, u16, u32)>;

/// Queries sent upstream and not yet answered, by upstream id (random), with a FIFO of
/// deadlines (every step's timeout is one of a few constants, so a queue per timeout keeps
/// them in order without a heap).
pub struct Table<T> {
    slots: Vec<Option<InFlight<T>>>,
    deadlines: Vec<(Duration, Deadlines)>,
    rng: u64,
    gen: u32,
    pub len: usize,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Table<T> {
    pub fn new() -> Table<T> {
        let mut h = RandomState::new().build_hasher();
        h.write_u128(SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        Table { slots: (0..65536).map(|_| None).collect(), deadlines: Vec::new(),
                rng: h.finish() | 1, gen: 0, len: 0 }
    }

    fn random_id(&mut self) -> u16 {
        // xorshift64*: cheap, and seeded per process from the std's random hasher keys
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545F4914F6CDD1D) >> 48) as u16
    }

    /// Put `q` in flight to `target` at `step`, under a fresh random id written into its
    /// query. Returns the id, or gives `q` back when the table is (nearly) full.
    pub fn insert(&mut self, mut q: InFlight<T>, step: Step, target: SocketAddr, timeout: Duration, now: Instant)
                  -> Result<u16, InFlight<T>> {
        for _ in 0..64 {
            let id = self.random_id();
            if self.slots[id as usize].is_some() {
                continue;
            }
            self.gen = self.gen.wrapping_add(1);
            q.gen = self.gen;
            q.step = step;
            q.target = target;
            q.query[..2].copy_from_slice(&id.to_be_bytes());
            let queue = match self.deadlines.iter().position(|(t, _)| *t == timeout) {
                Some(i) => i,
                None => {
                    self.deadlines.push((timeout, VecDeque::new()));
                    self.deadlines.len() - 1
                }
            };
            self.deadlines[queue].1.push_back((now + timeout, id, self.gen));
            self.slots[id as usize] = Some(q);
            self.len += 1;
            return Ok(id);
        }
        Err(q)
    }

    /// The query bytes in flight under `id` (as sent: our id in them).
    pub fn query(&self, id: u16) -> &[u8] {
        self.slots[id as usize].as_ref().map_or(&[], |q| &q.query)
    }

    /// The query an answer from `from` belongs to, taken out of the table.
    pub fn take_answer(&mut self, from: SocketAddr, answer: &[u8]) -> Result<InFlight<T>, Reject> {
        if answer.len() < wire::HEADER {
            return Err(Reject::UnknownId);
        }
        let id = u16::from_be_bytes([answer[0], answer[1]]);
        let slot = &mut self.slots[id as usize];
        let Some(q) = slot.as_ref() else { return Err(Reject::UnknownId) };
        if q.target != from || !same_question(&q.query, q.question_end, answer) {
            return Err(Reject::Mismatch);
        }
        self.len -= 1;
        Ok(slot.take().expect("checked above"))
    }

    /// Queries whose step timed out by `now`, taken out of the table.
    pub fn expired(&mut self, now: Instant) -> Vec<InFlight<T>> {
        let mut out = Vec::new();
        for (_, queue) in self.deadlines.iter_mut() {
            while let Some(&(deadline, id, gen)) = queue.front() {
                if deadline > now {
                    break;
                }
                queue.pop_front();
                let slot = &mut self.slots[id as usize];
                if slot.as_ref().is_some_and(|q| q.gen == gen) {
                    out.push(slot.take().expect("checked above"));
                    self.len -= 1;
                }
            }
        }
        out
    }
}

/// The answer repeats our question (QR set, one question, same name, type and class).
/// Names compare case-insensitively: resolvers may change the case.
fn same_question(query: &[u8], question_end: usize, answer: &[u8]) -> bool {
    answer.len() >= question_end
        && answer[2] & 0x80 != 0
        && answer[4..6] == [0, 1]
        && answer[wire::HEADER..question_end].eq_ignore_ascii_case(&query[wire::HEADER..question_end])
}

#[cfg(test)]
#[path = "forward_tests.rs"]
mod tests;
