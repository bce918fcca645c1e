//! The controller's connection: policy updates in, query events out, over one Unix
//! stream socket. Lines in (applied atomically at `sync`, so a half-sent batch is never
//! visible to queries):
//!
//!   reset                                       forget every device and rule
//!   blocked nxdomain|drop                       how blocked names are answered
//!   device IP MAC STATE denylist|allowlist ROUTER [ROUTER6]   IP: an IPv4 address, or any
//!                                               address of the device's IPv6 /64 (ROUTER: its
//!                                               IPv4 .1; ROUTER6: the ::1 of its /64)
//!   nodevice IP
//!   rule OWNER DOMAIN allow|deny                OWNER is a MAC or * (household)
//!   unrule OWNER DOMAIN
//!   list ID MACS PATH                           a blocklist (blocklist.rs): PATH holds one name per
//!                                               line; MACS is * (every device) or MAC,MAC,... (the
//!                                               devices of the owner it was added for). The file is
//!                                               read when the line arrives, before `sync`, off the
//!                                               query path; queries see the new list at `sync`.
//!                                               A list sent again unchanged (same path, size, mtime)
//!                                               is not read again. A file that cannot be read or
//!                                               parsed: `error` at sync, the list in force stays.
//!   unlist ID
//!   safesearch on|off                           answer search engines with their safe hosts
//!   flushcache                                  forget every cached answer (the resolver's DNSSEC
//!                                               settings changed; cached answers may not hold)
//!   sync TOKEN                                  -> "ok TOKEN devices=N rules=M" (or "error TOKEN ...")
//!   stats                                       -> "stats k=v ..." (list_blocked.ID=N: queries each
//!                                               blocklist blocked since dnsd started; list_names.ID=N)
//!
//! Lines out: `q MAC QTYPE VERDICT LATENCY_US NAME COUNT` per distinct query of a batch, `a MAC TTL NAME ADDR,ADDR CNAME,CNAME|-`
//! per learned answer. A new connection replaces the old one (controller restart); the
//! last policy stays in force meanwhile, so DNS keeps working while the controller restarts.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::IpAddr;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::thread;

use crate::blocklist::{self, Blocklist, NameSet};
use crate::policy::{Action, Device, State, HOUSEHOLD};
use crate::server::Shared;

type Sink = Arc<Mutex<Option<UnixStream>>>;

const BATCH_WAIT: std::time::Duration = std::time::Duration::from_millis(20);
const BATCH_LINES: usize = 20_000;

/// `q MAC QTYPE VERDICT LATENCY NAME` lines -> `q MAC QTYPE VERDICT MEAN_LATENCY NAME COUNT`,
/// one per distinct (MAC, QTYPE, VERDICT, NAME), in first-seen order; other lines as they are.
pub fn merge_queries(lines: &[String], out: &mut String) {
    let mut index: HashMap<(&str, &str, &str, &str), usize> = HashMap::new();
    let mut merged: Vec<(&str, &str, &str, &str, u64, u64)> = Vec::new();
    for line in lines {
        let parts: Vec<&str> = line.trim_end().splitn(6, ' ').collect();
        if parts.len() == 6 && parts[0] == "q" {
            let latency: u64 = parts[4].parse().unwrap_or(0);
            let key = (parts[1], parts[2], parts[3], parts[5]);
            match index.get(&key) {
                Some(&i) => {
                    merged[i].4 += latency;
                    merged[i].5 += 1;
                }
                None => {
                    index.insert(key, merged.len());
                    merged.push((parts[1], parts[2], parts[3], parts[5], latency, 1));
                }
            }
        } else {
            out.push_str(line);
        }
    }
    for (mac, qtype, verdict, name, latency, count) in merged {
        out.push_str(&format!("q {mac} {qtype} {verdict} {} {name} {count}\n", latency / count));
    }
}

