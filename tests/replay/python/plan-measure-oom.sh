#!/bin/sh
# A recorded plan --measure answer from a GPU that ran out of memory during the steps.
echo '{"status": "oom", "layers": 0, "reason": "OutOfMemoryError: HIP out of memory. Tried to allocate 4.64 GiB. GPU 0 has a total capacity of 62.54 GiB", "torch": "2.11.0+rocm7.1", "device": "AMD Radeon Graphics"}'
