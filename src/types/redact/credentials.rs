//! Credential-shaped words in free text (a conversation, a tool's result): what a recording of
//! hook traffic must not keep (docs/protocol.md §21). Unlike a command's words, free text has no
//! roles to read, so only words shaped like a credential are replaced: API keys with a known
//! prefix (`sk-…`, `ghp_…`, `github_pat_…`, `AKIA…`, `xoxb-…`, `glpat-…`, `AIza…`), a bearer
//! token after its scheme (`Bearer …`), a JWT (three base64url parts, the first `eyJ…`), and a
//! URL's userinfo and query values ([`super::urls_in`]).

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::Value;

use super::HIDDEN;

static CREDENTIAL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?x)
        (?P<scheme>\b(?i:bearer|token)\s+)[A-Za-z0-9._~+/=-]{12,}
        | \bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}
        | \b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}
        | \bgithub_pat_[A-Za-z0-9_]{20,}
        | \bglpat-[A-Za-z0-9_-]{20,}
        | \b(?:AKIA|ASIA)[0-9A-Z]{16}\b
        | \bxox[abprs]-[A-Za-z0-9-]{10,}
        | \bAIza[0-9A-Za-z_-]{35}
        | \beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*
        ",
    )
    .ok()
});

/// `text` with every credential-shaped word replaced by [`HIDDEN`] (a bearer token keeps its
/// scheme: `Bearer ***`).
pub(crate) fn credentials_in(text: &str) -> Cow<'_, str> {
    let text = if text.contains("://") {
        Cow::Owned(super::urls_in(text))
    } else {
        Cow::Borrowed(text)
    };
    let Some(pattern) = CREDENTIAL.as_ref() else {
        // The pattern is a constant that compiles; were it not to, nothing would be kept
        // rather than a secret.
        return Cow::Borrowed(HIDDEN);
    };
    if !pattern.is_match(&text) {
        return text;
    }
    let replaced = pattern.replace_all(&text, |found: &Captures<'_>| match found.name("scheme") {
        Some(scheme) => format!("{}{HIDDEN}", scheme.as_str()),
        None => HIDDEN.to_string(),
    });
    Cow::Owned(replaced.into_owned())
}

/// Every string in `value` (object keys left as they are) through [`credentials_in`].
pub(crate) fn credentials_in_json(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let Cow::Owned(replaced) = credentials_in(text) {
                *text = replaced;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(credentials_in_json),
        Value::Object(fields) => fields.values_mut().for_each(credentials_in_json),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_shaped_words_are_replaced_and_the_rest_kept() {
        let cases = [
            (
                "my key is sk-proj-abcdefghijklmnop1234 ok",
                "my key is *** ok",
            ),
            ("sk-ant-api03-AbCdEf0123456789xyz", "***"),
            ("token ghp_0123456789abcdefABCDEF0123", "token ***"),
            ("github_pat_11ABCDEFG0123456789_abcdefghij", "***"),
            ("aws AKIAIOSFODNN7EXAMPLE here", "aws *** here"),
            ("slack xoxb-1234567890-abcdef", "slack ***"),
            (
                "Authorization: Bearer abc.def-ghi_jkl012",
                "Authorization: Bearer ***",
            ),
            (
                "jwt eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl end",
                "jwt *** end",
            ),
            (
                "see https://user:pw@example.com/x?key=v",
                "see https://***@example.com/x?key=***",
            ),
            (
                "an ordinary sentence, sk- and skip-this",
                "an ordinary sentence, sk- and skip-this",
            ),
            ("the token is short", "the token is short"),
            ("my key:\nsk-proj-abcdefghijklmnop1234", "my key:\n***"),
            ("\tghp_0123456789abcdefABCDEF0123", "\t***"),
        ];
        for (text, shown) in cases {
            assert_eq!(credentials_in(text), shown, "{text}");
        }
    }

    #[test]
    fn every_string_of_a_json_value_is_read() {
        let mut value = serde_json::json!({
            "user_input": "use sk-abcdefghijklmnopqrstu",
            "messages": [{"role": "user", "content": "ghp_0123456789abcdefABCDEF0123"}],
            "n": 3
        });
        credentials_in_json(&mut value);
        assert_eq!(
            value,
            serde_json::json!({"user_input": "use ***", "messages": [{"role": "user", "content": "***"}], "n": 3})
        );
    }
}
