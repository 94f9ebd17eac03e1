//! The guard against webhook URLs that reach inside the network: loopback, private, link-local,
//! cloud metadata and other special addresses. Checked when an endpoint is registered and again
//! at send time on every address its host resolves to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// What a URL may reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UrlPolicy {
    /// Only `https` (live mode).
    pub require_https: bool,
    /// Loopback addresses and `localhost` (test mode).
    pub allow_loopback: bool,
    /// Private, link-local and other internal ranges (operator opt-in).
    pub allow_private: bool,
}

impl UrlPolicy {
    /// Live mode: https, public addresses only (unless the operator allows private ones).
    pub fn live(allow_private: bool) -> Self {
        UrlPolicy { require_https: true, allow_loopback: allow_private, allow_private }
    }

    /// Test mode: http and loopback allowed.
    pub fn test(allow_private: bool) -> Self {
        UrlPolicy { require_https: false, allow_loopback: true, allow_private }
    }
}

/// Why a URL or address was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum UrlError {
    /// Not an absolute http(s) URL with a host, or too long, or with credentials.
    #[error("must be an absolute http or https URL with a host, without credentials, at most 2048 characters")]
    Malformed,
    /// `http` where `https` is required.
    #[error("live endpoints must use https")]
    NotHttps,
    /// The host is or resolves to a loopback, private, link-local or otherwise internal address.
    #[error("the URL reaches a loopback, private, link-local or metadata address ({0})")]
    Forbidden(String),
}

/// Whether an address is internal: loopback, unspecified, private (RFC 1918, unique local),
/// shared (RFC 6598), link-local (incl. `169.254.169.254` metadata), multicast, broadcast,
/// documentation, benchmarking or reserved; IPv4-mapped and NAT64 IPv6 addresses are judged by
/// the IPv4 address inside.
pub fn is_forbidden_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..=127).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240 // reserved
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    let s = ip.segments();
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        // NAT64: the IPv4 address is in the last 32 bits.
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return forbidden_v4(v4);
    }
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || s[0..6] == [0, 0, 0, 0, 0, 0] // IPv4-compatible (deprecated)
}

fn loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// Checks one address under a policy (used again after DNS resolution at send time).
///
/// # Errors
/// [`UrlError::Forbidden`].
pub fn check_ip(ip: IpAddr, policy: UrlPolicy) -> Result<(), UrlError> {
    if loopback(ip) {
        return if policy.allow_loopback { Ok(()) } else { Err(UrlError::Forbidden(ip.to_string())) };
    }
    if is_forbidden_ip(ip) && !policy.allow_private {
        return Err(UrlError::Forbidden(ip.to_string()));
    }
    Ok(())
}

/// Parses and checks an endpoint URL under a policy. Hosts written as IP addresses in any form
/// the WHATWG URL standard accepts (decimal `2130706433`, hex `0x7f.1`, IPv4-mapped IPv6) are
/// normalised by the parser and checked as addresses; `localhost` and `*.localhost` are loopback.
/// Other names are checked after resolution, at send time.
///
/// # Errors
/// [`UrlError`].
pub fn check_url(text: &str, policy: UrlPolicy) -> Result<Url, UrlError> {
    if text.len() > 2048 {
        return Err(UrlError::Malformed);
    }
    let url = Url::parse(text).map_err(|_| UrlError::Malformed)?;
    match url.scheme() {
        "https" => {}
        "http" if !policy.require_https => {}
        "http" => return Err(UrlError::NotHttps),
        _ => return Err(UrlError::Malformed),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlError::Malformed);
    }
    match url.host() {
        None => return Err(UrlError::Malformed),
        Some(Host::Ipv4(v4)) => check_ip(IpAddr::V4(v4), policy)?,
        Some(Host::Ipv6(v6)) => check_ip(IpAddr::V6(v6), policy)?,
        Some(Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if (name == "localhost" || name.ends_with(".localhost")) && !policy.allow_loopback {
                return Err(UrlError::Forbidden(name));
            }
        }
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIVE: UrlPolicy = UrlPolicy { require_https: true, allow_loopback: false, allow_private: false };
    const TEST: UrlPolicy = UrlPolicy { require_https: false, allow_loopback: true, allow_private: false };

    fn refused(url: &str, policy: UrlPolicy) -> bool {
        matches!(check_url(url, policy), Err(UrlError::Forbidden(_)))
    }

    #[test]
    fn internal_addresses_are_refused_in_live_mode() {
        for url in [
            "https://127.0.0.1/hook",
            "https://127.1.2.3/",
            "https://localhost/hook",
            "https://api.localhost/hook",
            "https://10.0.0.5/",
            "https://172.16.0.1/",
            "https://172.31.255.255/",
            "https://192.168.1.1/",
            "https://169.254.169.254/latest/meta-data/",
            "https://169.254.1.1/",
            "https://0.0.0.0/",
            "https://100.64.0.1/",
            "https://[::1]/",
            "https://[fc00::1]/",
            "https://[fd12:3456::1]/",
            "https://[fe80::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:169.254.169.254]/",
            "https://[64:ff9b::a9fe:a9fe]/",
            "https://2130706433/",
            "https://0x7f000001/",
            "https://0x7f.1/",
            "https://017700000001/",
            "https://3232235777/",
        ] {
            assert!(refused(url, LIVE), "{url} must be refused");
        }
    }

    #[test]
    fn public_https_is_allowed_in_live_mode() {
        for url in ["https://example.com/hooks/malipo", "https://93.184.216.34/x", "https://[2606:4700::1111]/"] {
            assert!(check_url(url, LIVE).is_ok(), "{url}");
        }
        assert!(!is_forbidden_ip("8.8.8.8".parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))));
        assert!(!is_forbidden_ip("172.32.0.1".parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))));
    }

    #[test]
    fn live_requires_https_and_test_allows_http_and_loopback() {
        assert_eq!(check_url("http://example.com/x", LIVE), Err(UrlError::NotHttps));
        assert!(check_url("http://127.0.0.1:9000/x", TEST).is_ok());
        assert!(check_url("http://localhost:9000/x", TEST).is_ok());
        assert!(check_url("http://[::1]:9000/x", TEST).is_ok());
        assert!(refused("http://169.254.169.254/", TEST), "metadata stays refused in test mode");
        assert!(refused("http://10.1.2.3/", TEST), "private stays refused in test mode");
        assert!(check_url("http://10.1.2.3/", UrlPolicy { allow_private: true, ..TEST }).is_ok());
        assert!(check_url("https://10.1.2.3/", UrlPolicy::live(true)).is_ok(), "operator opt-in");
    }

    #[test]
    fn malformed_urls_are_refused() {
        for url in ["", "example.com/x", "ftp://example.com/", "https://user:pw@example.com/", "javascript:alert(1)"] {
            assert!(matches!(check_url(url, TEST), Err(UrlError::Malformed | UrlError::NotHttps)), "{url}");
        }
        assert_eq!(check_url(&format!("https://example.com/{}", "a".repeat(2048)), LIVE), Err(UrlError::Malformed));
    }

    #[test]
    fn check_ip_applies_the_policy_after_resolution() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        assert!(check_ip(ip("127.0.0.1"), LIVE).is_err());
        assert!(check_ip(ip("127.0.0.1"), TEST).is_ok());
        assert!(check_ip(ip("10.0.0.1"), TEST).is_err());
        assert!(check_ip(ip("93.184.216.34"), LIVE).is_ok());
    }
}
