//! homework-dnsd: the router's DNS interception data path.
//!
//!   homework-dnsd --listen 169.254.53.53:5300 --upstream 127.0.0.1:5353 \
//!                 --control /run/homework/dnsd.sock \
//!                 [--resolv-file /run/homework/resolv.upstream] [--local-domains lan,home.arpa]
//!                 [--listen6 [fd00:53::53]:5300] [--resolver 127.0.0.1:5335]
//!                 [--dot-listen 169.254.53.53:853] [--dot-listen6 [fd00:53::53]:853]
//!                 [--tls-cert PEM --tls-key PEM] [--doh-socket PATH] [--resolver-name NAME]
//!
//! DNS over TLS to devices (stream.rs, tls.rs) when there is a --dot-listen and a
//! certificate; DNS over HTTPS (doh.rs) from the router's web server over SCGI on
//! --doh-socket; both announced under --resolver-name (ddr.rs).
//!
//! nftables sends every device's port-53 traffic here (see the dns component); each query
//! is checked against the asking device's policy (pushed by the controller over the control
//! socket); allowed ones are answered from a short-lived cache (cache.rs) or forwarded
//! (forward.rs) straight to the upstream resolvers named in the resolv file, or to dnsmasq
//! (`--upstream`) for the household's own names and as the fallback. With `--resolver`
//! every other name goes to that validating resolver (unbound: DNSSEC, encrypted upstreams)
//! instead of the resolv file's servers. It runs apart from the Python controller so name
//! lookups never wait for it (see docs/dns.md and docs/dns-resolver.md).

mod blocklist;
mod bogus;
mod cache;
mod control;
mod ddr;
mod doh;
mod forward;
mod policy;
mod safesearch;
mod server;
mod stream;
mod tls;
mod upstream;
#[cfg(test)]
mod testjson;
mod wire;

use std::net::SocketAddr;
use std::sync::mpsc::sync_channel;

const EVENT_QUEUE: usize = 200_000;

fn usage() -> ! {
    eprintln!("usage: homework-dnsd --listen ADDR:PORT --upstream ADDR:PORT --control SOCKET \
               [--resolv-file PATH] [--local-domains NAME,...] [--listen6 [ADDR]:PORT] [--resolver ADDR:PORT] \
               [--dot-listen ADDR:PORT] [--dot-listen6 [ADDR]:PORT] [--tls-cert PEM --tls-key PEM] \
               [--doh-socket PATH] [--resolver-name NAME]");
    std::process::exit(2)
}

