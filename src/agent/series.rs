//! The chat's own metric series, their handles looked up once and kept (`types::Kept`): a chat
//! records each of them once or twice, and looking the series up every time was a tenth of a
//! chat's own work together with the hooks' (docs/performance.md).

use metrics::{Counter, Histogram};

use crate::types::{Kept, KeptBy};

/// `hookwire_chats_total{outcome}`.
pub(super) static CHATS: KeptBy<Counter> =
    KeptBy::new(|outcome| metrics::counter!("hookwire_chats_total", "outcome" => outcome));
/// `hookwire_chat_duration_seconds`.
pub(super) static CHAT_SECONDS: Kept<Histogram> =
    Kept::new(|| metrics::histogram!("hookwire_chat_duration_seconds"));
/// `hookwire_text_deltas_total`.
pub(super) static TEXT_DELTAS: Kept<Counter> =
    Kept::new(|| metrics::counter!("hookwire_text_deltas_total"));
/// `hookwire_llm_calls_total`.
pub(super) static LLM_CALLS: Kept<Counter> =
    Kept::new(|| metrics::counter!("hookwire_llm_calls_total"));
/// `hookwire_llm_tokens_total{kind}`.
pub(super) static LLM_TOKENS: KeptBy<Counter> =
    KeptBy::new(|kind| metrics::counter!("hookwire_llm_tokens_total", "kind" => kind));
/// `hookwire_llm_first_token_seconds`.
pub(super) static LLM_FIRST_TOKEN_SECONDS: Kept<Histogram> =
    Kept::new(|| metrics::histogram!("hookwire_llm_first_token_seconds"));
/// `hookwire_llm_call_seconds`.
pub(super) static LLM_CALL_SECONDS: Kept<Histogram> =
    Kept::new(|| metrics::histogram!("hookwire_llm_call_seconds"));
