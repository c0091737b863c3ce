//! What the server's routes show of the operator's settings: commands and URLs with their
//! secrets taken out (docs/protocol.md §16). The files have them whole; a route shows the shape.
//!
//! The rule for a command (shell text: no parser can tell every secret from an argument, so
//! where a word's role is unknown it errs on the side of hiding):
//! - every URL, of any scheme (`https://`, `postgresql://`, `amqp://`, `redis://`…), is shown as
//!   [`url`] shows it;
//! - the value of every assignment is hidden: `KEY=…`, `--flag=…`;
//! - the word after a flag whose name says secret (`--token`, `--api-key`, `--password`,
//!   `--auth…`, `--user`, `--cookie`, `--credential…`) is hidden, and after `-p` and `-u`
//!   (a password, `user:password`), and after an auth scheme (`Bearer`, `Basic`, `Token`);
//! - a secret glued to its flag is hidden where the program reads it so: `-pPASS` (`mysql`,
//!   `mysqldump`, `mariadb`…, `sshpass`), `-aPASS` (`redis-cli`, which takes `-a PASS` too),
//!   `-uUSER:PASS` (`curl`);
//! - a header whose name says secret (`Authorization:`, `Cookie:`, `X-Api-Key:`, …) keeps its
//!   name and auth scheme, and the rest of the header is hidden; so is the value of a JSON key
//!   that says secret (`{"password": …}`);
//! - quoted text is read by the same rules (it is often a command of its own: `sh -c '…'`, or a
//!   header), its quotes kept: `echo "no secrets here"` is shown as it is;
//! - every long opaque word (16 characters or more of letters, digits and `-_+/=~%.`, with both
//!   letters and digits) is hidden.
//!
//! Hidden text becomes [`HIDDEN`].

mod credentials;

pub(crate) use credentials::{credentials_in, credentials_in_json};

use std::iter::Peekable;
use std::str::CharIndices;

/// What a hidden value is shown as.
pub(crate) const HIDDEN: &str = "***";

/// `url` without its userinfo, query values and fragment: `https://u:p@h/x?k=v#f` →
/// `https://***@h/x?k=***`. Path segments that look like opaque tokens are hidden too (a
/// webhook URL often carries its key in its path).
pub(crate) fn url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return command(url);
    };
    // The userinfo ends at the last `@` before the query: a password may hold `/` or `#`.
    let query_at = rest.find('?').unwrap_or(rest.len());
    let (userinfo, rest) = match rest[..query_at].rfind('@') {
        Some(at) => (true, &rest[at + 1..]),
        None => (false, rest),
    };
    let rest = rest.split('#').next().unwrap_or("");
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (rest, None),
    };
    let (host, path) = match before_query.find('/') {
        Some(at) => before_query.split_at(at),
        None => (before_query, ""),
    };
    let userinfo = if userinfo { "***@" } else { "" };
    let path: Vec<&str> = path
        .split('/')
        .map(|segment| if opaque(segment) { HIDDEN } else { segment })
        .collect();
    let mut out = format!("{scheme}://{userinfo}{host}{}", path.join("/"));
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

/// Every URL in `text` (`scheme://` up to a space, a quote or a bracket) as [`url`] shows it;
/// the rest as it is. For messages that quote a URL (an error from a connect).
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

/// Where the first `scheme://` of `text` starts (a scheme is a letter, then letters, digits and
/// `+-.`).
fn find_url(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let colon = from + found;
        let scheme_start = text[..colon]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || "+-.".contains(*c))
            .last()
            .map(|(at, _)| at);
        // The scheme begins at its first letter (`1http://` is `http://` after a digit).
        let start = scheme_start.and_then(|start| {
            text[start..colon]
                .find(|c: char| c.is_ascii_alphabetic())
                .map(|offset| start + offset)
        });
        if let Some(start) = start {
            return Some(start);
        }
        from = colon + 3;
    }
    None
}

/// `command` as the module's rule shows it.
pub(crate) fn command(command: &str) -> String {
    Redactor::default().text(command, 0)
}

/// Quoted text nested deeper than this is hidden whole (each level is read by the rules again).
const MAX_DEPTH: usize = 8;

/// Characters that end a shell word and start a new simple command.
const OPERATORS: &str = "|&;()";

/// One piece of a shell word: text outside quotes (backslash escapes kept as written), or the
/// inside of a quoted string.
enum Part<'a> {
    Plain(&'a str),
    Quoted {
        quote: char,
        inner: &'a str,
        closed: bool,
    },
}

enum Token<'a> {
    Space(&'a str),
    Operator(&'a str),
    Word(Vec<Part<'a>>),
}

/// Reads shell text into spaces, operators and words.
fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        let run = |chars: &mut Peekable<CharIndices<'_>>, keep: &dyn Fn(char) -> bool| {
            let mut end = start;
            while let Some(&(at, c)) = chars.peek() {
                if !keep(c) {
                    break;
                }
                end = at + c.len_utf8();
                chars.next();
            }
            &text[start..end]
        };
        if c.is_whitespace() {
            out.push(Token::Space(run(&mut chars, &|c| c.is_whitespace())));
        } else if OPERATORS.contains(c) {
            out.push(Token::Operator(run(&mut chars, &|c| OPERATORS.contains(c))));
        } else {
            out.push(Token::Word(word(text, &mut chars)));
        }
    }
    out
}

