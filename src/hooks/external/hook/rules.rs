//! What each event's hooks may do.

/// What a hook result may change (the OpenHarness format's `capabilities:`); the names are the result fields.
pub(crate) const CAPABILITIES: [&str; 9] = [
    "user_input",
    "messages",
    "system_prompt",
    "tool_arguments",
    "tool_result",
    "tool_error",
    "assistant_output",
    "inject_messages",
    "additional_context",
];
