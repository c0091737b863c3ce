//! A connection's sign-in over time (`auth.jwt`, docs/protocol.md §20): a connection whose
//! token expired finishes its running chat, but a later `chat` gets `auth_expired` until an
//! `auth` frame brings a fresh token for the same user.

use super::Outbox;
use crate::server::access::SignedIn;
use crate::server::frames::ServerFrame;
use crate::server::AppState;
use crate::types::ErrorCode;

/// The answer to a `chat` on a connection whose token has expired.
pub(super) fn expired(id: Option<String>) -> ServerFrame {
    ServerFrame::error(
        id,
        ErrorCode::AuthExpired,
        "the sign-in token has expired: send {\"type\":\"auth\",\"token\":\"...\"} with a fresh one",
    )
}

/// An `auth` frame: its token replaces the connection's when it verifies and names the same
/// user (nothing is answered then); otherwise an `error` frame says why, and the old sign-in
/// stays. `false` when the client floods the control channel.
pub(super) async fn renew(
    token: &str,
    state: &AppState,
    signed_in: &mut Option<SignedIn>,
    out: &mut Outbox,
) -> bool {
    let (Some(verifier), Some(current)) = (state.jwt.as_deref(), signed_in.as_ref()) else {
        let why = "this server takes no sign-in tokens on a connection (auth.jwt is not set)";
        return out.control(ServerFrame::error(None, ErrorCode::BadFrame, why));
    };
    let fresh = match verifier.verify(token).await {
        Ok(fresh) => fresh,
        Err(problem) => {
            tracing::warn!(user = %current.person.id, reason = problem.as_str(), "auth frame refused: invalid token ({})", problem.as_str());
            let message = format!("the token was refused: {}", problem.as_str());
            return out.control(ServerFrame::error(None, ErrorCode::AuthExpired, message));
        }
    };
    if fresh.person.id != current.person.id {
        tracing::warn!(user = %current.person.id, "auth frame refused: the token names another user");
        let why = "the token names another user: open a new connection to sign in as them";
        return out.control(ServerFrame::error(None, ErrorCode::BadFrame, why));
    }
    tracing::debug!(user = %fresh.person.id, "sign-in renewed");
    *signed_in = Some(fresh);
    true
}
