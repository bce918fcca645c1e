//! The per-device DNS policy, as pushed by the controller (which owns it in SQLite).
//! The same decision rules are implemented in the controller's policy.py (for the reverse
//! check on flows); the two are kept small so they stay identical:
//!
//! 1. the browsers' DoH canary and the iCloud Private Relay names are NXDOMAIN for everyone;
//! 2. otherwise the most specific matching rule wins (a rule for example.com covers its
//!    subdomains); at the same name a device rule beats a household rule;
//! 3. no rule: blocked if a blocklist that applies to the device (the household's, or one
//!    sent for the device's MAC) lists the name or a parent of it; explicit rules beat
//!    lists, so an `allow` rule un-blocks a listed name;
//! 4. otherwise allowed, unless the device is in allow-list mode.
//!
//! Safe-search (an option) is not a verdict: an allowed query for a search engine's name is
//! answered with the engine's safe host (safesearch.rs).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use crate::blocklist::Blocklist;

pub const CANARIES: [&str; 3] = ["use-application-dns.net", "mask.icloud.com", "mask-h2.icloud.com"];
pub const HOUSEHOLD: &str = "*";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Allow,
    Deny,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Pending,
    Permitted,
    Denied,
    Blacklisted,
    /// Permitted, but paused, at bedtime or over its allowance: answered like a pending
    /// device (every name is the router, nothing goes upstream), logged as "cutoff".
    CutOff,
}

#[derive(Clone, Debug)]
pub struct Device {
    pub mac: Arc<str>,
    pub state: State,
    pub allowlist: bool,
    /// The device's gateway (.1 of its /30): where pending devices' names point.
    pub router: Ipv4Addr,
    /// The router's address in the device's /64 (IPv6 on): where their AAAA answers point,
    /// the router's name and encrypted DNS over IPv6 (ddr.rs).
    pub router6: Option<Ipv6Addr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Blocked,
    Bypass,
    Pending,
    CutOff,
    Blacklisted,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Allowed => "allowed",
            Verdict::Blocked => "blocked",
            Verdict::Bypass => "bypass",
            Verdict::Pending => "pending",
            Verdict::CutOff => "cutoff",
            Verdict::Blacklisted => "blacklisted",
        }
    }
}

/// The key a device's policy is filed under: its IPv4 address, or its IPv6 /64 (so any of
/// its addresses asks as the device, privacy addresses too). An IPv4-mapped IPv6 address
/// is its IPv4 address.
pub fn device_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(a) & !((1u128 << 64) - 1))),
        },
        v4 => v4,
    }
}

#[derive(Default)]
pub struct Policy {
    pub devices: HashMap<IpAddr, Device>,
    /// mac (or "*" for the household) -> domain -> action
    pub rules: HashMap<Arc<str>, HashMap<String, Action>>,
    pub drop_blocked: bool,
    /// Blocklists in force, by list id order of arrival.
    pub lists: Vec<Arc<Blocklist>>,
    pub safe_search: bool,
    household_rules: usize,
}

impl Policy {
    pub fn set_rule(&mut self, owner: &str, domain: &str, action: Option<Action>) {
        let key: Arc<str> = Arc::from(owner);
        match action {
            Some(a) => {
                let table = self.rules.entry(key).or_default();
                if table.insert(domain.to_string(), a).is_none() && owner == HOUSEHOLD {
                    self.household_rules += 1;
                }
            }
            None => {
                if let Some(table) = self.rules.get_mut(&key) {
                    if table.remove(domain).is_some() && owner == HOUSEHOLD {
                        self.household_rules -= 1;
                    }
                    if table.is_empty() {
                        self.rules.remove(&key);
                    }
                }
            }
        }
    }

    pub fn clear(&mut self) {
        self.devices.clear();
        self.rules.clear();
        self.lists.clear();
        self.safe_search = false;
        self.household_rules = 0;
    }

    pub fn rule_count(&self) -> usize {
        self.rules.values().map(|t| t.len()).sum()
    }

    /// Whether any rule can block this device (then answers are checked for CNAMEs too).
    pub fn restricted(&self, dev: &Device) -> bool {
        dev.allowlist || self.household_rules > 0 || self.rules.contains_key(&*dev.mac)
            || self.lists.iter().any(|l| l.applies_to(&dev.mac))
    }

    /// Put a list in force (replacing one with the same id), or take it away (`None`).
    pub fn set_list(&mut self, id: &str, list: Option<Arc<Blocklist>>) {
        match self.lists.iter().position(|l| l.id == id) {
            Some(i) => match list {
                Some(l) => self.lists[i] = l,
                None => {
                    self.lists.remove(i);
                }
            },
            None => self.lists.extend(list),
        }
    }

    /// The first list applying to this device that covers the name.
    fn listed(&self, mac: &str, name: &str) -> Option<&Blocklist> {
        self.lists.iter().map(|l| &**l).find(|l| l.applies_to(mac) && l.names.covers(name))
    }

    fn lookup(&self, mac: &str, name: &str) -> Option<Action> {
        let own = self.rules.get(mac);
        let household = self.rules.get(HOUSEHOLD);
        let mut suffix = name;
        loop {
            if let Some(a) = own.and_then(|t| t.get(suffix)) {
                return Some(*a);
            }
            if let Some(a) = household.and_then(|t| t.get(suffix)) {
                return Some(*a);
            }
            match suffix.find('.') {
                Some(i) => suffix = &suffix[i + 1..],
                None => return None,
            }
        }
    }

