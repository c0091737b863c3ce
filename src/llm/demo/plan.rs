//! The demo's plan: written in the planning round and read back in the agent rounds, so every
//! round calls exactly what was planned. Both directions live here so the format cannot drift.

use serde_json::Value;

use crate::types::ToolCall;

/// What introduces each planned call in the plan text: "call name with {json}".
const STEP: &str = "call ";
/// How every plan of the demo starts; text that does not (an answer quoting a file) is no plan.
const OPENING: &str = "I will ";
const ARGUMENTS: &str = " with ";

/// The plan text (without the marker) for `calls`.
pub(super) fn write(calls: &[ToolCall]) -> String {
    let steps: Vec<String> = calls
        .iter()
        .map(|call| {
            format!(
                "{STEP}{}{ARGUMENTS}{} {}",
                call.name,
                call.arguments,
                purpose(&call.name)
            )
        })
        .collect();
    let source = if calls.len() == 1 {
        "its result"
    } else {
        "their results"
    };
    format!(
        "{OPENING}{}, then answer from {source}.",
        steps.join(", then ")
    )
}

/// The calls a plan text names, in order; ids are left empty (the round that makes them sets them).
pub(super) fn read(text: &str) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    let Some(mut rest) = text.trim_start().strip_prefix(OPENING) else {
        return calls;
    };
    while let Some(start) = rest.find(STEP) {
        rest = &rest[start + STEP.len()..];
        let Some((name, json)) = rest.split_once(ARGUMENTS) else {
            break;
        };
        let is_tool_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if name.is_empty() || !name.chars().all(is_tool_name) {
            continue;
        }
        let mut values = serde_json::Deserializer::from_str(json).into_iter::<Value>();
        if let Some(Ok(arguments @ Value::Object(_))) = values.next() {
            calls.push(ToolCall {
                id: String::new(),
                name: name.to_string(),
                arguments: arguments.to_string(),
            });
            rest = &json[values.byte_offset()..];
        }
    }
    calls
}

fn purpose(tool: &str) -> &'static str {
    match tool {
        "list_dir" => "to see what is there",
        "search_text" => "to find where it occurs",
        "read_file" => "to read the file",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: String::new(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn a_written_plan_reads_back_as_its_calls() {
        let calls = vec![
            call("search_text", r#"{"pattern":"fn main"}"#),
            call("read_file", r#"{"path":"src/main.rs"}"#),
        ];
        let text = write(&calls);
        assert_eq!(
            text,
            "I will call search_text with {\"pattern\":\"fn main\"} to find where it occurs, \
then call read_file with {\"path\":\"src/main.rs\"} to read the file, then answer from their results."
        );
        assert_eq!(read(&text), calls);
        assert_eq!(read(&format!("\n {text}")), calls);
    }

    #[test]
    fn text_that_is_not_a_plan_names_no_calls() {
        assert!(read("The workspace has 2 entries: `a`, `b`.").is_empty());
        assert!(read("`README.md` says: I will call x with {}").is_empty());
        assert!(read("I will call x with 5").is_empty());
        assert!(read("I will call x later").is_empty());
        assert!(read("I will call me later with {}").is_empty());
        assert!(read("I will call x with {broken").is_empty());
    }
}
