//! The optional bearer token (`server.auth_token_file`): a shared secret that callers on
//! TCP gRPC and on the HTTP admin send as `authorization: Bearer <token>`. gRPC calls
//! without it, or with another one, end with UNAUTHENTICATED; HTTP requests with 401. The
//! health checks (gRPC `grpc.health.v1.Health`, HTTP `/healthz` and `/readyz`) stay open,
//! and the unix socket is guarded by its file permissions instead (Curio sends no token).

use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// HTTP paths answered without the token: probes that reveal nothing but up/ready.
pub const OPEN_HTTP_PATHS: &[&str] = &["/healthz", "/readyz"];

/// A bearer token read from a file.
#[derive(Clone)]
pub struct BearerToken(Arc<str>);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

impl BearerToken {
    /// The shortest token accepted, in bytes.
    pub const MIN_LEN: usize = 16;

    /// Reads the token: the file's content without surrounding white space, at least
    /// [`BearerToken::MIN_LEN`] bytes of visible ASCII.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            anyhow::anyhow!(
                "server.auth_token_file: cannot read {}: {e}",
                path.display()
            )
        })?;
        let token = text.trim();
        if token.len() < Self::MIN_LEN || !token.bytes().all(|b| b.is_ascii_graphic()) {
            anyhow::bail!(
                "server.auth_token_file: {} must hold a token of at least {} visible ASCII \
                 characters (e.g. `openssl rand -hex 32`)",
                path.display(),
                Self::MIN_LEN
            );
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            if let Ok(m) = std::fs::metadata(path) {
                if m.permissions().mode() & 0o004 != 0 {
                    tracing::warn!(
                        path = %path.display(),
                        "server.auth_token_file is readable by every user; chmod o-r it"
                    );
                }
            }
        }
        Ok(Self(token.into()))
    }

    /// The `authorization` header value that carries this token.
    pub fn header_value(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// Whether an `authorization` header value carries this token (compared in constant
    /// time, so that the time taken tells nothing about the token).
    pub fn accepts(&self, authorization: Option<&[u8]>) -> bool {
        let Some(given) = authorization.and_then(|v| v.strip_prefix(b"Bearer ")) else {
            return false;
        };
        let expected = self.0.as_bytes();
        given.len() == expected.len()
            && given
                .iter()
                .zip(expected)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }
}

/// The gRPC check: a tonic interceptor that lets a call through when no token is
/// configured or when it carries the token.
#[derive(Clone, Debug, Default)]
pub struct GrpcAuth(Option<BearerToken>);

impl GrpcAuth {
    /// Checks `token` when one is given, else lets every call through.
    pub fn new(token: Option<BearerToken>) -> Self {
        Self(token)
    }
}

impl tonic::service::Interceptor for GrpcAuth {
    fn call(&mut self, request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        match &self.0 {
            None => Ok(request),
            Some(t) => {
                let given = request
                    .metadata()
                    .get("authorization")
                    .map(|v| v.as_bytes());
                if t.accepts(given) {
                    Ok(request)
                } else {
                    Err(tonic::Status::unauthenticated(
                        "missing or wrong bearer token (authorization: Bearer <token>)",
                    ))
                }
            }
        }
    }
}

/// The HTTP check (an axum middleware, `from_fn_with_state`): requests outside
/// [`OPEN_HTTP_PATHS`] need the token.
pub async fn http_auth(
    State(token): State<Arc<BearerToken>>,
    request: Request,
    next: Next,
) -> Response {
    let open = OPEN_HTTP_PATHS.contains(&request.uri().path());
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    if open || token.accepts(given) {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "missing or wrong bearer token (authorization: Bearer <token>)\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_is_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "0123456789abcdef0123\n").unwrap();
        let t = BearerToken::read(&path).unwrap();
        assert!(t.accepts(Some(b"Bearer 0123456789abcdef0123")));
        for wrong in [
            &b"Bearer 0123456789abcdef012"[..],
            b"Bearer 0123456789abcdef01234",
            b"Bearer 0123456789abcdef0124",
            b"bearer 0123456789abcdef0123",
            b"0123456789abcdef0123",
            b"",
        ] {
            assert!(
                !t.accepts(Some(wrong)),
                "{}",
                String::from_utf8_lossy(wrong)
            );
        }
        assert!(!t.accepts(None));
        assert!(!format!("{t:?}").contains("0123"), "never logged");

        std::fs::write(&path, "short\n").unwrap();
        let e = BearerToken::read(&path).unwrap_err().to_string();
        assert!(e.contains("at least 16"), "{e}");
        assert!(BearerToken::read(&dir.path().join("absent")).is_err());
    }
}
