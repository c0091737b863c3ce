#!/bin/sh
# Blocks read_file/search_text on .env files (the jcli and OpenHarness exit-code protocol: 2 = block).
input=$(cat)
if printf '%s' "$input" | grep -Eq '"tool_input":\{[^}]*"path":"([^"]*/)?\.env(\.[^"/]*)?"'; then
  echo "reading .env files is not allowed: they hold secrets" >&2
  exit 2
fi
exit 0
