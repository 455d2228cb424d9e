//! Network safety of a real daemon: an address other machines reach needs
//! `server.allow_remote`; the bearer token guards gRPC on TCP and the HTTP admin (health
//! checks and the unix socket aside); TLS with a self-signed certificate made here carries
//! gRPC and HTTP, and a plaintext client gets nothing through it.

mod daemon_support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use daemon_support::*;
use filprove::server::pb::proving_engine_client::ProvingEngineClient;
use filprove::server::pb::GetStatusRequest;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

const TOKEN: &str = "3f9c1e0a7b5d42e8a61c9f0b7d3e5a21";

fn status_request(bearer: Option<&str>) -> tonic::Request<GetStatusRequest> {
    let mut r = tonic::Request::new(GetStatusRequest {});
    if let Some(t) = bearer {
        r.metadata_mut()
            .insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    r
}

async fn status_code(channel: Channel, bearer: Option<&str>) -> tonic::Code {
    match ProvingEngineClient::new(channel)
        .get_status(status_request(bearer))
        .await
    {
        Ok(_) => tonic::Code::Ok,
        Err(s) => s.code(),
    }
}

/// What a `filprove` command did.
struct Ran {
    ok: bool,
    status: std::process::ExitStatus,
    stderr: String,
}

fn filprove_client(args: &[&str]) -> Ran {
    let o = Command::new(env!("CARGO_BIN_EXE_filprove"))
        .args(args)
        .output()
        .unwrap();
    Ran {
        ok: o.status.success(),
        status: o.status,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// `filprove health -c <config>` on a configuration in `dir` with the daemon's HTTP admin
/// address and `server` keys: whether it succeeded, its stdout and its stderr.
fn filprove_health(dir: &Path, http: std::net::SocketAddr, server: &str) -> (bool, String, String) {
    let config = dir.join(format!("health-{}.toml", next_config_number()));
    std::fs::write(
        &config,
        format!(
            "[server]\nunix_socket = {:?}\nhttp_listen = \"{http}\"\n{server}\n\
             [journal]\nenabled = false\n",
            dir.join("unused.sock").display().to_string()
        ),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_filprove"))
        .args(["health", "--timeout-secs", "20", "-c"])
        .arg(&config)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn next_config_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[test]
fn an_address_other_machines_reach_needs_allow_remote() {
    let daemon = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_filprove"))
            .arg("daemon")
            .args(args)
            .arg("--check-config")
            .output()
            .unwrap()
    };
    for args in [
        &["--listen", "0.0.0.0:9820", "--http-listen", ""][..],
        &["--listen", "/tmp/x.sock", "--http-listen", "[::]:9821"],
    ] {
        let o = daemon(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("server.allow_remote = true"), "{err}");
        let o = daemon(&[args, &["--allow-remote"]].concat());
        assert!(
            o.status.success(),
            "{args:?} --allow-remote: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(daemon(&["--listen", "127.0.0.1:9820"]).status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_guards_tcp_grpc_and_the_admin_endpoints() {
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let d = TestDaemon::start(|c| c.server.auth_token_file = token_file.display().to_string());

    let tcp = filprove::client::channel(&d.tcp_addr()).await.unwrap();
    assert_eq!(
        status_code(tcp.clone(), None).await,
        tonic::Code::Unauthenticated
    );
    let wrong = &TOKEN[1..];
    assert_eq!(
        status_code(tcp.clone(), Some(wrong)).await,
        tonic::Code::Unauthenticated
    );
    assert_eq!(status_code(tcp.clone(), Some(TOKEN)).await, tonic::Code::Ok);
    // Health stays open on TCP; the socket is guarded by its permissions.
    let health = tonic_health::pb::health_client::HealthClient::new(tcp)
        .check(tonic_health::pb::HealthCheckRequest {
            service: "cuzk.v1.ProvingEngine".into(),
        })
        .await;
    assert!(health.is_ok(), "{health:?}");
    let unix = filprove::client::channel(&d.unix_addr()).await.unwrap();
    assert_eq!(status_code(unix, None).await, tonic::Code::Ok);

    let get = |path: &str, headers: &[&str]| {
        let mut s = std::net::TcpStream::connect(d.http).unwrap();
        http_exchange(&mut s, path, headers)
    };
    let right = format!("Authorization: Bearer {TOKEN}");
    let wrong = format!("Authorization: Bearer {wrong}");
    for path in ["/status", "/metrics"] {
        let (code, headers, _) = get(path, &[]);
        assert_eq!(code, 401, "{path} without the token");
        assert!(
            headers.iter().any(|h| h == "www-authenticate: bearer"),
            "{headers:?}"
        );
        assert_eq!(get(path, &[&wrong]).0, 401, "{path} with a wrong token");
        assert_eq!(get(path, &[&right]).0, 200, "{path} with the token");
    }
    assert!(get("/status", &[&right]).2.contains("\"uptime_seconds\""));
    assert_eq!(get("/healthz", &[]).0, 200);
    assert_eq!(get("/readyz", &[]).0, 200);

    // The client commands send the token of --token-file.
    let tcp = d.tcp.to_string();
    let o = filprove_client(&["status", "--addr", &tcp]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stderr.contains("bearer token"), "{}", o.stderr);
    let token_arg = token_file.display().to_string();
    let o = filprove_client(&["status", "--addr", &tcp, "--token-file", &token_arg]);
    assert!(o.ok, "{}", o.stderr);

    // `filprove health` on the daemon's configuration: /readyz answers (the token is sent,
    // though the probes need none); once the daemon is gone, the probe fails.
    let http = d.http;
    let token_key = format!("auth_token_file = {:?}", token_file.display().to_string());
    let (ok, out, err) = filprove_health(secrets.path(), http, &token_key);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "ready");
    let (ok, out, _) = filprove_health(secrets.path(), http, "");
    assert!(ok && out.trim() == "ready");
    d.shutdown().unwrap();
    let (ok, _, err) = filprove_health(secrets.path(), http, "");
    assert!(!ok);
    assert!(
        err.contains(&format!("http://{http}/readyz")) && err.contains("cannot connect"),
        "{err}"
    );
}

/// A self-signed certificate for "localhost" and 127.0.0.1 in `dir`: (certificate PEM, its
/// path, the key's path).
fn self_signed(dir: &Path) -> (String, String, String) {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let ck = rcgen::generate_simple_self_signed(names).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    (
        ck.cert.pem(),
        cert.display().to_string(),
        key.display().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_carries_grpc_and_http_with_a_self_signed_certificate() {
    let secrets = tempfile::tempdir().unwrap();
    let (cert_pem, cert, key) = self_signed(secrets.path());
    let d = TestDaemon::start(|c| {
        c.server.tls_cert_file = cert.clone();
        c.server.tls_key_file = key.clone();
    });
    // The client commands: --tls-ca trusts the certificate; without it, no answer.
    let tcp = d.tcp.to_string();
    let o = filprove_client(&["status", "--addr", &tcp, "--tls-ca", &cert]);
    assert!(o.ok, "{}", o.stderr);
    assert!(!filprove_client(&["status", "--addr", &tcp]).ok);

    // gRPC: a client trusting the certificate gets through, a plaintext one does not.
    let tls = Endpoint::from_shared(format!("https://127.0.0.1:{}", d.tcp.port()))
        .unwrap()
        .tls_config(
            ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(&cert_pem))
                .domain_name("localhost"),
        )
        .unwrap()
        .connect()
        .await
        .unwrap();
    assert_eq!(status_code(tls, None).await, tonic::Code::Ok);
    // (or it is refused at the handshake already)
    if let Ok(plain) = filprove::client::channel(&d.tcp_addr()).await {
        assert_ne!(status_code(plain, None).await, tonic::Code::Ok);
    }

    // HTTP: the same certificate.
    let mut roots = rustls::RootCertStore::empty();
    let der = rustls::pki_types::CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .next()
        .unwrap()
        .unwrap();
    roots.add(der).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let conn =
        rustls::ClientConnection::new(Arc::new(config), "localhost".try_into().unwrap()).unwrap();
    let tcp = std::net::TcpStream::connect(d.http).unwrap();
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut stream = rustls::StreamOwned::new(conn, tcp);
    let (code, _, body) = http_exchange(&mut stream, "/status", &[]);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"uptime_seconds\""), "{body}");

    // Plain HTTP to the TLS port: no HTTP answer.
    let mut plain = std::net::TcpStream::connect(d.http).unwrap();
    plain
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    use std::io::{Read as _, Write as _};
    plain
        .write_all(b"GET /status HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/"), "{answer:?}");

    // `filprove health` on the daemon's configuration speaks HTTPS, the certificate of
    // server.tls_cert_file pinned; without the TLS keys it gets no HTTP answer, and a
    // configuration naming another certificate refuses the daemon's.
    let tls_keys = format!("tls_cert_file = {cert:?}\ntls_key_file = {key:?}");
    let (ok, out, err) = filprove_health(secrets.path(), d.http, &tls_keys);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "ready");
    let (ok, _, err) = filprove_health(secrets.path(), d.http, "");
    assert!(!ok);
    assert!(err.contains("no HTTP answer"), "{err}");
    let other = tempfile::tempdir().unwrap();
    let (_, other_cert, other_key) = self_signed(other.path());
    let other_keys = format!("tls_cert_file = {other_cert:?}\ntls_key_file = {other_key:?}");
    let (ok, _, err) = filprove_health(secrets.path(), d.http, &other_keys);
    assert!(!ok);
    assert!(err.contains("TLS handshake failed"), "{err}");
    d.shutdown().unwrap();
}