/// One word: up to unquoted whitespace or an operator.
fn word<'a>(text: &'a str, chars: &mut Peekable<CharIndices<'a>>) -> Vec<Part<'a>> {
    let mut parts = Vec::new();
    let mut plain: Option<(usize, usize)> = None;
    while let Some(&(at, c)) = chars.peek() {
        if c.is_whitespace() || OPERATORS.contains(c) {
            break;
        }
        chars.next();
        if c == '\'' || c == '"' {
            if let Some((start, end)) = plain.take() {
                parts.push(Part::Plain(&text[start..end]));
            }
            // To the closing quote (a backslash escapes inside double quotes).
            let (mut end, mut closed, mut escaped) = (text.len(), false, false);
            for (inner_at, inner) in chars.by_ref() {
                if escaped {
                    escaped = false;
                } else if inner == '\\' && c == '"' {
                    escaped = true;
                } else if inner == c {
                    (end, closed) = (inner_at, true);
                    break;
                }
            }
            parts.push(Part::Quoted {
                quote: c,
                inner: &text[at + 1..end],
                closed,
            });
        } else {
            let mut end = at + c.len_utf8();
            if c == '\\' {
                if let Some((next_at, next)) = chars.next() {
                    end = next_at + next.len_utf8();
                }
            }
            let start = plain.map_or(at, |(start, _)| start);
            plain = Some((start, end));
        }
    }
    if let Some((start, end)) = plain {
        parts.push(Part::Plain(&text[start..end]));
    }
    parts
}

