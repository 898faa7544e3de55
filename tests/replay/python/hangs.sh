#!/bin/sh
# An interpreter that never answers (a torch import stuck on a hung GPU): the doctor must kill it
# after --framework-timeout and report that, not wait.
exec sleep 600
