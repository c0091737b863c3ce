//! A connection's sign-in over time (`auth.jwt`, docs/protocol.md §20): a connection whose
//! token expired finishes its running chat, but a later `chat` gets `auth_expired` until an
//! `auth` frame brings a fresh token for the same user.

use std::future::Future;
use std::pin::Pin;

use crate::server::access::{SignedIn, TokenProblem};
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

/// An `auth` frame's token being checked (the provider's keys may have to be fetched): the
/// session goes on reading and writing meanwhile.
pub(super) type Renewal = Pin<Box<dyn Future<Output = Result<SignedIn, TokenProblem>> + Send>>;

/// An `auth` frame: its token is checked by the [`Renewal`] returned, or refused at once (this
/// server takes no tokens on a connection) with the `bad_frame` error's message returned.
pub(super) fn renew(
    token: String,
    state: &AppState,
    signed_in: Option<&SignedIn>,
) -> Result<Renewal, &'static str> {
    let (Some(verifier), Some(_)) = (state.jwt.clone(), signed_in) else {
        return Err("this server takes no sign-in tokens on a connection (auth.jwt is not set)");
    };
    Ok(Box::pin(async move { verifier.verify(&token).await }))
}

/// A checked `auth` token replaces the connection's sign-in when it names the same user (nothing
/// is answered then); otherwise the frame returned says why, and the old sign-in stays.
pub(super) fn renewed(
    checked: Result<SignedIn, TokenProblem>,
    signed_in: &mut Option<SignedIn>,
) -> Option<ServerFrame> {
    let current = signed_in.as_ref()?;
    let fresh = match checked {
        Ok(fresh) => fresh,
        Err(problem) => {
            tracing::warn!(user = %current.person.id, reason = problem.as_str(), "auth frame refused: invalid token ({})", problem.as_str());
            let message = format!("the token was refused: {}", problem.as_str());
            return Some(ServerFrame::error(None, ErrorCode::AuthExpired, message));
        }
    };
    if fresh.person.id != current.person.id {
        tracing::warn!(user = %current.person.id, "auth frame refused: the token names another user");
        let why = "the token names another user: open a new connection to sign in as them";
        return Some(ServerFrame::error(None, ErrorCode::BadFrame, why));
    }
    tracing::debug!(user = %fresh.person.id, "sign-in renewed");
    *signed_in = Some(fresh);
    None
}
