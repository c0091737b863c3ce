#!/bin/bash
# A Claude Code PreToolUse hook, as Claude Code runs it: Read's `file_path` and Grep's `path`
# (absolute), denied by `permissionDecision` when they name a .env file. Needs jq.
input=$(cat)
tool_name=$(echo "$input" | jq -r '.tool_name')
path=$(echo "$input" | jq -r '.tool_input.file_path // .tool_input.path // empty')
case "$path" in
  *.env | *.env.* | */.env/*)
    jq -n --arg tool "$tool_name" '{
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: ($tool + " on .env files is not allowed: they hold secrets")
      }
    }'
    ;;
esac
exit 0
