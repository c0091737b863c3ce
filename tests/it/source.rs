//! `src/` read as code, for the tests that keep ARCHITECTURE.md true (`layers.rs`,
//! `architecture.rs`): comments and literals blanked, unit-test modules left out, the `use`
//! paths of a file and the files they name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The crate's `src/`.
pub fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(dir, &mut out);
    out.sort();
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A module's unit tests kept in a file of their own: `x/tests.rs` or anything under `x/tests/`.
pub fn is_unit_test_file(src: &Path, file: &Path) -> bool {
    file.strip_prefix(src)
        .unwrap()
        .components()
        .any(|part| part.as_os_str() == "tests" || part.as_os_str() == "tests.rs")
}

/// The library's production files: everything under `src/` but unit-test files and the binary
/// (`main.rs`, `bin/`), which is a crate of its own.
pub fn library_files() -> Vec<PathBuf> {
    let src = src_dir();
    rust_files(&src)
        .into_iter()
        .filter(|file| !is_unit_test_file(&src, file))
        .filter(|file| {
            let relative = file.strip_prefix(&src).unwrap();
            relative != Path::new("main.rs") && !relative.starts_with("bin")
        })
        .collect()
}

/// Every file of `src/` but unit-test files: the library's production files and the binary's.
pub fn production_files() -> Vec<PathBuf> {
    let src = src_dir();
    rust_files(&src)
        .into_iter()
        .filter(|file| !is_unit_test_file(&src, file))
        .collect()
}

/// `text` with comments, string and char literals replaced by spaces (line breaks kept, so line
/// numbers hold): a brace or a `crate::` inside them is not code.
pub fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let after_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        let literal = if c == '/' && next == Some('/') {
            Some(
                (i..chars.len())
                    .find(|&j| chars[j] == '\n')
                    .unwrap_or(chars.len()),
            )
        } else if c == '/' && next == Some('*') {
            Some(block_comment_end(&chars, i))
        } else if c == '"' {
            Some(string_end(&chars, i + 1))
        } else if c == 'r' && !after_ident && matches!(next, Some('"' | '#')) {
            raw_string_end(&chars, i + 1) // None: an identifier like `r#type`
        } else if c == '\'' {
            char_literal_end(&chars, i) // None: a lifetime
        } else {
            None
        };
        let Some(end) = literal else {
            out.push(c);
            i += 1;
            continue;
        };
        out.extend(chars[i..end].iter().map(|&skipped| blank(skipped)));
        i = end;
    }
    out
}

