#!/bin/sh
# A recorded plan --measure answer (checks/plan/plan_measure.py protocol) from a GPU that ran the whole
# model: one run, then the answer. Called as: INTERPRETER -P -c SCRIPT SPEC_JSON. When
# HALO_FAKE_SPEC_OUT is set, the spec halo-doctor passed is written there for the test to read.
[ "$1" = "-P" ] && shift # the safe path (python -P, 3.11+)
[ "$1" = "-c" ] || { echo '{"status": "error", "reason": "not called as python -c"}'; exit 0; }
[ -n "${HALO_FAKE_SPEC_OUT:-}" ] && printf '%s\n' "$3" >"$HALO_FAKE_SPEC_OUT"
echo "some library chatter that is not JSON"
echo '{"progress": {"layers": 28, "peak_allocated": 66000000000, "peak_reserved": 70000000000}}'
echo '{"status": "ok", "reduced": false, "torch": "2.11.0+rocm7.1", "hip": "7.1.25424", "device": "AMD Radeon Graphics", "runs": [{"layers": 28, "peak_allocated": 66000000000, "peak_reserved": 70000000000, "non_allocator_bytes": 536870912, "step_times_s": [9.1, 2.5, 2.4]}]}'
