//! What the server's routes show of the operator's settings: commands and URLs with their
//! secrets taken out (docs/protocol.md §16). The files have them whole; a route shows the shape.
//!
//! The rule for a command (it is shell text, so no parser can tell a secret from an argument;
//! this errs on the side of hiding):
//! - every URL is shown as [`url`] shows it;
//! - the value of every assignment is hidden: `KEY=…`, `--flag=…`;
//! - the word after a flag or word whose name says secret (`token`, `key`, `secret`, `pass…`,
//!   `auth…`, `bearer`, `credential`, `-u`/`--user`, `-H`/`--header`) is hidden;
//! - every quoted string (`'…'`, `"…"`) is hidden, its quotes kept;
//! - every long opaque word (16 characters or more of letters, digits and `-_+/=~%`, with both
//!   letters and digits) is hidden.
//!
//! Hidden text becomes [`HIDDEN`].

/// What a hidden value is shown as.
pub(crate) const HIDDEN: &str = "***";

/// `url` without its userinfo, query values and fragment: `https://u:p@h/x?k=v#f` →
/// `https://***@h/x?k=***`. Path segments that look like opaque tokens are hidden too (a
/// webhook URL often carries its key in its path).
pub(crate) fn url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return command(url);
    };
    let rest = rest.split('#').next().unwrap_or("");
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.find('/') {
        Some(at) => before_query.split_at(at),
        None => (before_query, ""),
    };
    let host = match authority.rsplit_once('@') {
        Some((_, host)) => format!("{HIDDEN}@{host}"),
        None => authority.to_string(),
    };
    let path: Vec<&str> = path
        .split('/')
        .map(|segment| if opaque(segment) { HIDDEN } else { segment })
        .collect();
    let mut out = format!("{scheme}://{host}{}", path.join("/"));
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) => format!("{key}={HIDDEN}"),
                None if pair.is_empty() => String::new(),
                None => HIDDEN.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

/// Every `http://` / `https://` URL in `text` (up to a space, a quote or a bracket) as [`url`]
/// shows it; the rest as it is. For messages that quote a URL (an error from a connect).
pub(crate) fn urls_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = find_url(rest) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| c.is_whitespace() || "\"'<>()[]{}`,;".contains(c))
            .unwrap_or(tail.len());
        // Punctuation that ends a sentence is not the URL's (`…/mcp?token=x: refused`).
        let end = tail[..end].trim_end_matches(['.', ':', '!', '?']).len();
        out.push_str(&url(&tail[..end]));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

fn find_url(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    match (lower.find("http://"), lower.find("https://")) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `command` as the module's rule shows it.
pub(crate) fn command(command: &str) -> String {
    let mut out = String::with_capacity(command.len());
    let mut chars = command.char_indices().peekable();
    // Whether the word before said that the next one is a secret.
    let mut hide_next = false;
    while let Some(&(_, c)) = chars.peek() {
        if c.is_whitespace() {
            out.push(c);
            chars.next();
            continue;
        }
        // One shell word: up to unquoted whitespace; quoted parts hidden as they go.
        let mut word = String::new();
        let mut shown = String::new();
        while let Some(&(at, c)) = chars.peek() {
            if c.is_whitespace() {
                break;
            }
            chars.next();
            if c == '\'' || c == '"' {
                // To the closing quote (a backslash escapes inside double quotes).
                let mut end = at + 1;
                let mut escaped = false;
                for (at, inner) in chars.by_ref() {
                    end = at + inner.len_utf8();
                    if escaped {
                        escaped = false;
                    } else if inner == '\\' && c == '"' {
                        escaped = true;
                    } else if inner == c {
                        break;
                    }
                }
                word.push_str(&command[at..end]);
                shown.push(c);
                shown.push_str(HIDDEN);
                shown.push(c);
            } else {
                word.push(c);
                shown.push(c);
            }
        }
        let shown_word = if hide_next {
            HIDDEN.to_string()
        } else {
            plain_word(&shown)
        };
        // A flag is a bare word: a quoted string that mentions a token is hidden itself.
        hide_next = announces_secret(&word) && !word.contains(['=', '\'', '"']);
        out.push_str(&shown_word);
    }
    out
}

/// One word whose quoted parts are already hidden: URLs, assignments and opaque words.
fn plain_word(word: &str) -> String {
    if find_url(word).is_some() {
        return urls_in(word);
    }
    if let Some((name, _)) = word.split_once('=') {
        let assignment = !name.is_empty()
            && name
                .trim_start_matches('-')
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
        if assignment {
            return format!("{name}={HIDDEN}");
        }
    }
    if opaque(word) {
        return HIDDEN.to_string();
    }
    word.to_string()
}

/// A flag or word after which the next word is a secret: `--token`, `-p`, `--api-key`,
/// `Bearer`, `-H` (a header is often `Authorization: …`).
fn announces_secret(word: &str) -> bool {
    let name = word.trim_start_matches('-').to_ascii_lowercase();
    if word.starts_with('-') && name.len() == 1 {
        return matches!(name.as_str(), "p" | "u" | "h" | "k");
    }
    [
        "token",
        "key",
        "secret",
        "pass",
        "auth",
        "bearer",
        "credential",
        "header",
        "user",
        "cookie",
    ]
    .iter()
    .any(|marker| name.contains(marker))
}

/// A long random-looking word: 16+ characters of a token's alphabet, letters and digits both.
fn opaque(word: &str) -> bool {
    word.chars().count() >= 16
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_+/=~%.".contains(c))
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_userinfo_query_values_fragments_and_opaque_segments() {
        assert_eq!(
            url("https://user:pw@hooks.example:8443/a/b?key=K1&x=2&flag#frag"),
            "https://***@hooks.example:8443/a/b?key=***&x=***&***"
        );
        assert_eq!(url("http://127.0.0.1:9/hook"), "http://127.0.0.1:9/hook");
        assert_eq!(
            url("https://hooks.slack.example/services/T0001/B0002/abcdEFGH12345678ijkl"),
            "https://hooks.slack.example/services/T0001/B0002/***"
        );
        assert_eq!(
            urls_in("cannot connect to http://h/mcp?token=SECRET1: refused"),
            "cannot connect to http://h/mcp?token=***: refused"
        );
    }

    #[test]
    fn commands_lose_assignments_quoted_strings_flagged_words_and_opaque_words() {
        let shown = command(
            "API_KEY=C1 ./hook.sh --token=C2 --password C3 -H 'Authorization: Bearer C4' \
             curl https://u:C5@h.example/x?k=C6 sk0abcdefghijklmnopC7 \"C8\" --verbose",
        );
        for canary in ["C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8"] {
            assert!(!shown.contains(canary), "{canary} in {shown}");
        }
        assert_eq!(
            shown,
            "API_KEY=*** ./hook.sh --token=*** --password *** -H *** curl \
             https://***@h.example/x?k=*** *** \"***\" --verbose"
        );
        assert_eq!(
            command("jq .tool_name | grep -q read"),
            "jq .tool_name | grep -q read"
        );
    }
}
