#!/bin/sh
# An OpenHarness command handler: exit 2 blocks, stderr is the reason.
input=$(cat)
if printf '%s' "$input" | grep -Eq '"tool_input":\{[^}]*"path":"([^"]*/)?\.env(\.[^"/]*)?"'; then
  echo "policy: .env files hold secrets" >&2
  exit 2
fi
exit 0
