//! A client tool as every wire declares it (docs/protocol.md §19): a name, a description and
//! the JSON Schema of its arguments. The native chat frame's `client_tools`, AG-UI's
//! `RunAgentInput.tools` and the AI SDK body's `tools` have this shape; OpenAI's `tools` wrap it
//! in `{"type": "function", "function": …}`. One check for all of them.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::types::ToolSpec;

/// The most client tools one request may declare.
pub(crate) const MAX_CLIENT_TOOLS: usize = 64;

/// The longest client tool name (OpenAI's limit for function names).
const MAX_NAME_CHARS: usize = 64;

/// The longest description, in bytes.
const MAX_DESCRIPTION_BYTES: usize = 4096;

/// A tool the client runs itself.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub(crate) struct ClientTool {
    /// Letters, digits, `_` and `-`, at most 64; not the name of a server tool.
    #[schemars(length(min = 1, max = MAX_NAME_CHARS), regex(pattern = r"^[A-Za-z0-9_-]+$"))]
    pub(crate) name: String,
    /// What it does, for the model.
    #[serde(default)]
    #[schemars(length(max = MAX_DESCRIPTION_BYTES))]
    pub(crate) description: Option<String>,
    /// The JSON Schema of its arguments (an object schema); absent = no arguments.
    #[serde(default)]
    pub(crate) parameters: Option<Map<String, Value>>,
}

/// What is wrong with a request's client tools: the field (a path below the tools' list, such
/// as `2.name`) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {message}")]
pub(crate) struct ClientToolError {
    pub(crate) field: String,
    pub(crate) message: String,
}

/// What the types cannot say: how many, the names' form, the description's size. A clash with a
/// server tool is the agent's check (`AgentClient::check_client_tools`).
pub(crate) fn check_client_tools(tools: &[ClientTool]) -> Result<(), ClientToolError> {
    let error = |field: String, message: &str| ClientToolError {
        field,
        message: message.to_string(),
    };
    if tools.len() > MAX_CLIENT_TOOLS {
        return Err(error(
            String::new(),
            &format!("has {} tools; the limit is {MAX_CLIENT_TOOLS}", tools.len()),
        ));
    }
    for (index, tool) in tools.iter().enumerate() {
        let name_ok = !tool.name.is_empty()
            && tool.name.chars().count() <= MAX_NAME_CHARS
            && tool
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok {
            return Err(error(
                format!("{index}.name"),
                "must be 1 to 64 letters, digits, '_' or '-'",
            ));
        }
        if tool
            .description
            .as_ref()
            .is_some_and(|d| d.len() > MAX_DESCRIPTION_BYTES)
        {
            return Err(error(
                format!("{index}.description"),
                &format!("is over {MAX_DESCRIPTION_BYTES} bytes"),
            ));
        }
    }
    Ok(())
}

impl ClientTool {
    /// The tool as the model is offered it.
    pub(crate) fn into_spec(self) -> ToolSpec {
        ToolSpec {
            name: self.name,
            description: self.description.unwrap_or_default(),
            parameters: Value::Object(self.parameters.unwrap_or_else(no_arguments)),
        }
    }
}

/// The schema of a tool without arguments: `{"type": "object", "properties": {}}`.
fn no_arguments() -> Map<String, Value> {
    let mut schema = Map::new();
    schema.insert("type".into(), Value::from("object"));
    schema.insert("properties".into(), Value::Object(Map::new()));
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> ClientTool {
        ClientTool {
            name: name.into(),
            description: None,
            parameters: None,
        }
    }

    #[test]
    fn names_are_letters_digits_underscores_and_dashes() {
        assert!(check_client_tools(&[tool("get_location"), tool("open-dialog2")]).is_ok());
        for bad in ["", "has space", "dots.no", &"x".repeat(65)] {
            let error = check_client_tools(&[tool("ok"), tool(bad)]).unwrap_err();
            assert_eq!(error.field, "1.name", "{bad:?}");
        }
    }

    #[test]
    fn a_tool_without_parameters_takes_an_empty_object() {
        let spec = tool("ask").into_spec();
        assert_eq!(spec.parameters, json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn too_many_tools_are_refused() {
        let many: Vec<ClientTool> = (0..=MAX_CLIENT_TOOLS)
            .map(|i| tool(&format!("t{i}")))
            .collect();
        assert!(check_client_tools(&many).is_err());
    }
}
