//! DNS over HTTPS (RFC 8484) for the household's devices. The router's web server
//! (lighttpd: TLS, HTTP/2) hands each request for /dns-query to dnsd over SCGI on a Unix
//! socket. SCGI passes the client's address as lighttpd saw it on its TCP connection
//! (REMOTE_ADDR): a device cannot set it, unlike an X-Forwarded-For header, so the device
//! is its source address here too, and gets its own rules, query log and captive answers.
//!
//!   GET  /dns-query?dns=BASE64URL          the query, base64url without padding
//!   POST /dns-query  application/dns-message
//!   -> 200 application/dns-message, Cache-Control max-age = the answer's smallest TTL
//!      400 no or bad query, 415 another content type, 405 another method,
//!      403 no answer for this device (a blacklisted one, or blocked with "drop")
//!
//! One thread per request (a bounded number: past it the next request waits its turn;
//! lighttpd opens an SCGI connection for each), asking upstream as the stream clients do
//! (upstream.rs).

use std::io::{Read, Write};
use std::net::IpAddr;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use crate::forward::Route;
use crate::server::{guard, Shared};
use crate::stream::answer;
use crate::upstream::Upstream;
use crate::wire;

const MAX_HEADERS: usize = 16 * 1024;
const MAX_BODY: usize = 65535;
const MAX_REQUESTS: usize = 128;
const IO_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, PartialEq)]
pub struct Request {
    pub method: String,
    pub remote: Option<IpAddr>,
    pub query_string: String,
    pub content_type: String,
    pub body: Vec<u8>,
}

/// Read one SCGI request: a netstring of NUL-separated header pairs (CONTENT_LENGTH first),
/// then the body.
pub fn read_request<R: Read>(r: &mut R) -> Result<Request, &'static str> {
    let mut len = 0usize;
    loop {
        let mut b = [0u8; 1];
        r.read_exact(&mut b).map_err(|_| "short request")?;
        match b[0] {
            b'0'..=b'9' => {
                len = len * 10 + (b[0] - b'0') as usize;
                if len > MAX_HEADERS {
                    return Err("headers too long");
                }
            }
            b':' => break,
            _ => return Err("not SCGI"),
        }
    }
    let mut headers = vec![0u8; len + 1];
    r.read_exact(&mut headers).map_err(|_| "short headers")?;
    if headers.pop() != Some(b',') {
        return Err("not SCGI");
    }
    let mut fields = headers.split(|&b| b == 0);
    let mut req = Request { method: String::new(), remote: None, query_string: String::new(),
                            content_type: String::new(), body: Vec::new() };
    let mut content_length = None;
    while let (Some(k), Some(v)) = (fields.next(), fields.next()) {
        let v = String::from_utf8_lossy(v).into_owned();
        match k {
            b"CONTENT_LENGTH" => content_length = v.parse::<usize>().ok(),
            b"REQUEST_METHOD" => req.method = v,
            b"REMOTE_ADDR" => req.remote = v.parse().ok(),
            b"QUERY_STRING" => req.query_string = v,
            b"CONTENT_TYPE" => req.content_type = v,
            _ => {}
        }
    }
    let length = content_length.ok_or("no CONTENT_LENGTH")?;
    if length > MAX_BODY {
        return Err("body too large");
    }
    req.body = vec![0u8; length];
    r.read_exact(&mut req.body).map_err(|_| "short body")?;
    Ok(req)
}

/// base64url without padding (RFC 4648 5), as RFC 8484 puts a GET's query.
pub fn base64url(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            b'=' => continue, // tolerated, though RFC 8484 says none
            _ => return None,
        } as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// The DNS message a request carries, or the HTTP status that says why not.
pub fn dns_message(req: &Request) -> Result<Vec<u8>, u16> {
    match req.method.as_str() {
        "GET" => req.query_string.split('&').find_map(|kv| kv.strip_prefix("dns="))
            .and_then(base64url).filter(|m| m.len() >= wire::HEADER).ok_or(400),
        "POST" => {
            if req.content_type.split(';').next().map(str::trim) != Some("application/dns-message") {
                return Err(415);
            }
            if req.body.len() < wire::HEADER { Err(400) } else { Ok(req.body.clone()) }
        }
        _ => Err(405),
    }
}

