//! hwdb: command-line client for hwdbd.
//!   hwdb [--host H] [--port P] -q "select ..."   one statement, aligned table (or --json)
//!   hwdb                                        interactive: one statement per line on stdin
//!   hwdb --subscribe Q [--count N]              print Q's results as the daemon pushes them

use std::io::{BufRead, IsTerminal, Write};
use std::net::{SocketAddr, UdpSocket};
use std::process::exit;
use std::sync::mpsc::channel;
use std::time::Duration;

use hwdb::result::{parse_wire, WireResult};
use hwdb::srpc::client::Client;
use hwdb::srpc::server::BackgroundServer;
use hwdb::srpc::Timing;

const USAGE: &str = "usage: hwdb [--host H] [--port P] [--timeout SECS] [--json] [-q STATEMENT | --subscribe QUERY [--count N]]";

struct Options {
    host: String,
    port: u16,
    timeout: f64,
    json: bool,
    query: Option<String>,
    subscribe: Option<String>,
    count: Option<u64>,
}

fn fail(msg: &str) -> ! {
    eprintln!("hwdb: {msg}");
    exit(2)
}

fn parse_args() -> Options {
    let mut o = Options { host: "127.0.0.1".into(), port: 987, timeout: 10.0, json: false, query: None, subscribe: None, count: None };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| fail(&format!("{a} needs a value\n{USAGE}")));
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                exit(0)
            }
            "--host" => o.host = val(),
            "--port" | "-p" => o.port = val().parse().unwrap_or_else(|_| fail("--port needs a number")),
            "--timeout" => o.timeout = val().parse().unwrap_or_else(|_| fail("--timeout needs seconds")),
            "--json" => o.json = true,
            "-q" | "--query" => o.query = Some(val()),
            "--subscribe" => o.subscribe = Some(val()),
            "--count" => o.count = Some(val().parse().unwrap_or_else(|_| fail("--count needs a number"))),
            _ => fail(&format!("unknown argument {a}\n{USAGE}")),
        }
    }
    o
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A typed JSON value from a wire field (timestamps become integer nanoseconds).
fn json_value(ty: &str, v: &str) -> String {
    match ty {
        _ if v.is_empty() && ty != "varchar" && ty != "character" && ty != "blob" => "null".into(),
        "integer" | "tinyint" | "smallint" => v.parse::<i64>().map(|i| i.to_string()).unwrap_or_else(|_| json_str(v)),
        "real" => v.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| format!("{f:?}")).unwrap_or_else(|| json_str(v)),
        "boolean" => (if v == "true" { "true" } else { "false" }).into(),
        "tstamp" => hwdb::value::parse_tstamp(v).map(|t| t.to_string()).unwrap_or_else(|| json_str(v)),
        _ => json_str(v),
    }
}

fn to_json(r: &WireResult) -> String {
    let cols: Vec<String> =
        r.columns.iter().map(|(t, n)| format!("{{\"name\":{},\"type\":{}}}", json_str(n), json_str(t))).collect();
    let rows: Vec<String> = r
        .rows
        .iter()
        .map(|row| {
            let fields: Vec<String> =
                r.columns.iter().zip(row).map(|((t, n), v)| format!("{}:{}", json_str(n), json_value(t, v))).collect();
            format!("{{{}}}", fields.join(","))
        })
        .collect();
    format!(
        "{{\"status\":{},\"message\":{},\"columns\":[{}],\"rows\":[{}]}}",
        r.status,
        json_str(&r.message),
        cols.join(","),
        rows.join(",")
    )
}

