//! gRPC addresses as Curio, cuzk and gRPC clients write them: `unix:///run/x.sock`,
//! `unix:/run/x.sock` or a plain path for a unix socket; `host:port`, `http://host:port`
//! or `dns:///host:port` for TCP.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// Where a gRPC endpoint is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GrpcAddress {
    /// A unix socket path.
    Unix(PathBuf),
    /// A TCP `host:port`.
    Tcp(String),
}

impl GrpcAddress {
    /// Parses any of the accepted forms.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let unix = |path: &str| -> Result<Self, String> {
            if path.is_empty() {
                return Err(format!("{text:?}: no socket path"));
            }
            Ok(Self::Unix(PathBuf::from(path)))
        };
        if let Some(rest) = t.strip_prefix("unix://") {
            // unix:///abs/path; "unix://rel" has no authority form in gRPC, read it as a path.
            return unix(rest);
        }
        if let Some(rest) = t.strip_prefix("unix:") {
            return unix(rest);
        }
        if t.starts_with("https://") {
            return Err(format!(
                "{text:?}: filprove serves plain gRPC (no TLS); use http:// or host:port"
            ));
        }
        let host_port = t
            .strip_prefix("http://")
            .or_else(|| t.strip_prefix("dns:///"))
            .or_else(|| t.strip_prefix("dns:"))
            .map(|r| r.trim_end_matches('/'));
        if let Some(hp) = host_port {
            return Self::tcp(text, hp);
        }
        if t.starts_with('/') || t.starts_with('.') || !t.contains(':') {
            return unix(t);
        }
        Self::tcp(text, t)
    }

    fn tcp(text: &str, host_port: &str) -> Result<Self, String> {
        let port = host_port
            .rsplit_once(':')
            .map(|(host, port)| (host, port.parse::<u16>()));
        match port {
            Some((host, Ok(_))) if !host.is_empty() => Ok(Self::Tcp(host_port.to_string())),
            _ => Err(format!(
                "{text:?} is not an address: use unix:///path/to.sock, /path/to.sock, \
                 host:port or http://host:port"
            )),
        }
    }

    /// The socket address a TCP address resolves to (the first one).
    pub fn resolve(host_port: &str) -> Result<SocketAddr, String> {
        host_port
            .to_socket_addrs()
            .map_err(|e| format!("{host_port:?} does not resolve: {e}"))?
            .next()
            .ok_or_else(|| format!("{host_port:?} resolves to no address"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_curio_and_grpc_use_is_read() {
        use GrpcAddress::*;
        let unix = |p: &str| Unix(PathBuf::from(p));
        for (text, want) in [
            ("unix:///run/curio/cuzk.sock", unix("/run/curio/cuzk.sock")),
            ("unix:/run/curio/cuzk.sock", unix("/run/curio/cuzk.sock")),
            ("unix:cuzk.sock", unix("cuzk.sock")),
            (
                "/run/filprove/filprove.sock",
                unix("/run/filprove/filprove.sock"),
            ),
            ("./filprove.sock", unix("./filprove.sock")),
            ("filprove.sock", unix("filprove.sock")),
            ("127.0.0.1:9820", Tcp("127.0.0.1:9820".into())),
            ("localhost:9820", Tcp("localhost:9820".into())),
            ("http://127.0.0.1:9820", Tcp("127.0.0.1:9820".into())),
            ("http://127.0.0.1:9820/", Tcp("127.0.0.1:9820".into())),
            (
                "dns:///gpu-prover.internal:9820",
                Tcp("gpu-prover.internal:9820".into()),
            ),
            ("[::1]:9820", Tcp("[::1]:9820".into())),
        ] {
            assert_eq!(GrpcAddress::parse(text).unwrap(), want, "{text}");
        }
        for bad in [
            "unix://",
            "https://x:1",
            "http://x",
            "x:y",
            ":9820",
            "http://:1",
        ] {
            assert!(GrpcAddress::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            GrpcAddress::resolve("127.0.0.1:9820").unwrap(),
            "127.0.0.1:9820".parse::<SocketAddr>().unwrap()
        );
        assert!(GrpcAddress::resolve("localhost:1")
            .unwrap()
            .ip()
            .is_loopback());
        assert!(GrpcAddress::resolve("no-such-host.invalid:1").is_err());
    }
}