fn status_line(code: u16) -> &'static str {
    match code {
        200 => "200 OK",
        400 => "400 Bad Request",
        403 => "403 Forbidden",
        405 => "405 Method Not Allowed",
        415 => "415 Unsupported Media Type",
        _ => "500 Internal Server Error",
    }
}

/// The SCGI response (a CGI-style header block, then the body).
pub fn response(code: u16, body: &[u8]) -> Vec<u8> {
    let mut head = format!("Status: {}\r\n", status_line(code));
    if code == 200 {
        let max_age = wire::scan_ttls(body).map_or(0, |t| t.min_ttl);
        head.push_str(&format!("Content-Type: application/dns-message\r\nCache-Control: max-age={max_age}\r\n"));
    } else if code == 405 {
        head.push_str("Allow: GET, POST\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}

fn serve_request(shared: &Shared, mut conn: UnixStream, route: &Route, pool: &Upstream) {
    let _ = conn.set_read_timeout(Some(IO_TIMEOUT));
    let _ = conn.set_write_timeout(Some(IO_TIMEOUT));
    let out = match read_request(&mut conn) {
        Err(_) => response(400, b""),
        Ok(req) => match (req.remote, dns_message(&req)) {
            (_, Err(code)) => response(code, b""),
            (None, _) => response(403, b""), // lighttpd always says who asks: refuse otherwise
            (Some(peer), Ok(msg)) => {
                shared.stats.doh_queries.fetch_add(1, Ordering::Relaxed);
                match answer(shared, peer, msg, route, pool) {
                    Some(r) => response(200, &r),
                    None => response(403, b""),
                }
            }
        },
    };
    let _ = conn.write_all(&out);
}

/// Requests being answered, at most MAX_REQUESTS.
#[derive(Default)]
struct Slots {
    busy: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    fn take(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        while *busy >= MAX_REQUESTS {
            busy = self.freed.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        *busy += 1;
    }

    fn give_back(&self) {
        *self.busy.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        self.freed.notify_one();
    }
}

pub fn serve(shared: Arc<Shared>, path: &str, route: Route, pool: Arc<Upstream>) -> std::io::Result<thread::JoinHandle<()>> {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    {
        use std::os::unix::fs::PermissionsExt;
        // the web server (root on the router) alone: whoever writes here names the device
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    let slots = Arc::new(Slots::default());
    thread::Builder::new().name("doh-accept".into()).spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            // At the limit the next request waits for a slot (and lighttpd's next ones in
            // the socket's backlog) rather than getting an error: a busy moment is slower,
            // not lost (a 500 was lost to the device).
            slots.take();
            let (shared, mine, route, pool) = (shared.clone(), slots.clone(), route.clone(), pool.clone());
            let spawned = thread::Builder::new().name("doh-request".into()).spawn(move || {
                guard(&shared, || serve_request(&shared, conn, &route, &pool));
                mine.give_back();
            });
            if spawned.is_err() {
                slots.give_back(); // no thread: the connection closes with the closure
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scgi(headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
        let mut h = Vec::new();
        for (k, v) in [("CONTENT_LENGTH", body.len().to_string().as_str())].into_iter().chain(headers.iter().copied()) {
            h.extend_from_slice(k.as_bytes());
            h.push(0);
            h.extend_from_slice(v.as_bytes());
            h.push(0);
        }
        let mut out = format!("{}:", h.len()).into_bytes();
        out.extend_from_slice(&h);
        out.push(b',');
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn a_get_and_a_post_carry_the_same_query() {
        let q = wire::build_query(0, "example.com", wire::TYPE_A);
        let b64 = "AAABAAABAAAAAAAAB2V4YW1wbGUDY29tAAABAAE"; // that query, base64url without padding
        let get = read_request(&mut &scgi(&[("REQUEST_METHOD", "GET"), ("REMOTE_ADDR", "10.2.0.2"),
                                             ("QUERY_STRING", &format!("dns={b64}"))], b"")[..]).unwrap();
        assert_eq!(get.remote, Some("10.2.0.2".parse().unwrap()));
        assert_eq!(dns_message(&get), Ok(q.clone()));
        let post = read_request(&mut &scgi(&[("REQUEST_METHOD", "POST"), ("REMOTE_ADDR", "2001:db8::2"),
                                              ("CONTENT_TYPE", "application/dns-message")], &q)[..]).unwrap();
        assert_eq!(dns_message(&post), Ok(q));
    }

    #[test]
    fn bad_requests_get_their_status() {
        let req = |method: &str, qs: &str, ct: &str, body: &[u8]| {
            read_request(&mut &scgi(&[("REQUEST_METHOD", method), ("QUERY_STRING", qs), ("CONTENT_TYPE", ct)], body)[..]).unwrap()
        };
        assert_eq!(dns_message(&req("GET", "", "", b"")), Err(400));
        assert_eq!(dns_message(&req("GET", "dns=!!!", "", b"")), Err(400));
        assert_eq!(dns_message(&req("POST", "", "text/plain", b"0123456789abcdef")), Err(415));
        assert_eq!(dns_message(&req("DELETE", "", "", b"")), Err(405));
        assert!(read_request(&mut &b"12:short"[..]).is_err());
        assert!(read_request(&mut &b"99999999:"[..]).is_err());
        let big = scgi(&[("REQUEST_METHOD", "POST")], &vec![0u8; MAX_BODY + 1]);
        assert_eq!(read_request(&mut &big[..]), Err("body too large"));
    }

    #[test]
    fn the_response_says_how_long_it_may_be_cached() {
        let mut a = wire::build_query(0, "x.test", wire::TYPE_A);
        a[2] |= 0x80;
        a[7] = 1;
        a.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 42, 0, 4, 192, 0, 2, 1]);
        let r = String::from_utf8_lossy(&response(200, &a)).into_owned();
        assert!(r.starts_with("Status: 200 OK\r\n") && r.contains("Cache-Control: max-age=42\r\n"), "{r}");
        assert!(String::from_utf8_lossy(&response(405, b"")).contains("Allow: GET, POST"));
    }

    #[test]
    fn base64url_decodes_without_padding() {
        assert_eq!(base64url("aGVsbG8"), Some(b"hello".to_vec()));
        assert_eq!(base64url("-_8"), Some(vec![0xfb, 0xff]));
        assert_eq!(base64url("a b"), None);
    }

    #[test]
    fn many_requests_at_once_all_get_their_answer_none_an_error() {
        // lighttpd opens an SCGI connection per request: a page's lookups over HTTP/2 from
        // a few devices are more at once than MAX_REQUESTS; past it they used to get a 500.
        let (shared, route) = crate::stream::tests::one_device(crate::stream::tests::fake_resolver(64));
        let dir = std::env::temp_dir().join(format!("dnsd-doh-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("doh.sock").to_string_lossy().into_owned();
        serve(shared, &path, route, Upstream::start().unwrap()).unwrap();
        let count = MAX_REQUESTS + 40;
        let clients: Vec<_> = (0..count).map(|i| {
            let path = path.clone();
            thread::spawn(move || {
                let q = wire::build_query(i as u16, &format!("slow-{i}.example"), wire::TYPE_A);
                let body = scgi(&[("REQUEST_METHOD", "POST"), ("REMOTE_ADDR", "127.0.0.1"),
                                  ("CONTENT_TYPE", "application/dns-message")], &q);
                let mut conn = UnixStream::connect(&path).unwrap();
                conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let mut out = Vec::new();
                if conn.write_all(&body).is_ok() {
                    let _ = conn.read_to_end(&mut out);
                }
                String::from_utf8_lossy(&out).lines().next().unwrap_or("").to_string()
            })
        }).collect();
        let statuses: Vec<String> = clients.into_iter().map(|c| c.join().unwrap()).collect();
        assert!(statuses.iter().all(|s| s == "Status: 200 OK"), "{:?}", statuses.iter().filter(|s| *s != "Status: 200 OK").collect::<Vec<_>>());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
