//! ARCHITECTURE.md's rules on the shape of `src/` that a machine can check (the layers are
//! `layers.rs`): small files, no circle between files, errors typed at the seams.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::source::{
    file_named, library_files, module_files, module_path, paths, production_code, src_dir,
};

/// The most lines a file of `src/` may have (unit-test files aside).
const MAX_LINES: usize = 600;

fn shown(file: &Path) -> String {
    file.strip_prefix(src_dir().parent().unwrap())
        .unwrap()
        .display()
        .to_string()
}

#[test]
fn no_source_file_is_over_600_lines() {
    let mut long: Vec<String> = library_files()
        .iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file).unwrap().lines().count();
            (lines > MAX_LINES).then(|| format!("{}: {lines} lines", shown(file)))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (move unit tests to a `tests.rs`, split the rest by job):\n{}",
        long.join("\n")
    );
}

/// Every file's imports of other files of the crate: the paths its code (outside unit-test
/// modules) names with `crate::`, `super::` or `self::`, in `use` declarations or in place.
fn import_graph() -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let src = src_dir();
    let files = library_files();
    let modules = module_files(&files);
    let mut graph = BTreeMap::new();
    for file in &files {
        let own = module_path(&src, file);
        let imports: BTreeSet<PathBuf> = paths(&production_code(file))
            .iter()
            .filter_map(|(_, path)| file_named(&modules, &own, path))
            .filter(|named| *named != file)
            .cloned()
            .collect();
        graph.insert(file.clone(), imports);
    }
    graph
}

/// The groups of files that import each other in a circle (Tarjan's strongly connected
/// components of more than one file).
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, file: &'a PathBuf) {
            let n = self.index.len();
            self.index.insert(file, n);
            self.low.insert(file, n);
            self.stack.push(file);
            self.on_stack.insert(file);
            for next in self.graph.get(file).into_iter().flatten() {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[file].min(self.low[next]);
                    self.low.insert(file, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[file].min(self.index[next]);
                    self.low.insert(file, low);
                }
            }
            if self.low[file] == self.index[file] {
                let mut group = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    group.push(member.clone());
                    if member == file {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for file in graph.keys() {
        if !walk.index.contains_key(file) {
            walk.visit(file);
        }
    }
    walk.found
}

/// The one circle ARCHITECTURE.md allows: one chat's state (`agent/run.rs`, `ChatRun`) with its
/// phases in files of their own, each an `impl ChatRun` block that reads the state it is given.
fn is_the_chat_run_split(group: &[PathBuf]) -> bool {
    let agent = src_dir().join("agent");
    group.iter().all(|file| {
        let code = production_code(file);
        file.starts_with(&agent)
            && (code.contains("impl ChatRun") || code.contains("struct ChatRun"))
    })
}

#[test]
fn no_circle_between_files_but_the_chat_run_split() {
    let found: Vec<String> = circles(&import_graph())
        .into_iter()
        .filter(|group| !is_the_chat_run_split(group))
        .map(|group| {
            let names: Vec<String> = group.iter().map(|f| shown(f)).collect();
            names.join(" ↔ ")
        })
        .collect();
    assert!(
        found.is_empty(),
        "files that import each other in a circle:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_circle_finder_sees_a_circle_and_nothing_else() {
    let file = |name: &str| PathBuf::from(name);
    let mut graph = BTreeMap::new();
    graph.insert(file("a"), BTreeSet::from([file("b")]));
    graph.insert(file("b"), BTreeSet::from([file("c")]));
    graph.insert(file("c"), BTreeSet::from([file("a"), file("d")]));
    graph.insert(file("d"), BTreeSet::new());
    assert_eq!(circles(&graph), [vec![file("a"), file("b"), file("c")]]);
    graph.insert(file("c"), BTreeSet::from([file("d")]));
    assert!(circles(&graph).is_empty());
}

#[test]
fn the_import_graph_follows_crate_super_and_self_paths() {
    let src = src_dir();
    let graph = import_graph();
    // `app` wires the hooks and the skills: both are files it imports.
    let app = &graph[&src.join("app.rs")];
    assert!(
        app.iter().any(|f| f.starts_with(src.join("hooks"))),
        "{app:?}"
    );
    assert!(
        app.iter().any(|f| f.starts_with(src.join("skills"))),
        "{app:?}"
    );
}

/// `Result<T, String>` in a signature, with the text inside the angle brackets.
fn string_errors(signature: &str) -> bool {
    let mut rest = signature;
    while let Some(at) = rest.find("Result<") {
        let inner = &rest[at + "Result<".len()..];
        let mut depth = 0;
        let mut last_comma = None;
        let mut end = inner.len();
        for (i, c) in inner.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' if depth == 0 => {
                    end = i;
                    break;
                }
                '>' | ')' | ']' => depth -= 1,
                ',' if depth == 0 => last_comma = Some(i),
                _ => {}
            }
        }
        if let Some(comma) = last_comma {
            if inner[comma + 1..end].trim() == "String" {
                return true;
            }
        }
        rest = inner;
    }
    false
}