fn block_comment_end(chars: &[char], start: usize) -> usize {
    let mut depth = 0;
    let mut i = start;
    while i + 1 < chars.len() {
        if chars[i] == '/' && chars[i + 1] == '*' {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars[i + 1] == '/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    chars.len()
}

/// The index after the closing quote of a string whose text starts at `i`.
fn string_end(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// `r"…"` / `r#"…"#`, from the index after the `r`.
fn raw_string_end(chars: &[char], mut i: usize) -> Option<usize> {
    let mut hashes = 0;
    while chars.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    if chars.get(i) != Some(&'"') {
        return None;
    }
    i += 1;
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            return Some(i + 1 + hashes);
        }
        i += 1;
    }
    Some(chars.len())
}

/// `'x'`, `'\n'`, `'\u{..}'`; None for a lifetime (`'a`).
fn char_literal_end(chars: &[char], start: usize) -> Option<usize> {
    match chars.get(start + 1)? {
        '\\' => {
            let close = (start + 3..chars.len().min(start + 14)).find(|&j| chars[j] == '\'')?;
            Some(close + 1)
        }
        _ if chars.get(start + 2) == Some(&'\'') => Some(start + 3),
        _ => None,
    }
}

/// Code (from [`code_only`]) with its unit-test modules blanked: a `#[cfg(test)]` on a
/// `mod x;` line or on a `mod x { … }` block. Everything else stays, other `#[cfg(test)]`
/// items included.
pub fn without_test_modules(code: &str) -> String {
    let mut chars: Vec<char> = code.chars().collect();
    let attribute: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + attribute.len() <= chars.len() {
        if chars[i..i + attribute.len()] != attribute[..] {
            i += 1;
            continue;
        }
        let Some(end) = test_module_end(&chars, i + attribute.len()) else {
            i += attribute.len();
            continue;
        };
        for c in &mut chars[i..end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = end;
    }
    chars.into_iter().collect()
}

/// Where the module an attribute ends before `i` ends, if the item is a module.
fn test_module_end(chars: &[char], mut i: usize) -> Option<usize> {
    let skip_space = |i: &mut usize| {
        while chars.get(*i).is_some_and(|c| c.is_whitespace()) {
            *i += 1;
        }
    };
    let word_at = |i: usize, word: &str| {
        let w: Vec<char> = word.chars().collect();
        chars.get(i..i + w.len()) == Some(&w[..])
            && !chars
                .get(i + w.len())
                .is_some_and(|c| c.is_alphanumeric() || *c == '_')
    };
    loop {
        skip_space(&mut i);
        if chars.get(i) == Some(&'#') {
            i = (i..chars.len()).find(|&j| chars[j] == ']')? + 1; // another attribute
        } else {
            break;
        }
    }
    if word_at(i, "pub") {
        i += 3;
        skip_space(&mut i);
        if chars.get(i) == Some(&'(') {
            i = (i..chars.len()).find(|&j| chars[j] == ')')? + 1;
        }
        skip_space(&mut i);
    }
    if !word_at(i, "mod") {
        return None;
    }
    let close = (i..chars.len()).find(|&j| chars[j] == ';' || chars[j] == '{')?;
    if chars[close] == ';' {
        return Some(close + 1);
    }
    let mut depth = 0;
    for (j, c) in chars.iter().enumerate().skip(close) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
    }
    Some(chars.len())
}

/// A file's production code: literals and comments blanked, its test modules left out.
pub fn production_code(file: &Path) -> String {
    without_test_modules(&code_only(&std::fs::read_to_string(file).unwrap()))
}

// ─── use paths ───

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Path, // ::
    Open,
    Close,
    Comma,
    Star,
    Semi,
    Other,
}

fn tokens(code: &str) -> Vec<(usize, Token)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((line, Token::Ident(chars[start..i].iter().collect())));
        } else {
            let token = match c {
                ':' if chars.get(i + 1) == Some(&':') => {
                    i += 1;
                    Token::Path
                }
                '{' => Token::Open,
                '}' => Token::Close,
                ',' => Token::Comma,
                '*' => Token::Star,
                ';' => Token::Semi,
                _ => Token::Other,
            };
            out.push((line, token));
            i += 1;
        }
    }
    out
}

