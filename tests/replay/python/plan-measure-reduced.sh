#!/bin/sh
# A recorded plan --measure answer for a model measured as 2- and 4-layer copies: halo-doctor
# extrapolates the allocated peak linearly in the layer count and adds its modelled reserve.
[ "$1" = "-P" ] && shift # the safe path (python -P, 3.11+)
[ -n "${HALO_FAKE_SPEC_OUT:-}" ] && printf '%s\n' "$3" >"$HALO_FAKE_SPEC_OUT"
echo '{"status": "ok", "reduced": true, "torch": "2.11.0+cu130", "device": "NVIDIA H200", "runs": [{"layers": 2, "peak_allocated": 10737418240, "peak_reserved": 19327352832, "non_allocator_bytes": 805306368, "step_times_s": [1.0, 0.1, 0.1]}, {"layers": 4, "peak_allocated": 12884901888, "peak_reserved": 19327352832, "non_allocator_bytes": 805306368, "step_times_s": [1.0, 0.1, 0.1]}]}'