/// The signatures (from `fn` to the body or `;`) of a file's functions that other modules can
/// call: `pub` and `pub(crate)` functions, and every function of a `pub` / `pub(crate)` trait.
fn public_signatures(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut trait_depth: Option<usize> = None;
    let mut depth = 0usize;
    let lines: Vec<&str> = code.lines().collect();
    for (number, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let visible = trimmed.starts_with("pub fn")
            || trimmed.starts_with("pub async fn")
            || trimmed.starts_with("pub(crate) fn")
            || trimmed.starts_with("pub(crate) async fn");
        let in_trait = trait_depth.is_some_and(|d| depth == d + 1);
        let is_fn = trimmed.starts_with("fn ") || trimmed.starts_with("async fn ");
        if visible || (in_trait && is_fn) {
            let mut signature = String::new();
            for next in &lines[number..] {
                let cut = next.find(['{', ';']);
                signature.push_str(&next[..cut.unwrap_or(next.len())]);
                signature.push(' ');
                if cut.is_some() {
                    break;
                }
            }
            found.push((number + 1, signature));
        }
        if (trimmed.starts_with("pub trait") || trimmed.starts_with("pub(crate) trait"))
            && trait_depth.is_none()
        {
            trait_depth = Some(depth);
        }
        for c in line.chars() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if trait_depth == Some(depth) {
                        trait_depth = None;
                    }
                }
                _ => {}
            }
        }
    }
    found
}

