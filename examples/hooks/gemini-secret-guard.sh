#!/usr/bin/env bash
# A Gemini CLI BeforeTool hook: denies reading .env files (`decision: "deny"`). Needs jq.
input=$(cat)
file=$(echo "$input" | jq -r '.tool_input.file_path // .tool_input.dir_path // empty')
if [[ "$file" == *.env ]]; then
  echo '{"decision": "deny", "reason": "Security policy: .env files hold secrets", "systemMessage": "Blocked a read of a .env file"}'
  exit 0
fi
echo '{"decision": "allow"}'