enum Change {
    Reset,
    Blocked(bool),
    Device(IpAddr, Device),
    NoDevice(IpAddr),
    Rule(String, String, Option<Action>),
    List(Arc<Blocklist>),
    Unlist(String),
    SafeSearch(bool),
    FlushCache,
}

/// Lists read so far, so a list sent again (controller reconnect, an owner's devices
/// changed) is not read again, and per-list counters outlive a controller restart.
#[derive(Default)]
pub struct Loaded {
    files: HashMap<String, (String, u64, std::time::SystemTime, Arc<NameSet>)>,
    counters: HashMap<String, Arc<AtomicU64>>,
}

impl Loaded {
    fn list(&mut self, id: &str, macs: &str, path: &str) -> Result<Blocklist, String> {
        let meta = std::fs::metadata(path).map_err(|e| format!("list {id}: cannot read {path}: {e}"))?;
        let (len, mtime) = (meta.len(), meta.modified().map_err(|e| e.to_string())?);
        let names = match self.files.get(id) {
            Some((p, l, m, names)) if p == path && *l == len && *m == mtime => names.clone(),
            _ => {
                let t0 = std::time::Instant::now();
                let names = Arc::new(blocklist::load(path).map_err(|e| format!("list {id}: {e}"))?);
                eprintln!("homework-dnsd: list {id}: {} names loaded in {} ms", names.len(), t0.elapsed().as_millis());
                self.files.insert(id.to_string(), (path.to_string(), len, mtime, names.clone()));
                names
            }
        };
        let macs = if macs == HOUSEHOLD { None } else { Some(macs.split(',').filter(|m| !m.is_empty()).map(Arc::from).collect()) };
        let blocked = self.counters.entry(id.to_string()).or_default().clone();
        Ok(Blocklist { id: id.to_string(), macs, names, blocked })
    }

    fn forget(&mut self, id: &str) {
        self.files.remove(id);
    }
}

fn parse_line(line: &str, loaded: &Mutex<Loaded>) -> Result<Change, String> {
    let parts: Vec<&str> = line.split_whitespace().collect();
    let bad = || format!("bad line: {line}");
    match parts.as_slice() {
        ["reset"] => Ok(Change::Reset),
        ["blocked", "nxdomain"] => Ok(Change::Blocked(false)),
        ["blocked", "drop"] => Ok(Change::Blocked(true)),
        ["device", ip, mac, state, mode, router, rest @ ..] if rest.len() <= 1 => {
            let ip: IpAddr = ip.parse().map_err(|_| bad())?;
            let state = match *state {
                "pending" => State::Pending,
                "permitted" => State::Permitted,
                "denied" => State::Denied,
                "blacklisted" => State::Blacklisted,
                "cutoff" => State::CutOff,
                _ => return Err(bad()),
            };
            let allowlist = match *mode {
                "allowlist" => true,
                "denylist" => false,
                _ => return Err(bad()),
            };
            let router = router.parse().map_err(|_| bad())?;
            // the router's address in the device's /64, with IPv6 on
            let router6 = match rest {
                [r6] => Some(r6.parse().map_err(|_| bad())?),
                _ => None,
            };
            Ok(Change::Device(ip, Device { mac: Arc::from(*mac), state, allowlist, router, router6 }))
        }
        ["nodevice", ip] => Ok(Change::NoDevice(ip.parse().map_err(|_| bad())?)),
        ["rule", owner, domain, action] => {
            let action = match *action {
                "allow" => Action::Allow,
                "deny" => Action::Deny,
                _ => return Err(bad()),
            };
            Ok(Change::Rule(owner.to_string(), domain.to_string(), Some(action)))
        }
        ["unrule", owner, domain] => Ok(Change::Rule(owner.to_string(), domain.to_string(), None)),
        ["list", id, macs, path] => {
            let list = loaded.lock().unwrap_or_else(|e| e.into_inner()).list(id, macs, path)?;
            Ok(Change::List(Arc::new(list)))
        }
        ["unlist", id] => {
            loaded.lock().unwrap_or_else(|e| e.into_inner()).forget(id);
            Ok(Change::Unlist(id.to_string()))
        }
        ["safesearch", "on"] => Ok(Change::SafeSearch(true)),
        ["safesearch", "off"] => Ok(Change::SafeSearch(false)),
        ["flushcache"] => Ok(Change::FlushCache),
        _ => Err(bad()),
    }
}