/// The module paths a file's code names, each with its line: those of its `use` declarations
/// (`use a::{b, c::d};` gives `a::b` and `a::c::d`; `self` in a group is the group's own path;
/// `*` is kept), and those written in place that start with `crate::`, `super::` or `self::`
/// (`super::stats::record(…)`).
pub fn paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let tokens = tokens(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let starts_use = tokens[i].1 == Token::Ident("use".into())
            && (i == 0 || !matches!(tokens[i - 1].1, Token::Path));
        if starts_use {
            let line = tokens[i].0;
            i = use_tree(&tokens, i + 1, Vec::new(), line, &mut out);
        } else if let Some(end) = path_in_place(&tokens, i) {
            let path = tokens[i..end]
                .iter()
                .filter_map(|(_, token)| match token {
                    Token::Ident(name) => Some(name.clone()),
                    _ => None,
                })
                .collect();
            out.push((tokens[i].0, path));
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// Where a path written in place that starts at `i` with `crate::`, `super::` or `self::` ends.
fn path_in_place(tokens: &[(usize, Token)], i: usize) -> Option<usize> {
    let Token::Ident(first) = &tokens[i].1 else {
        return None;
    };
    let starts = matches!(first.as_str(), "crate" | "super" | "self")
        && tokens.get(i + 1).map(|t| &t.1) == Some(&Token::Path)
        && (i == 0 || tokens[i - 1].1 != Token::Path);
    if !starts {
        return None;
    }
    let mut end = i + 1;
    while tokens.get(end).map(|t| &t.1) == Some(&Token::Path)
        && matches!(tokens.get(end + 1).map(|t| &t.1), Some(Token::Ident(_)))
    {
        end += 2;
    }
    Some(end)
}

fn use_tree(
    tokens: &[(usize, Token)],
    mut i: usize,
    mut path: Vec<String>,
    line: usize,
    out: &mut Vec<(usize, Vec<String>)>,
) -> usize {
    loop {
        match tokens.get(i).map(|t| &t.1) {
            Some(Token::Path) => i += 1,
            Some(Token::Ident(name)) => {
                if name != "self" || path.is_empty() {
                    path.push(name.clone());
                }
                i += 1;
                match tokens.get(i).map(|t| &t.1) {
                    Some(Token::Path) => i += 1,
                    Some(Token::Ident(word)) if word == "as" => {
                        out.push((line, path));
                        return i + 2;
                    }
                    _ => {
                        out.push((line, path));
                        return i;
                    }
                }
            }
            Some(Token::Star) => {
                path.push("*".into());
                out.push((line, path));
                return i + 1;
            }
            Some(Token::Open) => {
                i += 1;
                loop {
                    match tokens.get(i).map(|t| &t.1) {
                        None => return i,
                        Some(Token::Close) => return i + 1,
                        Some(Token::Comma) => i += 1,
                        Some(_) => i = use_tree(tokens, i, path.clone(), line, out),
                    }
                }
            }
            _ => return i,
        }
    }
}

/// A library file's module path: `src/hooks/stack.rs` → `hooks::stack`, `src/hooks/mod.rs` →
/// `hooks`, `src/lib.rs` → the crate root (empty).
pub fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Which file each module path is.
pub fn module_files(files: &[PathBuf]) -> BTreeMap<Vec<String>, PathBuf> {
    let src = src_dir();
    files
        .iter()
        .map(|file| (module_path(&src, file), file.clone()))
        .collect()
}

/// The file a `crate::`, `super::` or `self::` path of the module `own` names (the longest
/// module prefix that is a file); None for paths into other crates.
pub fn file_named<'a>(
    modules: &'a BTreeMap<Vec<String>, PathBuf>,
    own: &[String],
    path: &[String],
) -> Option<&'a PathBuf> {
    let mut absolute: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("super" | "self") => own.to_vec(),
        _ => return None,
    };
    let mut rest = path;
    if rest[0] == "crate" {
        rest = &rest[1..];
    }
    while let Some((first, tail)) = rest.split_first() {
        match first.as_str() {
            "super" => {
                absolute.pop();
            }
            "self" => {}
            _ => break,
        }
        rest = tail;
    }
    absolute.extend(rest.iter().cloned());
    (0..=absolute.len())
        .rev()
        .find_map(|n| modules.get(&absolute[..n]))
}

#[test]
fn literals_and_comments_are_not_code() {
    let code = code_only(
        "let a = \"crate::x {\"; // crate::y {\nlet b = r#\"crate::z }\"#; let c = '{'; fn f<'a>() {}\n/* crate::w */",
    );
    assert!(!code.contains("crate::"), "{code}");
    assert_eq!(code.matches('{').count(), 1, "{code}");
    assert!(code.contains("<'a>"), "{code}");
    assert_eq!(code.lines().count(), 3);
}

