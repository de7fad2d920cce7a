"""A PreToolUse hook (Claude Code wire format): refuse the call, say why on stderr."""

import json
import sys

event = json.load(sys.stdin)
print(f"the shell is not allowed here ({event.get('tool_name')})", file=sys.stderr)
sys.exit(2)