fn apply(shared: &Shared, batch: Vec<Change>) -> (usize, usize) {
    let mut p = shared.policy.write().unwrap_or_else(|e| e.into_inner());
    for change in batch {
        match change {
            Change::Reset => p.clear(),
            Change::Blocked(drop) => p.drop_blocked = drop,
            Change::Device(ip, dev) => {
                p.devices.insert(crate::policy::device_key(ip), dev);
            }
            Change::NoDevice(ip) => {
                p.devices.remove(&crate::policy::device_key(ip));
            }
            Change::Rule(owner, domain, action) => {
                let owner = if owner == HOUSEHOLD { HOUSEHOLD } else { owner.as_str() };
                p.set_rule(owner, &domain, action);
            }
            Change::List(list) => {
                let id = list.id.clone();
                p.set_list(&id, Some(list));
            }
            Change::Unlist(id) => p.set_list(&id, None),
            Change::SafeSearch(on) => p.safe_search = on,
            Change::FlushCache => shared.flush_cache(),
        }
    }
    (p.devices.len(), p.rule_count())
}

fn send(sink: &Sink, line: &str) {
    let mut guard = sink.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(stream) = guard.as_mut() {
        if stream.write_all(line.as_bytes()).is_err() {
            *guard = None;
        }
    }
}

/// The `stats` line: dnsd's counters, then each list's.
fn stats_line(shared: &Shared) -> String {
    let mut line = format!("stats {}", shared.stats.line());
    let p = shared.policy.read().unwrap_or_else(|e| e.into_inner());
    for list in &p.lists {
        line.push_str(&format!(" list_blocked.{}={} list_names.{}={}", list.id, list.blocked.load(Ordering::Relaxed),
                               list.id, list.names.len()));
    }
    line.push('\n');
    line
}

fn serve_connection(shared: Arc<Shared>, sink: Sink, stream: UnixStream, loaded: Arc<Mutex<Loaded>>) {
    let reader = BufReader::new(stream);
    let mut batch = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    for line in reader.lines() {
        let Ok(line) = line else { break };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(token) = line.strip_prefix("sync") {
            let token = token.trim();
            let (devices, rules) = apply(&shared, std::mem::take(&mut batch));
            if errors.is_empty() {
                send(&sink, &format!("ok {token} devices={devices} rules={rules}\n"));
            } else {
                send(&sink, &format!("error {token} {}\n", errors.join("; ")));
                errors.clear();
            }
        } else if line == "stats" {
            send(&sink, &stats_line(&shared));
        } else {
            match parse_line(line, &loaded) {
                Ok(change) => batch.push(change),
                Err(e) => errors.push(e),
            }
        }
    }
}