#[test]
fn no_string_error_crosses_a_module_boundary() {
    let mut found = Vec::new();
    for file in library_files() {
        for (line, signature) in public_signatures(&production_code(&file)) {
            if string_errors(&signature) {
                let signature = signature.split_whitespace().collect::<Vec<_>>().join(" ");
                found.push(format!("{}:{line}: {signature}", shown(&file)));
            }
        }
    }
    assert!(
        found.is_empty(),
        "`Result<_, String>` in a function other modules call (give the seam an error type):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_string_error_check_reads_signatures() {
    assert!(string_errors(
        "pub fn f(x: u8) -> Result<Vec<(u8, String)>, String> "
    ));
    assert!(!string_errors("pub fn f() -> Result<String, Error> "));
    assert!(!string_errors(
        "pub fn f() -> Result<(), Box<dyn Fn(String) -> String>> "
    ));
    let code = "pub trait Tool {\n    fn prepare(&self) -> Result<u8, String>;\n    fn name(&self) -> String {\n        String::new()\n    }\n}\nfn private() -> Result<(), String> {}\npub(crate) fn across(\n    a: u8,\n) -> Result<(), String> {\n}\n";
    let lines: Vec<usize> = public_signatures(code)
        .into_iter()
        .filter(|(_, s)| string_errors(s))
        .map(|(line, _)| line)
        .collect();
    assert_eq!(lines, [2, 8]);
}

/// The places in `code` that name one of `names` as a path's start (`axum::…`, `mcp::…`,
/// `crate::mcp::…`, `super::super::server::…`), as line numbers.
fn naming(code: &str, names: &[&str]) -> Vec<usize> {
    let mut found = Vec::new();
    for (number, line) in code.lines().enumerate() {
        for name in names {
            let needle = format!("{name}::");
            let mut from = 0;
            while let Some(at) = line[from..].find(&needle) {
                let at = from + at;
                let before = line[..at].chars().next_back();
                let word_start = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
                let in_crate_path = line[..at].ends_with("::")
                    && ["crate::", "super::"]
                        .iter()
                        .any(|p| line[..at].ends_with(p));
                if word_start && (before != Some(':') || in_crate_path) {
                    found.push(number + 1);
                }
                from = at + needle.len();
            }
        }
    }
    found.dedup();
    found
}

/// "The agent never sees axum or JSON frames" and "nothing in the agent names MCP": the chat
/// knows tools only as `Tool`s and the server only through what it streams.
#[test]
fn the_agent_names_neither_axum_nor_the_frames_nor_mcp() {
    let agent = src_dir().join("agent");
    let mut found = Vec::new();
    for file in library_files()
        .into_iter()
        .filter(|f| f.starts_with(&agent))
    {
        for line in naming(&production_code(&file), &["axum", "server", "mcp"]) {
            found.push(format!("{}:{line}", shown(&file)));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_name_check_sees_a_path_and_nothing_else() {
    let code = "use axum::Router;\nlet x = rmcp::Tool;\nuse crate::mcp::McpTool;\nlet y = self.server;\nuse super::super::server::frames;\nuse crate::hooks::server::x;\n";
    assert_eq!(naming(code, &["axum", "server", "mcp"]), [1, 3, 5]);
}

/// The most lines a function of `src/` may span, from its `fn` line to its closing brace.
const MAX_FUNCTION_LINES: usize = 100;

/// The functions of a file's text (outside its unit-test modules) longer than
/// [`MAX_FUNCTION_LINES`], as `(line, name, lines)`.
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let code = crate::source::without_test_modules(&crate::source::code_only(text));
    crate::source::functions(&code)
        .into_iter()
        .filter(|f| f.lines > MAX_FUNCTION_LINES)
        .map(|f| (f.line, f.name, f.lines))
        .collect()
}

#[test]
fn no_function_in_src_is_over_100_lines() {
    let mut long = Vec::new();
    for file in crate::source::production_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, name, lines) in long_functions(&text) {
            long.push(format!("{}:{line}: {name}: {lines} lines", shown(&file)));
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them along their steps):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_function_measurer_sees_a_long_function_and_ignores_test_modules() {
    let body = "    step();\n".repeat(MAX_FUNCTION_LINES);
    let text = format!(
        "fn short() {{\n}}\nfn long() {{\n{body}}}\n#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{body}    }}\n}}\n"
    );
    assert_eq!(
        long_functions(&text),
        [(3, "long".to_string(), MAX_FUNCTION_LINES + 2)]
    );
}

/// The lines of `code` (from [`crate::source::code_only`]) that hold a `Result<…, String>`,
/// once per occurrence: in signatures, fields and type aliases alike.
fn string_error_lines(code: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("Result<") {
        let at = from + at;
        from = at + "Result<".len();
        let word_start = !code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if word_start && last_argument(&code[from..]) == Some("String") {
            found.push(1 + code[..at].matches('\n').count());
        }
    }
    found
}

/// The last of a generic's arguments, from the text after its `<`; None when it has only one.
fn last_argument(inner: &str) -> Option<&str> {
    let mut depth = 0usize;
    let mut last_comma = None;
    let mut previous = ' ';
    for (i, c) in inner.char_indices() {
        match c {
            '>' if previous == '-' => {} // `->` inside a `Fn(…) -> T`
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' if depth == 0 => return Some(inner[last_comma? + 1..i].trim()),
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => last_comma = Some(i),
            _ => {}
        }
        previous = c;
    }
    None
}

/// No `Result<_, String>` in the production code of `src/`: every error says what it is (a
/// file-private helper gets a small `thiserror` enum too).
#[test]
fn no_string_errors() {
    let mut found = Vec::new();
    for file in crate::source::production_files() {
        for line in string_error_lines(&production_code(&file)) {
            found.push(format!("{}:{line}", shown(&file)));
        }
    }
    assert!(
        found.is_empty(),
        "`Result<_, String>` in src/ (give them an error type):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_string_error_counter_sees_each_result_with_a_string_error() {
    let code = "fn a() -> Result<(), String> {}\nstruct S { r: Result<Vec<(u8, String)>,\n String> }\nfn b() -> io::Result<String> {}\nfn c() -> Result<Box<dyn Fn() -> String>, Error> {}\ntype D = (u8, Result<u8, String>, MyResult<u8, String>);\n";
    assert_eq!(string_error_lines(code), [1, 2, 6]);
}

/// The room of `src/hooks/external/` a file is in (`hook`, `wire`, `load`, `run`, `sets`), or
/// `None` for a file outside it and for its `mod.rs` (the face other modules use).
fn external_room(file: &Path) -> Option<String> {
    let external = src_dir().join("hooks/external");
    let inside = file.strip_prefix(&external).ok()?;
    let mut parts = inside.components();
    let first = parts.next()?.as_os_str().to_string_lossy().to_string();
    parts.next().map(|_| first)
}

/// The rooms a room of `hooks/external/` may use (ARCHITECTURE.md): what a hook is, its JSON,
/// where hooks come from, running them, the sets a chat runs.
const EXTERNAL_ROOMS: [(&str, &[&str]); 5] = [
    ("hook", &[]),
    ("wire", &["hook"]),
    ("load", &["hook"]),
    ("run", &["hook", "wire"]),
    ("sets", &["hook", "load", "run"]),
];

/// Every import from one room of `hooks/external/` into another that its rule does not allow.
fn external_room_violations(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<String> {
    let mut found = Vec::new();
    for (file, imports) in graph {
        let Some(room) = external_room(file) else {
            continue;
        };
        let Some((_, allowed)) = EXTERNAL_ROOMS.iter().find(|(name, _)| **name == room) else {
            found.push(format!("{}: a room no rule names", shown(file)));
            continue;
        };
        for imported in imports {
            match external_room(imported) {
                Some(other) if other != room && !allowed.contains(&other.as_str()) => {
                    found.push(format!(
                        "{} ({room}) uses {} ({other})",
                        shown(file),
                        shown(imported)
                    ))
                }
                _ => {}
            }
        }
    }
    found
}

/// `hooks/external/` in rooms that use each other one way: `hook` nothing, `wire` and `load`
/// only `hook`, `run` `hook` and `wire`, `sets` `hook`, `load` and `run`. So the JSON of a hook
/// is read only in `wire` (and nothing that loads files reads it), and what runs hooks never
/// knows where they come from.
#[test]
fn the_external_hook_rooms_use_each_other_one_way() {
    let graph = import_graph();
    let rooms: BTreeSet<String> = graph.keys().filter_map(|f| external_room(f)).collect();
    let ruled: BTreeSet<String> = EXTERNAL_ROOMS.iter().map(|(r, _)| r.to_string()).collect();
    assert_eq!(rooms, ruled, "the rooms of hooks/external/ and their rules");
    // The graph sees the rooms' imports (of `crate::hooks::external::…` paths).
    let files = &graph[&src_dir().join("hooks/external/sets/files.rs")];
    let used: BTreeSet<String> = files.iter().filter_map(|f| external_room(f)).collect();
    assert!(used.contains("load") && used.contains("run"), "{used:?}");
    let found = external_room_violations(&graph);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Other modules use the external hooks through `hooks/external/mod.rs` only, so the rooms can
/// change without them; and only `wire` names the typed hook payloads.
#[test]
fn the_external_hooks_are_used_through_their_face_and_payloads_only_by_wire() {
    let external = src_dir().join("hooks/external");
    let payload = external.join("wire/payload");
    let mut found = Vec::new();
    for (file, imports) in import_graph() {
        for imported in &imports {
            let outside = !file.starts_with(&external);
            if outside && external_room(imported).is_some() {
                found.push(format!("{} uses a room: {}", shown(&file), shown(imported)));
            }
            if imported.starts_with(&payload) && external_room(&file).as_deref() != Some("wire") {
                found.push(format!(
                    "{} names a payload: {}",
                    shown(&file),
                    shown(imported)
                ));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_room_check_sees_a_backward_use() {
    let external = src_dir().join("hooks/external");
    let file = |name: &str| external.join(name);
    let mut graph = BTreeMap::new();
    graph.insert(
        file("wire/claude.rs"),
        BTreeSet::from([file("hook/mod.rs"), file("run/chain.rs"), file("mod.rs")]),
    );
    graph.insert(file("load/yaml.rs"), BTreeSet::from([file("wire/mod.rs")]));
    graph.insert(file("sets/files.rs"), BTreeSet::from([file("run/mod.rs")]));
    assert_eq!(
        external_room_violations(&graph),
        [
            "src/hooks/external/load/yaml.rs (load) uses src/hooks/external/wire/mod.rs (wire)",
            "src/hooks/external/wire/claude.rs (wire) uses src/hooks/external/run/chain.rs (run)",
        ]
    );
}

/// The files under `src/server/<room>` (a folder, with its `<room>.rs` when there is one).
fn in_room(file: &Path, room: &str) -> bool {
    let server = src_dir().join("server");
    file.starts_with(server.join(room)) || file == server.join(format!("{room}.rs"))
}

/// A chat reaches a wire through `server/wire` (an encoder per wire, one stream between them),
/// which knows no wire: it imports neither the native frames nor the WebSocket session, and the
/// native frames do not import the session.
#[test]
fn the_wire_room_knows_no_wire_and_the_frames_know_no_session() {
    let mut found = Vec::new();
    for (file, imports) in import_graph() {
        let refused: &[&str] = if in_room(&file, "wire") {
            &["frames", "session"]
        } else if in_room(&file, "frames") {
            &["session", "wire/chat.rs", "wire/speech.rs"]
        } else {
            continue;
        };
        for import in &imports {
            if refused.iter().any(|room| in_room(import, room)) {
                found.push(format!("{} imports {}", shown(&file), shown(import)));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// No wire builds its frames by hand: outside `server/frames/`, nothing names a native frame's
/// variant or writes a frame's JSON, and neither the session nor the wire room makes JSON at all.
#[test]
fn only_the_frames_room_builds_native_frames() {
    let mut found = Vec::new();
    for file in library_files() {
        if !file.starts_with(src_dir().join("server")) || in_room(&file, "frames") {
            continue;
        }
        let makes_json = in_room(&file, "session") || in_room(&file, "wire");
        for (number, line) in production_code(&file).lines().enumerate() {
            let names_a_variant = line.match_indices("ServerFrame::").any(|(at, found)| {
                line[at + found.len()..]
                    .chars()
                    .next()
                    .is_some_and(char::is_uppercase)
            });
            let builds =
                names_a_variant || line.contains("ErrorFrame") || line.contains(".to_json(");
            let json = makes_json && (line.contains("json!") || line.contains("serde_json::to_"));
            if builds || json {
                found.push(format!("{}:{}: {}", shown(&file), number + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "frames built outside server/frames/ (add a constructor or an encoder there):\n{}",
        found.join("\n")
    );
}