fn main() {
    let mut listen: Option<SocketAddr> = None;
    let mut listen6: Option<SocketAddr> = None;
    let mut upstream: Option<SocketAddr> = None;
    let mut resolver: Option<SocketAddr> = None;
    let mut dot_listen: Vec<SocketAddr> = Vec::new();
    let (mut tls_cert, mut tls_key): (Option<std::path::PathBuf>, Option<std::path::PathBuf>) = (None, None);
    let mut doh_socket: Option<String> = None;
    let mut resolver_name = String::from("homework.home.arpa");
    let mut control_path: Option<String> = None;
    let mut resolv_file: Option<std::path::PathBuf> = None;
    let mut local_domains: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--listen" => listen = Some(value.parse().unwrap_or_else(|_| usage())),
            "--listen6" => listen6 = Some(value.parse().unwrap_or_else(|_| usage())),
            "--upstream" => upstream = Some(value.parse().unwrap_or_else(|_| usage())),
            "--resolver" => resolver = Some(value.parse().unwrap_or_else(|_| usage())),
            "--dot-listen" | "--dot-listen6" => dot_listen.push(value.parse().unwrap_or_else(|_| usage())),
            "--tls-cert" => tls_cert = Some(value.into()),
            "--tls-key" => tls_key = Some(value.into()),
            "--doh-socket" => doh_socket = Some(value),
            "--resolver-name" => resolver_name = value.trim_end_matches('.').to_ascii_lowercase(),
            "--control" => control_path = Some(value),
            "--resolv-file" => resolv_file = Some(value.into()).filter(|p: &std::path::PathBuf| !p.as_os_str().is_empty()),
            "--local-domains" => {
                local_domains = value.split(',').map(|d| d.trim().trim_matches('.').to_ascii_lowercase())
                    .filter(|d| !d.is_empty()).collect()
            }
            _ => usage(),
        }
    }
    let (Some(listen), Some(upstream), Some(control_path)) = (listen, upstream, control_path) else { usage() };

    let (tx, rx) = sync_channel(EVENT_QUEUE);
    let shared = server::Shared::new(tx);
    let run = || -> std::io::Result<Vec<std::thread::JoinHandle<()>>> {
        control::serve(shared.clone(), &control_path, rx)?;
        let upstreams = || match resolver {
            Some(r) => forward::Upstreams::validating(upstream, r, local_domains.clone()),
            None => forward::Upstreams::new(upstream, resolv_file.clone(), local_domains.clone()),
        };
        let first = upstreams();
        let route = first.route();
        match resolver {
            Some(r) => {
                eprintln!("homework-dnsd: validating resolver {r}: every name but the household's own goes there");
                let _ = shared.bogus.set(bogus::Prober::start(shared.clone(), r)?);
            }
            None => {
                let resolvers: Vec<String> = first.resolvers.iter().map(|r| r.addr.to_string()).collect();
                eprintln!("homework-dnsd: upstream resolvers: {}",
                          if resolvers.is_empty() { "none (all via dnsmasq)".to_string() } else { resolvers.join(" ") });
            }
        }
        let mut threads = server::serve_udp(shared.clone(), listen, first)?;
        let pool = upstream::Upstream::start()?;
        threads.push(stream::serve(shared.clone(), listen, route.clone(), pool.clone(), stream::Kind::Tcp)?);
        // Devices' DNS over IPv6 (nftables sends it here): the same policy, the device
        // found by its /64; its own upstream socket and queries in flight.
        if let Some(listen6) = listen6 {
            threads.extend(server::serve_udp(shared.clone(), listen6, upstreams())?);
            threads.push(stream::serve(shared.clone(), listen6, route.clone(), pool.clone(), stream::Kind::Tcp)?);
        }
        // Encrypted DNS for the devices: TLS on 853 (nftables sends the router's addresses'
        // 853 here), HTTPS through the web server's SCGI; the same handle() as port 53.
        let dot = match (&tls_cert, &tls_key, dot_listen.is_empty()) {
            (Some(cert), Some(key), false) => match tls::Tls::new(cert.clone(), key.clone()) {
                Ok(tls) => {
                    let tls = std::sync::Arc::new(tls);
                    for addr in &dot_listen {
                        threads.push(stream::serve(shared.clone(), *addr, route.clone(), pool.clone(),
                                                   stream::Kind::Tls(tls.clone()))?);
                    }
                    true
                }
                Err(e) => {
                    // DNS on port 53 must not wait for a certificate: without one, no DoT
                    eprintln!("homework-dnsd: no DNS over TLS: cannot read the certificate ({e})");
                    false
                }
            },
            (None, None, _) | (_, _, true) => false,
            _ => usage(),
        };
        if let Some(path) = &doh_socket {
            threads.push(doh::serve(shared.clone(), path, route, pool)?);
        }
        if dot || doh_socket.is_some() {
            let _ = shared.endpoints.set(ddr::Endpoints { name: resolver_name.clone(), dot, doh: doh_socket.is_some() });
            eprintln!("homework-dnsd: encrypted DNS for devices as {resolver_name}: {}{}", if dot { "TLS on " } else { "" },
                      dot_listen.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(" ")
                      + &doh_socket.as_ref().map(|p| format!(" HTTPS via {p}")).unwrap_or_default());
        }
        Ok(threads)
    };
    match run() {
        Ok(threads) => {
            let also = listen6.map(|a| format!(" and {a}")).unwrap_or_default();
            eprintln!("homework-dnsd: listening on {listen}{also} (udp, tcp), upstream {upstream}, control {control_path}");
            for t in threads {
                let _ = t.join();
            }
        }
        Err(e) => {
            eprintln!("homework-dnsd: cannot start: {e}");
            std::process::exit(1);
        }
    }
}
