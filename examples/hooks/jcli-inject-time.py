#!/usr/bin/env python3
"""A hook in the jcli format, like jcli's own inject_time.py example: it reads $JCLI_HOOK_EVENT and the
HookContext JSON on stdin, and prints a HookResult JSON on stdout."""
import datetime
import json
import os
import sys

context = json.load(sys.stdin)
event = os.environ["JCLI_HOOK_EVENT"]
if event == "pre_send_message":
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    print(json.dumps({"user_input": f"[{now}] {context['user_input']}"}))
elif event == "pre_tool_execution":
    # tool_arguments is the arguments' JSON text (the jcli format).
    with open(os.path.join(os.environ["JCLI_CWD"], ".jcli", "reads.log"), "a") as log:
        log.write(f"{context['tool_name']} {context['tool_arguments']}\n")
    print("{}")