    /// May this device look this name up?
    pub fn decide(&self, dev: &Device, name: &str) -> Verdict {
        match dev.state {
            State::Blacklisted => return Verdict::Blacklisted,
            State::Pending | State::Denied => {
                return if CANARIES.contains(&name) { Verdict::Bypass } else { Verdict::Pending }
            }
            State::CutOff => return if CANARIES.contains(&name) { Verdict::Bypass } else { Verdict::CutOff },
            State::Permitted => {}
        }
        if CANARIES.contains(&name) {
            return Verdict::Bypass;
        }
        self.name_allowed(dev, name)
    }

    /// The rule part of `decide` (also used for CNAME targets in answers).
    pub fn name_allowed(&self, dev: &Device, name: &str) -> Verdict {
        match self.lookup(&dev.mac, name) {
            Some(Action::Allow) => Verdict::Allowed,
            Some(Action::Deny) => Verdict::Blocked,
            None => match self.listed(&dev.mac, name) {
                Some(list) => {
                    list.count();
                    Verdict::Blocked
                }
                None if dev.allowlist => Verdict::Blocked,
                None => Verdict::Allowed,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(mac: &str, allowlist: bool) -> Device {
        Device { mac: Arc::from(mac), state: State::Permitted, allowlist, router: Ipv4Addr::new(10, 2, 0, 1), router6: None }
    }

    #[test]
    fn most_specific_rule_wins_device_beats_household() {
        let mut p = Policy::default();
        let a = dev("aa", false);
        let b = dev("bb", false);
        p.set_rule("aa", "example.com", Some(Action::Deny));
        p.set_rule("aa", "ok.example.com", Some(Action::Allow));
        p.set_rule(HOUSEHOLD, "ads.ok.example.com", Some(Action::Deny));
        p.set_rule(HOUSEHOLD, "kids.test", Some(Action::Deny));
        p.set_rule("bb", "kids.test", Some(Action::Allow));
        assert_eq!(p.decide(&a, "www.example.com"), Verdict::Blocked);
        assert_eq!(p.decide(&a, "example.com"), Verdict::Blocked);
        assert_eq!(p.decide(&a, "notexample.com"), Verdict::Allowed);
        assert_eq!(p.decide(&a, "x.ok.example.com"), Verdict::Allowed);
        assert_eq!(p.decide(&a, "ads.ok.example.com"), Verdict::Blocked);
        assert_eq!(p.decide(&b, "www.example.com"), Verdict::Allowed);
        assert_eq!(p.decide(&a, "kids.test"), Verdict::Blocked);
        assert_eq!(p.decide(&b, "kids.test"), Verdict::Allowed);
        assert!(p.restricted(&b));
    }

    #[test]
    fn allowlist_mode_and_canaries() {
        let mut p = Policy::default();
        let k = dev("kk", true);
        p.set_rule("kk", "school.test", Some(Action::Allow));
        assert_eq!(p.decide(&k, "www.school.test"), Verdict::Allowed);
        assert_eq!(p.decide(&k, "example.com"), Verdict::Blocked);
        assert_eq!(p.decide(&dev("zz", false), "use-application-dns.net"), Verdict::Bypass);
        p.set_rule("kk", "school.test", None);
        assert!(p.rules.is_empty());
    }

    fn list(id: &str, macs: Option<&[&str]>, names: &str) -> Option<Arc<Blocklist>> {
        Some(Arc::new(Blocklist { id: id.into(), macs: macs.map(|m| m.iter().map(|x| Arc::from(*x)).collect()),
                                  names: Arc::new(crate::blocklist::NameSet::parse(names).unwrap()), blocked: Default::default() }))
    }

    #[test]
    fn lists_block_below_rules_and_count() {
        let mut p = Policy::default();
        let (a, b) = (dev("aa", false), dev("bb", false));
        assert!(!p.restricted(&a));
        p.set_list("1", list("1", None, "ads.test
tracker.test
"));
        p.set_list("2", list("2", Some(&["bb"]), "games.test
"));
        assert!(p.restricted(&a));
        assert_eq!(p.decide(&a, "x.ads.test"), Verdict::Blocked);
        assert_eq!(p.decide(&a, "games.test"), Verdict::Allowed);     // list 2 is bb's only
        assert_eq!(p.decide(&b, "www.games.test"), Verdict::Blocked);
        p.set_rule(HOUSEHOLD, "ok.ads.test", Some(Action::Allow));      // an allow rule un-blocks
        assert_eq!(p.decide(&a, "ok.ads.test"), Verdict::Allowed);
        p.set_rule("bb", "games.test", Some(Action::Allow));
        assert_eq!(p.decide(&b, "games.test"), Verdict::Allowed);
        assert_eq!(p.lists[0].blocked.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(p.lists[1].blocked.load(std::sync::atomic::Ordering::Relaxed), 1);
        p.set_list("1", None);
        assert_eq!(p.decide(&a, "x.ads.test"), Verdict::Allowed);
        assert_eq!(p.lists.len(), 1);
    }

    #[test]
    fn pending_devices_get_the_router() {
        let p = Policy::default();
        let mut d = dev("pp", false);
        d.state = State::Pending;
        assert_eq!(p.decide(&d, "example.com"), Verdict::Pending);
        d.state = State::Blacklisted;
        assert_eq!(p.decide(&d, "example.com"), Verdict::Blacklisted);
        // paused, at bedtime, over its allowance: no rule or list lets a name upstream
        let mut p = Policy::default();
        p.set_rule("pp", "example.com", Some(Action::Allow));
        d.state = State::CutOff;
        assert_eq!(p.decide(&d, "example.com"), Verdict::CutOff);
        assert_eq!(p.decide(&d, "use-application-dns.net"), Verdict::Bypass);
    }
}
