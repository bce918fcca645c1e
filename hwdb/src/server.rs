//! The daemon's glue: an SRPC handler that feeds requests to the database and hands
//! subscription results to one delivery thread per subscriber, so a slow or dead
//! subscriber never holds up inserts.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender, TrySendError};
use std::time::Duration;

use crate::ast::Subscription;
use crate::engine::{Database, Notification};
use crate::srpc::client::Client;
use crate::srpc::server::Handler;
use crate::srpc::Timing;

/// Notifications queued per subscriber before new ones are dropped.
const QUEUE_PER_SUBSCRIBER: usize = 256;

pub struct Notifier {
    workers: HashMap<Subscription, SyncSender<String>>,
    dead_tx: Sender<Subscription>,
    dead_rx: Receiver<Subscription>,
    /// How long a callback may take before the subscriber is declared dead.
    pub timeout: Duration,
    pub timing: Timing,
}

impl Notifier {
    pub fn new(timeout: Duration, timing: Timing) -> Notifier {
        let (dead_tx, dead_rx) = channel();
        Notifier { workers: HashMap::new(), dead_tx, dead_rx, timeout, timing }
    }

    pub fn dispatch(&mut self, notes: Vec<Notification>) {
        for n in notes {
            let tx = match self.workers.get(&n.subscriber) {
                Some(tx) => tx.clone(),
                None => {
                    let tx = self.spawn(n.subscriber.clone());
                    self.workers.insert(n.subscriber.clone(), tx.clone());
                    tx
                }
            };
            match tx.try_send(n.payload) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    log(&format!("subscriber {}:{} is slow; a notification for {} was dropped", n.subscriber.host, n.subscriber.port, n.subscriber.query))
                }
                Err(TrySendError::Disconnected(_)) => {
                    self.workers.remove(&n.subscriber);
                }
            }
        }
    }

    fn spawn(&self, sub: Subscription) -> SyncSender<String> {
        let (tx, rx) = sync_channel::<String>(QUEUE_PER_SUBSCRIBER);
        let dead = self.dead_tx.clone();
        let (timeout, timing) = (self.timeout, self.timing.clone());
        std::thread::spawn(move || {
            let addr = format!("{}:{}", sub.host, sub.port);
            let mut client = None;
            while let Ok(payload) = rx.recv() {
                if client.is_none() {
                    match Client::connect_with(addr.as_str(), &sub.service, timeout, timing.clone()) {
                        Ok(c) => client = Some(c),
                        Err(e) => {
                            log(&format!("subscriber {addr} ({}) unreachable: {e}; dropping it", sub.query));
                            let _ = dead.send(sub);
                            return;
                        }
                    }
                }
                if let Err(e) = client.as_mut().expect("connected").call(payload.as_bytes()) {
                    log(&format!("subscriber {addr} ({}) stopped answering: {e}; dropping it", sub.query));
                    let _ = dead.send(sub);
                    return;
                }
            }
        });
        tx
    }

    /// Subscribers whose delivery thread gave up since the last call.
    pub fn take_dead(&mut self) -> Vec<Subscription> {
        let dead: Vec<Subscription> = self.dead_rx.try_iter().collect();
        for d in &dead {
            self.workers.remove(d);
        }
        dead
    }

    /// Stop delivery threads of subscriptions that no longer exist.
    pub fn retain(&mut self, live: &[Subscription]) {
        self.workers.retain(|s, _| live.contains(s));
    }
}

pub fn log(msg: &str) {
    eprintln!("hwdbd: {msg}");
}

/// The SRPC handler of `hwdbd`.
pub struct HwdbService {
    pub db: Database,
    pub notifier: Notifier,
}

impl HwdbService {
    pub fn new(db: Database, notifier: Notifier) -> HwdbService {
        HwdbService { db, notifier }
    }

    fn reap(&mut self) {
        for d in self.notifier.take_dead() {
            self.db.drop_subscriber(&d);
        }
    }
}

impl Handler for HwdbService {
    fn handle(&mut self, _peer: SocketAddr, request: &[u8]) -> Vec<u8> {
        self.reap();
        let response = self.db.handle_request(request);
        let notes = self.db.take_notifications();
        self.notifier.retain(self.db.subscriptions());
        if !notes.is_empty() {
            self.notifier.dispatch(notes);
        }
        response.into_bytes()
    }

    fn idle(&mut self) {
        self.reap();
    }
}

/// Run every statement of a schema file (`;`-separated, `--` and `#` comments).
pub fn load_schema(db: &mut Database, text: &str) -> Result<usize, String> {
    let cleaned: String = text
        .lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("--") || t.starts_with('#') {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut n = 0;
    for stmt in cleaned.split(';') {
        let s = stmt.trim();
        if s.is_empty() {
            continue;
        }
        db.execute(s).map_err(|e| format!("schema statement {}: {e} in: {}", n + 1, crate::ast::truncate(s, 60)))?;
        n += 1;
    }
    Ok(n)
}
