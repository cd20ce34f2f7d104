#!/bin/sh
# A local tool in POSIX sh: delete the workspace's *.tmp files, once the person agrees.
#
# The request arrives on stdin as one line of compact JSON, e.g.
#   {"name":"clean","arguments":{},"answers":{"confirm":true},"options":{}}
# This tool takes no arguments or options, so "confirm":true can only be its
# answer; a tool that reads more should parse the JSON (see publish.py).
request=$(cat)

case "$request" in
*'"confirm":true'*)
    count=$(find . -maxdepth 1 -name '*.tmp' -type f | wc -l | tr -d ' ')
    find . -maxdepth 1 -name '*.tmp' -type f -exec rm -f {} +
    # Plain text on exit 0 is a success with that text.
    echo "Deleted .tmp files: $count."
    ;;
*'"confirm":false'*)
    echo '{"type": "success", "content": "Nothing deleted: the user said no."}'
    ;;
*)
    # No answer yet: ask, and exit. The tool runs again with the answer.
    echo '{"type": "needs_input", "question": {"id": "confirm", "text": "Delete the .tmp files in the workspace?", "answer_type": {"type": "boolean"}, "default": false}}'
    ;;
esac