fn to_table(r: &WireResult) -> String {
    if r.columns.is_empty() {
        return format!("{}\n", r.message);
    }
    let mut widths: Vec<usize> = r.columns.iter().map(|(_, n)| n.chars().count()).collect();
    for row in &r.rows {
        for (w, v) in widths.iter_mut().zip(row) {
            *w = (*w).max(v.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let parts: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        format!("{}\n", parts.join(" | ").trim_end())
    };
    let mut out = line(r.columns.iter().map(|(_, n)| n.as_str()).collect());
    out.push_str(&format!("{}\n", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("-+-")));
    for row in &r.rows {
        out.push_str(&line(row.iter().map(|s| s.as_str()).collect()));
    }
    out.push_str(&format!("({} row{})\n", r.rows.len(), if r.rows.len() == 1 { "" } else { "s" }));
    out
}

/// Print a response; returns false if it was an error.
fn show(raw: &[u8], json: bool) -> bool {
    let text = String::from_utf8_lossy(raw);
    match parse_wire(&text) {
        Ok(r) if json => {
            println!("{}", to_json(&r));
            r.status == 0
        }
        Ok(r) if r.status != 0 => {
            eprintln!("error: {}", r.message);
            false
        }
        Ok(r) => {
            print!("{}", to_table(&r));
            true
        }
        Err(e) => {
            eprintln!("hwdb: unreadable response ({e})");
            false
        }
    }
}

fn request(stmt: &str) -> Vec<u8> {
    format!("SQL:{}\n", stmt.trim().trim_end_matches(';')).into_bytes()
}

/// The address the daemon should call us back on: the one our packets to it come from.
fn local_ip_towards(server: SocketAddr) -> String {
    let probe = UdpSocket::bind(if server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }).and_then(|s| {
        s.connect(server)?;
        s.local_addr()
    });
    probe.map(|a| a.ip().to_string()).unwrap_or_else(|_| "127.0.0.1".into())
}

fn subscribe(o: &Options, client: &mut Client, query: &str) -> i32 {
    let (tx, rx) = channel::<Vec<u8>>();
    let ip = local_ip_towards(client.server());
    let service = "HWDBCLI";
    let listener = BackgroundServer::start(format!("{ip}:0").parse().unwrap(), service, Timing::default(), move |_peer: SocketAddr, req: &[u8]| {
        let _ = tx.send(req.to_vec());
        b"OK".to_vec()
    })
    .unwrap_or_else(|e| fail(&format!("cannot open callback port: {e}")));
    let sub = format!("{query} {ip} {} {service}", listener.addr.port());
    let resp = client.call(&request(&format!("subscribe {sub}"))).unwrap_or_else(|e| fail(&e.to_string()));
    if !show_quiet(&resp) {
        return 1;
    }
    eprintln!("hwdb: subscribed to {query}; waiting for notifications");
    let mut seen = 0u64;
    while o.count.is_none_or(|n| seen < n) {
        let Ok(note) = rx.recv() else { break };
        show(&note, o.json);
        let _ = std::io::stdout().flush();
        seen += 1;
    }
    let _ = client.call(&request(&format!("unsubscribe {sub}")));
    0
}

fn show_quiet(raw: &[u8]) -> bool {
    match parse_wire(&String::from_utf8_lossy(raw)) {
        Ok(r) if r.status == 0 => true,
        Ok(r) => {
            eprintln!("error: {}", r.message);
            false
        }
        Err(e) => {
            eprintln!("hwdb: unreadable response ({e})");
            false
        }
    }
}

fn main() {
    let o = parse_args();
    let addr = format!("{}:{}", o.host, o.port);
    let mut client = Client::connect(addr.as_str(), "HWDB", Duration::from_secs_f64(o.timeout))
        .unwrap_or_else(|e| fail(&format!("cannot connect to {addr}: {e}")));
    if let Some(q) = o.subscribe.clone() {
        exit(subscribe(&o, &mut client, &q));
    }
    if let Some(q) = &o.query {
        let resp = client.call(&request(q)).unwrap_or_else(|e| fail(&e.to_string()));
        exit(if show(&resp, o.json) { 0 } else { 1 });
    }
    let interactive = std::io::stdin().is_terminal();
    let mut failures = 0;
    let stdin = std::io::stdin();
    loop {
        if interactive {
            print!("hwdb> ");
            let _ = std::io::stdout().flush();
        }
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let stmt = line.trim();
        if stmt.is_empty() || stmt.starts_with("--") {
            continue;
        }
        if stmt == "quit" || stmt == "exit" || stmt == "\\q" {
            break;
        }
        match client.call(&request(stmt)) {
            Ok(resp) => {
                if !show(&resp, o.json) {
                    failures += 1;
                }
            }
            Err(e) => {
                eprintln!("hwdb: {e}");
                failures += 1;
            }
        }
    }
    exit(if failures > 0 && !interactive { 1 } else { 0 });
}
