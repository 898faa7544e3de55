#!/bin/sh
# A recorded `--framework-deep` answer, replayed in place of the interpreter (a test double at the
# edge: the doctor runs it as `PYTHON -c SCRIPT` and reads one JSON line, as from a real python).
# Recorded shape: what the doctor's script prints for a ROCm 7.1 wheel on the strix-halo-default-ttm
# machine. total_memory is the TTM limit of that capture (16393924 pages x 4096 = 67149512704
# bytes), the "total capacity of 62.54 GiB" PyTorch reports there (../shared/seeds GPU memory
# troubleshooting log; reference/amd-gpu-facts.md F4); the torch and HIP versions are ROCm 7.1's.
printf '%s\n' '{"python": "/home/dev/venv/bin/python", "python_version": "3.12.8", "torch_version": "2.9.0+rocm7.1", "hip": "7.1.25424", "cuda": null, "available": true, "device_count": 1, "devices": [{"name": "AMD Radeon Graphics", "total_memory": 67149512704, "arch": "gfx1151", "free": 66571141120}]}'
