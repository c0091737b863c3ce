//! What the model sees of an MCP server: its tools' names (`mcp__<server>__<tool>`, Claude
//! Code's spelling, so its hook matchers carry over) and the results of their calls as text.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::tools::{cap_output, ToolOutput};

/// Longest tool name the model APIs take (OpenAI: 64).
pub(crate) const MAX_TOOL_NAME: usize = 64;

/// `mcp__<server>__<tool>`, with every character of the tool's name a model API would refuse
/// (anything but letters, digits, `_`, `-`) replaced by `_` (server names are checked when
/// configured). `None` when it would be longer than a model API takes.
pub(crate) fn tool_name(server: &str, tool: &str) -> Option<String> {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("mcp__{server}__{tool}");
    (!tool.is_empty() && name.len() <= MAX_TOOL_NAME).then_some(name)
}

/// A call's result as the model sees it: text blocks as they are, every other block as one
/// line saying what it was (type, MIME type, size, URI), then structured content when that is
/// all there is; one block a line, capped at `max_bytes`. `isError` stays an error.
pub(crate) fn output(result: CallToolResult, max_bytes: usize) -> ToolOutput {
    let mut parts: Vec<String> = result.content.iter().map(block).collect();
    if parts.is_empty() {
        if let Some(structured) = &result.structured_content {
            parts.push(structured.to_string());
        }
    }
    let text = cap_output(parts.join("\n"), max_bytes);
    if result.is_error == Some(true) {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    }
}

fn block(content: &ContentBlock) -> String {
    match content {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!(
            "[image: {}, {} bytes]",
            image.mime_type,
            decoded_len(&image.data)
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio: {}, {} bytes]",
            audio.mime_type,
            decoded_len(&audio.data)
        ),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => resource_line(
                "resource",
                uri,
                mime_type.as_deref(),
                Some(text.len() as u64),
            ),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => resource_line(
                "resource",
                uri,
                mime_type.as_deref(),
                Some(decoded_len(blob)),
            ),
            // A kind of resource this build does not know: its URI is still worth a line.
            #[allow(unreachable_patterns)]
            _ => "[resource]".into(),
        },
        ContentBlock::ResourceLink(link) => resource_line(
            "resource link",
            &link.uri,
            link.mime_type.as_deref(),
            link.size,
        ),
        // A block type newer than this build: say so rather than drop it silently.
        #[allow(unreachable_patterns)]
        _ => "[content of a type hookwire does not show]".into(),
    }
}

fn resource_line(kind: &str, uri: &str, mime: Option<&str>, size: Option<u64>) -> String {
    let mut line = format!("[{kind}: {uri}");
    if let Some(mime) = mime {
        line.push_str(&format!(", {mime}"));
    }
    if let Some(size) = size {
        line.push_str(&format!(", {size} bytes"));
    }
    line.push(']');
    line
}

/// The size of the bytes behind base64 `data` (without decoding it).
fn decoded_len(data: &str) -> u64 {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count() as u64;
    let len = data.len() as u64;
    (len / 4 * 3 + (len % 4) * 3 / 4).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock, Resource, ResourceContents};

    #[test]
    fn names_are_claude_codes_and_fit_the_model_apis() {
        assert_eq!(
            tool_name("github", "create_issue").as_deref(),
            Some("mcp__github__create_issue")
        );
        assert_eq!(
            tool_name("fs", "read.file v2").as_deref(),
            Some("mcp__fs__read_file_v2")
        );
        assert_eq!(tool_name("fs", &"x".repeat(60)), None);
        assert_eq!(tool_name("fs", ""), None);
    }

    #[test]
    fn sizes_of_base64_data() {
        for bytes in 0..10usize {
            use base64::Engine;
            let data = base64::engine::general_purpose::STANDARD.encode(vec![7u8; bytes]);
            assert_eq!(decoded_len(&data), bytes as u64, "{data}");
        }
    }

    #[test]
    fn text_passes_and_everything_else_is_one_line() {
        let mut link = Resource::new("file:///docs/a.pdf", "a.pdf");
        link.mime_type = Some("application/pdf".into());
        link.size = Some(2048);
        let result = CallToolResult::success(vec![
            ContentBlock::text("line one\nline two"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ContentBlock::resource(ResourceContents::TextResourceContents {
                uri: "file:///notes.txt".into(),
                mime_type: Some("text/plain".into()),
                text: "hello".into(),
                meta: None,
            }),
            ContentBlock::resource_link(link),
        ]);
        let output = output(result, 10_000);
        assert!(!output.is_error);
        assert_eq!(
            output.content,
            "line one\nline two\n[image: image/png, 8 bytes]\n\
             [resource: file:///notes.txt, text/plain, 5 bytes]\n\
             [resource link: file:///docs/a.pdf, application/pdf, 2048 bytes]"
        );
    }

    #[test]
    fn is_error_is_an_error_and_the_output_is_capped() {
        let result = CallToolResult::error(vec![ContentBlock::text("no such file")]);
        assert_eq!(output(result, 100), ToolOutput::error("no such file"));
        let long = CallToolResult::success(vec![ContentBlock::text("x".repeat(50))]);
        let capped = output(long, 10).content;
        assert!(capped.starts_with("xxxxxxxxxx\n[truncated"), "{capped}");
    }

    #[test]
    fn structured_content_alone_is_shown_as_json() {
        let mut result = CallToolResult::structured(serde_json::json!({"temperature": 21}));
        result.content.clear();
        let shown = output(result, 1000).content;
        assert!(shown.contains("\"temperature\":21"), "{shown}");
    }
}