#[test]
fn only_test_modules_are_left_out() {
    let code = "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    fn f() { {} }\n}\nuse crate::c;\n#[cfg(test)]\nmod other;\n#[cfg(test)]\nuse crate::d;\n";
    let kept = without_test_modules(code);
    assert!(kept.contains("crate::a") && kept.contains("crate::c") && kept.contains("crate::d"));
    assert!(
        !kept.contains("crate::b") && !kept.contains("mod other"),
        "{kept}"
    );
    assert_eq!(kept.lines().count(), code.lines().count());
}

#[test]
fn use_trees_and_paths_in_place_are_read() {
    let paths = paths(
        "pub(crate) use crate::hooks::{self, external::{chain::Chain, queue::*}};\nuse super::x as y;\nfn f() { super::stats::record(x::y); }\n",
    );
    let paths: Vec<(usize, String)> = paths.into_iter().map(|(l, p)| (l, p.join("::"))).collect();
    assert_eq!(
        paths,
        [
            (1, "crate::hooks".to_string()),
            (1, "crate::hooks::external::chain::Chain".to_string()),
            (1, "crate::hooks::external::queue::*".to_string()),
            (2, "super::x".to_string()),
            (3, "super::stats::record".to_string()),
        ]
    );
}

// ─── functions ───

/// A function of a file's code: where its `fn` line is, its name, and how many lines it spans
/// from that line to its closing brace.
#[derive(Debug, PartialEq)]
pub struct Function {
    pub line: usize,
    pub name: String,
    pub lines: usize,
}

/// Every function with a body in `code` (from [`code_only`], so braces in literals are not
/// code), nested ones included (an outer function's length counts its inner ones). A `fn` the
/// body of which is a `;` (a trait's declaration) and `fn(…)` pointer types are not functions.
pub fn functions(code: &str) -> Vec<Function> {
    let chars: Vec<char> = code.chars().collect();
    let line_at = |index: usize| 1 + chars[..index].iter().filter(|&&c| c == '\n').count();
    let is_word = |c: &char| c.is_alphanumeric() || *c == '_';
    let mut found = Vec::new();
    for at in 0..chars.len() {
        let starts_word = at == 0 || !is_word(&chars[at - 1]);
        let is_fn = starts_word
            && chars[at..].starts_with(&['f', 'n'])
            && chars.get(at + 2).is_some_and(|c| c.is_whitespace());
        if !is_fn {
            continue;
        }
        let name_start = (at + 2..chars.len()).find(|&i| !chars[i].is_whitespace());
        let Some(name_start) = name_start.filter(|&i| is_word(&chars[i])) else {
            continue; // `fn (…)`: a pointer type
        };
        let name: String = chars[name_start..]
            .iter()
            .take_while(|c| is_word(c))
            .collect();
        let Some(open) = body_start(&chars, name_start) else {
            continue;
        };
        let close = matching_brace(&chars, open);
        found.push(Function {
            line: line_at(at),
            name,
            lines: line_at(close) - line_at(at) + 1,
        });
    }
    found
}

/// The `{` that opens the body of a function whose signature goes on from `i`; None when the
/// signature ends with `;` (outside brackets, so `[u8; 4]` is part of it).
fn body_start(chars: &[char], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    while i < chars.len() {
        match chars[i] {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            '{' if depth == 0 => return Some(i),
            ';' if depth == 0 => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the `}` that closes the `{` at `open` (the last index if none does).
fn matching_brace(chars: &[char], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in chars.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    chars.len().saturating_sub(1)
}

#[test]
fn functions_are_measured_from_fn_to_closing_brace() {
    let code = code_only(
        "trait T {\n    fn declared(&self) -> [u8; 4];\n}\nfn outer(f: fn(u8) -> u8) -> u8 {\n    let s = \"}\";\n    fn inner() {}\n    f(1)\n}\n",
    );
    let measured = functions(&code);
    let found: Vec<(usize, &str, usize)> = measured
        .iter()
        .map(|f| (f.line, f.name.as_str(), f.lines))
        .collect();
    assert_eq!(found, [(4, "outer", 5), (6, "inner", 1)]);
}
