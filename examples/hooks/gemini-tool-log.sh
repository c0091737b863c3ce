#!/usr/bin/env bash
# A Gemini CLI AfterTool hook: appends one line per tool call to .gemini/tool-log.jsonl.
input=$(cat)
echo "$input" | jq -c '{at: .timestamp, tool: .tool_name, input: .tool_input,
  error: .tool_response.error}' >> "$GEMINI_PROJECT_DIR/.gemini/tool-log.jsonl"
echo '{"suppressOutput": true}'
