// SPDX-License-Identifier: MIT
// What the program's top takes from checks/ (issue 42 item 4): the set of built-in probes, which
// it hands to the doctor (include/halo/doctor.hpp takes a ProbeRegistry and never names checks/),
// and `plan --measure`, which runs the user's torch in a child as the probes do. Only the
// program's top (src/cli, src/tools) and tests include this header; halo_core and halo_doctor do
// not link halo_checks (tests/source/layers.py holds both).
#pragma once

#include <halo/plan.hpp>
#include <halo/probe.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace halo {

/// Builds the registry of built-in probes (checks/common/registry.cpp: one line per probe). Each
/// call builds a new registry; the program builds one at its top and passes it down.
ProbeRegistry builtin_probes();

namespace plan {

/// `plan --measure` (checks/plan/plan_measure.cpp): runs checks/plan/plan_measure.py under the
/// interpreter `given` (--python; empty: $VIRTUAL_ENV/bin/python, else $CONDA_PREFIX/bin/python,
/// else python3 on PATH, as
/// --framework-deep chooses) with the run of `p`: random weights from the model's config.json
/// (never a download), the method, micro-batch, sequence length, optimizer, checkpointing and
/// attention, a few real steps; the optimizer Trainer builds for the configured name (bitsandbytes'
/// 8-bit and paged ones through bitsandbytes.optim) and, for QLoRA or load_in_8bit, the linear
/// layers but lm_head as bitsandbytes' Linear4bit (NF4) or Linear8bitLt. When the estimate exceeds
/// 85 % of the GPU's free memory the script measures 2- and 4-layer copies; their peak allocated
/// memory is extrapolated linearly in the layer count and the estimate's allocator reserve is added
/// on top (reserved memory does not scale with depth). Never throws: a missing interpreter, torch,
/// transformers, peft or GPU, a missing bitsandbytes the run needs, or a run the script cannot
/// reproduce (ZeRO/FSDP, modules_to_save, torchtune's torchao QLoRA, a chunked loss, an optimizer
/// it does not build) is status "not_measured" with the reason; a hang (killed after `timeout_s`),
/// a crash or output that is not the protocol is "error"; an out-of-memory is "oom". `progress`,
/// when set, gets one line of text per progress message while the child runs (the start, the model
/// being built, each optimizer step of each depth with its time, each depth's peaks: "2 layers:
/// step 3 of 3 done (1.2 s)"), without the program's name; its words come from the script's
/// untrusted output (numbers formatted here, the rest bounded), so the caller escapes it before a
/// terminal.
Measurement measure(const Plan& p, const std::string& given, double timeout_s,
                    const std::function<void(std::string_view)>& progress = {});

} // namespace plan
} // namespace halo
