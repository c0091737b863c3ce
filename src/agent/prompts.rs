//! The built-in prompts. Each is configurable (`prompts:` in the config file); these defaults are
//! written for real models.

/// The marker that starts a planning reply when tools are needed.
pub(crate) use crate::types::DEFAULT_MARKER;

pub(crate) const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful assistant running inside hookwire. \
Answer clearly and concisely. When you use tools, rely on what they return rather than guessing, \
and say so when something could not be found.";

/// `{marker}` and `{tools}` are replaced with the marker and the list of tool names.
pub(crate) const DEFAULT_PLANNING_PROMPT: &str = "Before answering, decide whether you need tools to answer the \
last user message well. Available tools: {tools}.\n\
- If you can answer directly (greetings, general knowledge, anything that does not need files of the \
workspace), answer the user now, in full, as you normally would. Do not mention this decision.\n\
- If you need tools, start your reply with {marker} and then write a short plan: which tools you will \
use, on what, and why, one step a line. Do not answer the question yet and do not call any tool in \
this reply.";

/// The first call of `agent.planning: native`, which offers the tools.
pub(crate) const DEFAULT_NATIVE_PLANNING_PROMPT: &str = "If you need tools to answer the last user \
message well (files of the workspace, searches), call them now. Otherwise answer the user directly, \
in full, as you normally would.";

pub(crate) const DEFAULT_FIRST_STEP_PROMPT: &str =
    "Carry out the plan above. Call the tools you need; several \
independent calls may go in one reply. When you have what you need, answer the user's question \
directly and completely, without calling more tools.";

pub(crate) const DEFAULT_EACH_STEP_PROMPT: &str =
    "Continue with the task. Use the tool results above. Call more \
tools only if something is still missing; otherwise give the user the final answer now.";

/// The last call of a chat that reached `max_steps` or `max_total_tokens` (`limits.summary_on_limit`):
/// no tools are offered, so the model can only write.
pub(crate) const DEFAULT_SUMMARY_PROMPT: &str = "You have reached the limit of steps for this \
request and cannot call any more tools. Tell the user, briefly: what you did and found so far, \
what remains to be done, and how they could go on.";

/// The instructions of the summary call of auto compaction (`context.summary_prompt`): the
/// summary replaces the oldest messages, so it must carry what the rest of the chat needs.
pub(crate) const DEFAULT_COMPACT_PROMPT: &str = "You are summarising the earlier part of a \
conversation between a user and an assistant that uses tools, so that the conversation can go on \
without it. Write a concise summary in the language of the conversation, as notes: what the user \
asked and wants; what was decided; what was found (keep file names, paths, tool names, commands, \
numbers and error messages exactly); and what remains to be done or is still open. Do not answer \
the user and do not add anything that is not in the conversation.";

/// Fills the planning prompt's placeholders, in one pass over the template (it is filled for
/// every chat): a placeholder's value is never read as a placeholder itself.
pub(crate) fn planning_prompt(template: &str, marker: &str, tool_names: &[String]) -> String {
    let names: usize = tool_names.iter().map(|name| name.len() + 2).sum();
    let mut prompt = String::with_capacity(template.len() + 2 * marker.len() + names);
    let mut rest = template;
    while let Some(at) = rest.find('{') {
        prompt.push_str(&rest[..at]);
        let from_brace = &rest[at..];
        if let Some(after) = from_brace.strip_prefix("{marker}") {
            prompt.push_str(marker);
            rest = after;
        } else if let Some(after) = from_brace.strip_prefix("{tools}") {
            for (i, name) in tool_names.iter().enumerate() {
                if i > 0 {
                    prompt.push_str(", ");
                }
                prompt.push_str(name);
            }
            rest = after;
        } else {
            prompt.push('{');
            rest = &from_brace[1..];
        }
    }
    prompt.push_str(rest);
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planning_prompt_fills_every_placeholder_once() {
        let names = ["read_file".to_string(), "search".to_string()];
        assert_eq!(
            planning_prompt("{marker} {tools}; again {marker}. {x} {", "[T]", &names),
            "[T] read_file, search; again [T]. {x} {"
        );
        assert_eq!(planning_prompt("tools: {tools}.", "M", &[]), "tools: .");
        // A marker that looks like a placeholder stays as written.
        assert_eq!(planning_prompt("{marker}", "{tools}", &names), "{tools}");
        let filled = planning_prompt(DEFAULT_PLANNING_PROMPT, DEFAULT_MARKER, &names);
        assert!(filled.contains("Available tools: read_file, search."));
        assert!(filled.contains(&format!("start your reply with {DEFAULT_MARKER} and")));
        assert!(!filled.contains("{marker}") && !filled.contains("{tools}"));
    }
}
