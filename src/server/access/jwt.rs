//! Verifying a sign-in token (`auth.jwt`, docs/protocol.md §20): its header's algorithm against
//! the allowed ones (never `none`, never an HMAC: the keys are public), its signature with the
//! provider's key ([`keys`](super::keys)), then issuer, audience, `exp` and `nbf` with the leeway.
//! What comes out is the person the claims name and when the token expires.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use super::keys::KeyCache;
use crate::config::JwtSettings;
use crate::types::Person;

/// Why a token was refused: what the log line and the client's message name (never the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenProblem {
    Expired,
    NotYetValid,
    WrongIssuer,
    WrongAudience,
    BadSignature,
    UnknownKey,
    ForbiddenAlgorithm,
    Malformed,
}

impl TokenProblem {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TokenProblem::Expired => "expired",
            TokenProblem::NotYetValid => "not yet valid",
            TokenProblem::WrongIssuer => "wrong issuer",
            TokenProblem::WrongAudience => "wrong audience",
            TokenProblem::BadSignature => "bad signature",
            TokenProblem::UnknownKey => "unknown key",
            TokenProblem::ForbiddenAlgorithm => "forbidden algorithm",
            TokenProblem::Malformed => "malformed",
        }
    }
}

/// Who a valid token signs in, and until when.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SignedIn {
    pub(crate) person: Person,
    pub(crate) expires_at: SystemTime,
}

impl SignedIn {
    /// Whether the token has expired by now (the leeway is for clocks, not for this: a
    /// connection's token expires when it says).
    pub(crate) fn expired(&self) -> bool {
        SystemTime::now() >= self.expires_at
    }
}

/// The verifier of one server: the settings and the key cache.
pub(crate) struct JwtVerifier {
    settings: JwtSettings,
    keys: KeyCache,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl JwtVerifier {
    pub(crate) fn new(settings: JwtSettings) -> Result<Self, reqwest::Error> {
        let keys = KeyCache::new(settings.keys.clone())?;
        Ok(Self { settings, keys })
    }

    /// The person a token signs in, or why it does not.
    pub(crate) async fn verify(&self, token: &str) -> Result<SignedIn, TokenProblem> {
        let header = raw_header(token)?;
        let algorithm = self.allowed_algorithm(&header)?;
        let kid = header.get("kid").and_then(Value::as_str);
        let key = self.keys.key(kid).await.ok_or(TokenProblem::UnknownKey)?;
        // A key pinned to one algorithm verifies that one only.
        if key.algorithm.is_some_and(|pinned| pinned != algorithm) {
            return Err(TokenProblem::ForbiddenAlgorithm);
        }
        let mut validation = Validation::new(algorithm);
        validation.leeway = self.settings.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_audience(&[&self.settings.audience]);
        validation.required_spec_claims = ["exp", "aud"].map(str::to_string).into();
        if let Some(issuer) = &self.settings.issuer {
            validation.set_issuer(&[issuer]);
            validation.required_spec_claims.insert("iss".into());
        }
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|error| problem(error.kind()))?
            .claims;
        self.signed_in(&claims)
    }

    /// The header's `alg`, when the settings allow it; `none` and HMAC never are.
    fn allowed_algorithm(&self, header: &Map<String, Value>) -> Result<Algorithm, TokenProblem> {
        let name = header
            .get("alg")
            .and_then(Value::as_str)
            .ok_or(TokenProblem::Malformed)?;
        let algorithm: Algorithm = name.parse().map_err(|_| TokenProblem::ForbiddenAlgorithm)?;
        if !self.settings.algorithms.contains(&algorithm) {
            return Err(TokenProblem::ForbiddenAlgorithm);
        }
        Ok(algorithm)
    }

    fn signed_in(&self, claims: &Map<String, Value>) -> Result<SignedIn, TokenProblem> {
        let id = claims
            .get(&self.settings.user_claim)
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .ok_or(TokenProblem::Malformed)?;
        let tenant = self
            .settings
            .tenant_claim
            .as_ref()
            .and_then(|claim| claims.get(claim))
            .and_then(Value::as_str)
            .map(str::to_string);
        let roles = self
            .settings
            .roles_claim
            .as_ref()
            .and_then(|claim| claims.get(claim))
            .map(roles)
            .unwrap_or_default();
        let exp = claims
            .get("exp")
            .and_then(Value::as_u64)
            .ok_or(TokenProblem::Malformed)?;
        Ok(SignedIn {
            person: Person {
                id: id.to_string(),
                tenant,
                roles,
            },
            expires_at: UNIX_EPOCH + Duration::from_secs(exp),
        })
    }
}

/// Roles as a list of strings, or one space-separated string (as `scope` is).
fn roles(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Value::String(text) => text.split_whitespace().map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

/// The header as JSON, read before anything is trusted: `alg: none` must be named as such.
fn raw_header(token: &str) -> Result<Map<String, Value>, TokenProblem> {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenProblem::Malformed);
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| TokenProblem::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| TokenProblem::Malformed)
}

fn problem(kind: &ErrorKind) -> TokenProblem {
    match kind {
        ErrorKind::ExpiredSignature => TokenProblem::Expired,
        ErrorKind::ImmatureSignature => TokenProblem::NotYetValid,
        ErrorKind::InvalidIssuer => TokenProblem::WrongIssuer,
        ErrorKind::InvalidAudience => TokenProblem::WrongAudience,
        ErrorKind::InvalidSignature => TokenProblem::BadSignature,
        ErrorKind::MissingRequiredClaim(claim) if claim == "aud" => TokenProblem::WrongAudience,
        ErrorKind::MissingRequiredClaim(claim) if claim == "iss" => TokenProblem::WrongIssuer,
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => {
            TokenProblem::ForbiddenAlgorithm
        }
        _ => TokenProblem::Malformed,
    }
}