/// The value of a word as the program gets it (near enough: escapes are kept).
fn value(parts: &[Part<'_>]) -> String {
    parts
        .iter()
        .map(|part| match part {
            Part::Plain(text) => *text,
            Part::Quoted { inner, .. } => inner,
        })
        .collect()
}

/// What the words read so far say about the next ones, within one simple command.
#[derive(Default)]
struct Redactor {
    out: String,
    /// The program of the simple command (`mysql`, `curl`), once its first word is read.
    program: Option<String>,
    /// The word before said the next one is a secret.
    hide_next: bool,
    /// A secret header's name was read: the rest of the text is its value.
    rest: Rest,
}

#[derive(Default, PartialEq)]
enum Rest {
    #[default]
    Shown,
    /// Hiding, nothing shown for it yet (an auth scheme may still come).
    Hiding,
    /// Hidden: the words left are dropped.
    Hidden,
}

impl Redactor {
    fn text(mut self, text: &str, depth: usize) -> String {
        for token in tokens(text) {
            match token {
                Token::Space(space) => {
                    if self.rest != Rest::Hidden {
                        self.out.push_str(space);
                    }
                }
                Token::Operator(operator) => {
                    if self.rest == Rest::Hidden {
                        self.out.push(' ');
                    }
                    (self.program, self.hide_next, self.rest) = (None, false, Rest::Shown);
                    self.out.push_str(operator);
                }
                Token::Word(parts) => self.word(&parts, depth),
            }
        }
        self.out
    }

    fn word(&mut self, parts: &[Part<'_>], depth: usize) {
        let value = value(parts);
        match self.rest {
            Rest::Hidden => return,
            Rest::Hiding if auth_scheme(&value) => return self.out.push_str(&value),
            Rest::Hiding => {
                self.rest = Rest::Hidden;
                return self.out.push_str(HIDDEN);
            }
            Rest::Shown => {}
        }
        if std::mem::take(&mut self.hide_next) {
            return self.out.push_str(HIDDEN);
        }
        if let Some(Part::Plain(first)) = parts.first() {
            if let Some((name, _)) = first.split_once('=') {
                if assignment_name(name) {
                    return self.out.push_str(&format!("{name}={HIDDEN}"));
                }
            }
        }
        if self.program.is_none() {
            let program = value.rsplit('/').next().unwrap_or(&value);
            if !WRAPPERS.contains(&program) {
                self.program = Some(program.to_string());
            }
        }
        let program = self.program.clone().unwrap_or_default();
        let program = program.as_str();
        if let Some(flag) = glued_secret(program, &value) {
            return self.out.push_str(&format!("-{flag}{HIDDEN}"));
        }
        // A URL with a quoted piece (`https://h/x?token="…"`) is one URL: read it whole.
        if let [Part::Plain(first), _, ..] = parts {
            if find_url(first).is_some() {
                return self.out.push_str(&urls_in(&value));
            }
        }
        let shown = self.parts(parts, depth);
        self.out.push_str(&shown);
        self.hide_next |= matches!(parts, [Part::Plain(_)]) && announces_secret(program, &value);
    }

    /// A word piece by piece: plain text by the word rules, quoted text by the whole rule.
    fn parts(&mut self, parts: &[Part<'_>], depth: usize) -> String {
        let mut shown = String::new();
        // A quoted JSON key that says secret, then `:`: its value is hidden.
        let mut secret_key = false;
        let mut hide_value = false;
        for part in parts {
            match part {
                Part::Plain(text) => {
                    hide_value = secret_key && text.trim_start().starts_with(':');
                    if hide_value && text.trim_end().len() > 1 {
                        // The value is plain (`"password":hunter2,…`): hide it all.
                        shown.push_str(&format!(":{HIDDEN}"));
                        hide_value = false;
                    } else {
                        shown.push_str(&self.plain(text));
                    }
                    secret_key = false;
                }
                Part::Quoted {
                    quote,
                    inner,
                    closed,
                } => {
                    let inner_shown = if std::mem::take(&mut hide_value) || depth >= MAX_DEPTH {
                        HIDDEN.to_string()
                    } else {
                        Redactor::default().text(inner, depth + 1)
                    };
                    shown.push(*quote);
                    shown.push_str(&inner_shown);
                    if *closed {
                        shown.push(*quote);
                    }
                    secret_key = names_secret(inner);
                }
            }
        }
        // `{"password": "x"}` splits after the key's colon: the next word is its value.
        if hide_value {
            self.hide_next = true;
        }
        shown
    }

    /// Plain text of a word: URLs, a header that says secret, opaque words.
    fn plain(&mut self, text: &str) -> String {
        if find_url(text).is_some() {
            return urls_in(text);
        }
        if let Some((name, header_value)) = text.split_once(':') {
            let name_only = name.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
            let header = !name_only.is_empty()
                && name_only
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if header && names_secret(name_only) {
                if header_value.is_empty() {
                    self.rest = Rest::Hiding;
                    return text.to_string();
                }
                self.rest = Rest::Hidden;
                return format!("{name}:{HIDDEN}");
            }
        }
        if opaque(text) {
            return HIDDEN.to_string();
        }
        text.to_string()
    }
}

/// Words that run the program after them (`sudo -u root mysql …`: the program is `mysql`).
const WRAPPERS: [&str; 6] = ["sudo", "env", "exec", "command", "nohup", "time"];

/// Programs that read a password glued to `-p` (`-pPASS`; a bare `-p` asks for it).
const GLUED_PASSWORD: [&str; 10] = [
    "mysql",
    "mysqldump",
    "mysqladmin",
    "mysqlimport",
    "mysqlcheck",
    "mysqlshow",
    "mariadb",
    "mariadb-dump",
    "mariadb-admin",
    "sshpass",
];

/// Common programs whose `-p` and `-u` take no secret (`mkdir -p`, `ssh -p PORT`, `sort -u`);
/// after any other program's, the next word is hidden.
const NO_SECRET_AFTER_P_OR_U: [&str; 22] = [
    "mkdir", "cp", "ssh", "scp", "psql", "pg_dump", "docker", "podman", "kubectl", "nc", "grep",
    "sort", "uniq", "date", "xargs", "git", "patch", "tar", "unzip", "install", "read", "netstat",
];

/// The flag letter of `word` when it is a short flag with a secret glued to it, for `program`.
fn glued_secret(program: &str, word: &str) -> Option<char> {
    let rest = word.strip_prefix('-')?;
    let mut chars = rest.chars();
    let flag = chars.next()?;
    if chars.as_str().is_empty() || flag == '-' {
        return None;
    }
    let glued = match flag {
        'p' => GLUED_PASSWORD.contains(&program),
        'a' => program == "redis-cli",
        'u' => program == "curl" && chars.as_str().contains(':'),
        _ => false,
    };
    glued.then_some(flag)
}

/// Whether the next word is a secret: after a flag whose name says so, after `-p`/`-u` (and
/// the flags a program reads a secret after), after an auth scheme.
fn announces_secret(program: &str, word: &str) -> bool {
    if auth_scheme(word) {
        return true;
    }
    let Some(name) = word.strip_prefix('-') else {
        return false;
    };
    let name = name.trim_start_matches('-');
    if name.chars().count() == 1 {
        return match name {
            "p" | "u" => !NO_SECRET_AFTER_P_OR_U.contains(&program),
            "a" => program == "redis-cli",
            _ => false,
        };
    }
    names_secret(name) || name.to_ascii_lowercase().contains("user")
}

/// Whether a name says it holds a secret (a flag, a header, a JSON key).
fn names_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "token",
        "key",
        "secret",
        "pass",
        "pwd",
        "auth",
        "bearer",
        "credential",
        "cookie",
    ]
    .iter()
    .any(|marker| name.contains(marker))
}

/// A word that comes before a credential in an `Authorization` header.
fn auth_scheme(word: &str) -> bool {
    word.eq_ignore_ascii_case("bearer") || matches!(word, "Basic" | "Token" | "Digest")
}

/// `NAME` of `NAME=value` / `--flag=value`.
fn assignment_name(name: &str) -> bool {
    let bare = name.trim_start_matches('-');
    !bare.is_empty()
        && bare
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
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
mod tests;
