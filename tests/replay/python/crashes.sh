#!/bin/sh
# An interpreter that dies while importing torch (a segfault in a native extension).
kill -SEGV $$
