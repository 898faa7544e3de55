#!/bin/sh
# An interpreter that prints something other than the protocol (a wrapper script gone wrong).
echo "Traceback (most recent call last):"
echo '{"not": "an answer"}'
exit 1