pub fn serve(shared: Arc<Shared>, path: &str, events: Receiver<String>) -> std::io::Result<()> {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    let sink: Sink = Arc::new(Mutex::new(None));
    let loaded = Arc::new(Mutex::new(Loaded::default()));

    // Event writer: batches whatever is queued into one write, merging identical query
    // events (same device, type, verdict, name) of one batch into one line with a count, so
    // a flood of queries costs the controller one event per distinct query, not per packet.
    {
        let (sink, shared) = (sink.clone(), shared.clone());
        thread::Builder::new().name("events".into()).spawn(move || {
            let mut out = String::with_capacity(1 << 16);
            while let Ok(first) = events.recv() {
                thread::sleep(BATCH_WAIT);
                let mut lines = vec![first];
                while lines.len() < BATCH_LINES {
                    match events.try_recv() {
                        Ok(line) => lines.push(line),
                        Err(_) => break,
                    }
                }
                out.clear();
                merge_queries(&lines, &mut out);
                let connected = sink.lock().map(|g| g.is_some()).unwrap_or(false);
                if connected {
                    send(&sink, &out);
                } else {
                    shared.stats.events_dropped.fetch_add(lines.len() as u64, Ordering::Relaxed);
                }
            }
        })?;
    }

    thread::Builder::new().name("control".into()).spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let Ok(writer) = conn.try_clone() else { continue };
            *sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(writer);
            let (shared, sink, loaded) = (shared.clone(), sink.clone(), loaded.clone());
            let _ = thread::Builder::new().name("control-conn".into()).spawn(move || serve_connection(shared, sink, conn, loaded));
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn list_lines_load_once_and_keep_counts() {
        use std::sync::atomic::Ordering;
        let dir = std::env::temp_dir().join(format!("dnsd-list-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("1.list");
        std::fs::write(&path, "ads.test\n").unwrap();
        let loaded = std::sync::Mutex::new(super::Loaded::default());
        let line = format!("list 1 aa:bb,cc:dd {}", path.display());
        let super::Change::List(a) = super::parse_line(&line, &loaded).unwrap() else { panic!() };
        a.blocked.fetch_add(3, Ordering::Relaxed);
        let super::Change::List(b) = super::parse_line(&line, &loaded).unwrap() else { panic!() };
        assert!(std::sync::Arc::ptr_eq(&a.names, &b.names));          // not read again
        assert_eq!(b.blocked.load(Ordering::Relaxed), 3);
        assert!(b.applies_to("cc:dd") && !b.applies_to("ee:ff"));
        assert!(super::parse_line(&format!("list 2 * {}", dir.join("missing").display()), &loaded).is_err());
        std::fs::write(&path, "bad name\n").unwrap();
        assert!(super::parse_line(&format!("list 3 * {}", path.display()), &loaded).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn device_lines_take_a_cut_off_state_and_the_routers_ipv6_address() {
        let loaded = std::sync::Mutex::new(super::Loaded::default());
        let parse = |line: &str| super::parse_line(line, &loaded);
        let Ok(super::Change::Device(_, d)) = parse("device 10.2.0.2 aa:bb cutoff denylist 10.2.0.1 2001:db8:0:1::1") else {
            panic!("a cut-off device with the router's IPv6 address")
        };
        assert_eq!(d.state, crate::policy::State::CutOff);
        assert_eq!(d.router6, Some("2001:db8:0:1::1".parse().unwrap()));
        let Ok(super::Change::Device(_, d)) = parse("device 10.2.0.2 aa:bb pending denylist 10.2.0.1") else { panic!() };
        assert_eq!((d.state, d.router6), (crate::policy::State::Pending, None));
        assert!(parse("device 10.2.0.2 aa:bb paused denylist 10.2.0.1").is_err());
        assert!(parse("device 10.2.0.2 aa:bb cutoff denylist 10.2.0.1 not-an-address").is_err());
        assert!(parse("device 10.2.0.2 aa:bb cutoff denylist 10.2.0.1 2001:db8::1 extra").is_err());
    }

    #[test]
    fn identical_queries_are_merged_with_a_count() {
        let lines: Vec<String> = ["q aa 1 allowed 100 x.test\n", "a aa 30 x.test 1.2.3.4 -\n", "q aa 1 allowed 300 x.test\n",
                                  "q bb 1 allowed 50 x.test\n"].iter().map(|s| s.to_string()).collect();
        let mut out = String::new();
        super::merge_queries(&lines, &mut out);
        assert_eq!(out, "a aa 30 x.test 1.2.3.4 -\nq aa 1 allowed 200 x.test 2\nq bb 1 allowed 50 x.test 1\n");
    }
}
