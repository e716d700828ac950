//! Who is on the other end, for throttling: the connection's peer address, or, when that peer is
//! a reverse proxy the operator named as trusted (`--trusted-proxy`), the address that proxy
//! says it was talking to. Only trusted proxies are believed: anyone can write an
//! `X-Forwarded-For` header, and a guesser who could pick their own address would never be
//! throttled.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;

use crate::error::ApiError;
use crate::http::AppState;

/// The client's address as far as this server can know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

impl FromRequestParts<AppState> for ClientAddr {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // Without the peer address every client would share one throttle count, and one
        // guesser would lock everyone out: refuse loudly rather than serve that way.
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip())
            .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("the server runs without the peer's address")))?;
        let forwarded = parts
            .headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .collect::<Vec<_>>();
        Ok(ClientAddr(state.trusted_proxies.client(peer, &forwarded)))
    }
}

/// The reverse proxies whose `X-Forwarded-For` is believed: addresses and CIDR ranges, parsed
/// once at start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<Net>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Net {
    addr: IpAddr,
    prefix: u8,
}

impl Net {
    fn parse(entry: &str) -> Result<Self, String> {
        let bad = || format!("`{entry}` is not an IP address or a CIDR range (like 10.0.0.0/8 or fd00::/8)");
        let (addr, prefix) = match entry.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (entry, None),
        };
        let addr: IpAddr = addr.trim().parse().map_err(|_| bad())?;
        let addr = addr.to_canonical();
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.trim().parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?,
            None => max,
        };
        Ok(Net { addr, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl TrustedProxies {
    /// Parses `--trusted-proxy` entries; the error names the first one that is not an address
    /// or a range.
    pub fn parse(entries: &[String]) -> Result<Self, String> {
        entries
            .iter()
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
            .map(Net::parse)
            .collect::<Result<_, _>>()
            .map(TrustedProxies)
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(ip))
    }

    /// The client behind `peer`, given the `X-Forwarded-For` entries in header order. Each
    /// trusted proxy appends the address it was talking to, so walking from the right, the
    /// first address that is not itself a trusted proxy is the client; entries left of it were
    /// written by the client and mean nothing. An entry that cannot be read stops the walk at
    /// the last address known to be true.
    pub fn client(&self, peer: IpAddr, forwarded: &[&str]) -> IpAddr {
        let mut client = peer.to_canonical();
        for entry in forwarded.iter().rev() {
            if !self.contains(client) {
                break;
            }
            match parse_forwarded(entry) {
                Some(ip) => client = ip,
                None => break,
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: an address, possibly with a port (`1.2.3.4:5678`,
/// `[2001:db8::1]:443`) as some proxies write it.
fn parse_forwarded(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    let ip = entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .or_else(|| entry.strip_prefix('[')?.strip_suffix(']')?.parse().ok())?;
    Some(ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(entries: &[&str]) -> TrustedProxies {
        TrustedProxies::parse(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>()).expect("valid")
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn without_trusted_proxies_the_header_is_ignored() {
        let none = TrustedProxies::default();
        assert_eq!(none.client(ip("192.0.2.7"), &["203.0.113.9"]), ip("192.0.2.7"));
    }

    #[test]
    fn the_rightmost_untrusted_address_is_the_client() {
        let t = proxies(&["10.0.0.0/8", "127.0.0.1"]);
        // The client forged the first entry; the proxies appended the rest.
        let chain = ["6.6.6.6", "203.0.113.9", "10.1.2.3"];
        assert_eq!(t.client(ip("127.0.0.1"), &chain), ip("203.0.113.9"));
        assert_eq!(t.client(ip("127.0.0.1"), &[]), ip("127.0.0.1"), "no header: the proxy itself");
        assert_eq!(t.client(ip("192.0.2.7"), &chain), ip("192.0.2.7"), "an untrusted peer is the client");
        assert_eq!(t.client(ip("127.0.0.1"), &["garbage", "10.0.0.9"]), ip("10.0.0.9"));
        assert_eq!(t.client(ip("127.0.0.1"), &[" 203.0.113.9:4711 "]), ip("203.0.113.9"));
    }

    #[test]
    fn ipv6_ranges_and_mapped_addresses_are_understood() {
        let t = proxies(&["fd00::/8", "192.168.0.0/16"]);
        assert_eq!(t.client(ip("fd12::1"), &["[2001:db8::5]:443"]), ip("2001:db8::5"));
        assert_eq!(t.client(ip("::ffff:192.168.3.4"), &["2001:db8::5"]), ip("2001:db8::5"));
        assert!(!t.contains(ip("fe80::1")));
        assert!(proxies(&["0.0.0.0/0"]).contains(ip("8.8.8.8")));
    }

    #[test]
    fn an_invalid_entry_is_named() {
        for bad in ["localhost", "10.0.0.0/33", "10.0.0.1/", "::1/129"] {
            let error = TrustedProxies::parse(&[bad.to_owned()]).expect_err(bad);
            assert!(error.contains(bad), "{error}");
        }
    }
}
