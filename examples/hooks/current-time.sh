#!/bin/sh
# Adds the current time to the system prompt of this model call only.
cat > /dev/null
printf '{"additional_context": "The current time is %s."}\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
