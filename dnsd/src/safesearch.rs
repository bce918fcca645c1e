//! Safe-search enforcement: the search engines' own mechanism. Each engine serves a
//! filtered variant from a dedicated host; a resolver that answers the engine's name with
//! a CNAME to that host (and the host's address) makes every browser use it, whatever the
//! user sets. The hosts are the ones the engines document for networks.

const GOOGLE: &str = "forcesafesearch.google.com";
const BING: &str = "strict.bing.com";
const DUCKDUCKGO: &str = "safe.duckduckgo.com";
const YOUTUBE: &str = "restrict.youtube.com";

const FIXED: [(&str, &str); 9] = [
    ("www.bing.com", BING),
    ("bing.com", BING),
    ("duckduckgo.com", DUCKDUCKGO),
    ("www.duckduckgo.com", DUCKDUCKGO),
    ("www.youtube.com", YOUTUBE),
    ("m.youtube.com", YOUTUBE),
    ("youtubei.googleapis.com", YOUTUBE),
    ("youtube.googleapis.com", YOUTUBE),
    ("www.youtube-nocookie.com", YOUTUBE),
];

/// The safe host a query for `name` must be sent to, if `name` is a search engine's.
/// Google: google.TLD and www.google.TLD for every country domain (google.co.uk, ...).
pub fn target(name: &str) -> Option<&'static str> {
    if let Some((_, t)) = FIXED.iter().find(|(n, _)| *n == name) {
        return Some(t);
    }
    let rest = name.strip_prefix("www.").unwrap_or(name).strip_prefix("google.")?;
    // A public suffix of one or two short labels: com, de, co.uk, com.au.
    let labels: Vec<&str> = rest.split('.').collect();
    let tld_like = !labels.is_empty() && labels.len() <= 2
        && labels.iter().all(|l| (2..=3).contains(&l.len()) && l.bytes().all(|b| b.is_ascii_lowercase()));
    tld_like.then_some(GOOGLE)
}

#[cfg(test)]
mod tests {
    use super::target;

    #[test]
    fn engines_map_to_their_safe_hosts() {
        assert_eq!(target("www.google.com"), Some("forcesafesearch.google.com"));
        assert_eq!(target("google.co.uk"), Some("forcesafesearch.google.com"));
        assert_eq!(target("www.google.de"), Some("forcesafesearch.google.com"));
        assert_eq!(target("www.bing.com"), Some("strict.bing.com"));
        assert_eq!(target("duckduckgo.com"), Some("safe.duckduckgo.com"));
        assert_eq!(target("m.youtube.com"), Some("restrict.youtube.com"));
        assert_eq!(target("mail.google.com"), None);
        assert_eq!(target("forcesafesearch.google.com"), None);
        assert_eq!(target("google.example.test.org"), None);
        assert_eq!(target("example.com"), None);
    }
}
