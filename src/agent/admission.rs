//! A chat's admission: its place in the quotas of its person and tenant (docs/protocol.md §20),
//! taken before anything of the chat runs, and its tenant's label in the per-tenant metrics.

use super::AgentInner;
use crate::types::{ChatError, ChatRequest, ErrorCode};

/// The chat admitted against the quotas of its person (the static token's holder without
/// sign-in) and their tenant; `None` when no quota applies. A spent limit is `quota_exceeded`
/// with when to try again; a shared state that cannot be reached, when the operator chose to
/// fail closed, is `unavailable`.
pub(super) async fn admit(
    inner: &AgentInner,
    request: &ChatRequest,
) -> Result<Option<crate::quota::Ticket>, ChatError> {
    use crate::quota::Denied;
    let Some(quotas) = &inner.quotas else {
        return Ok(None);
    };
    let holder;
    let person = match &request.person {
        Some(person) => person,
        None => {
            holder = crate::types::Person::token_holder();
            &holder
        }
    };
    match quotas.admit(person).await {
        Ok(ticket) => Ok(ticket.counts().then_some(ticket)),
        Err(Denied::Spent(refused)) => {
            tracing::info!(chat = %request.id, subject = %refused.subject, limit = refused.spent.as_str(), retry_after_seconds = refused.retry_after_seconds, "refused a chat over its quota");
            metrics::counter!("hookwire_quota_refusals_total", "limit" => refused.spent.as_str())
                .increment(1);
            let seconds = refused.retry_after_seconds;
            Err(ChatError::new(ErrorCode::QuotaExceeded, refused.to_string()).retry_after(seconds))
        }
        Err(Denied::Unavailable(_)) => Err(ChatError::new(
            ErrorCode::Unavailable,
            "the server cannot count this chat against its quotas right now; try again shortly",
        )
        .retry_after(crate::quota::UNAVAILABLE_RETRY_SECONDS)),
    }
}

/// The label of the chat's tenant in the per-tenant metrics: its name when the operator lists
/// it, `other` when not (the label set stays bounded whatever tokens say); `None` without one.
pub(super) fn tenant_label(inner: &AgentInner, request: &ChatRequest) -> Option<String> {
    let tenant = request.person.as_ref()?.tenant.as_ref()?;
    Some(if inner.tenants.contains_key(tenant) {
        tenant.clone()
    } else {
        "other".to_string()
    })
}
