// SPDX-License-Identifier: MIT
// halo-doctor plan --measure (issue 34): the run measured on this machine's GPU by the user's own
// torch, transformers and peft, in a child process with a time limit (checks/common/child_run.hpp).
#pragma once

#include <halo/plan.hpp>

#include <string>
#include <string_view>

namespace halo::probes {

/// The text of checks/plan/plan_measure.py, compiled in (cmake/EmbedPlanMeasure.cmake).
std::string_view plan_measure_script();

/// Runs checks/plan/plan_measure.py under the interpreter `given` (--python; empty:
/// $VIRTUAL_ENV/bin/python, else $CONDA_PREFIX/bin/python, else python3 on PATH, as
/// --framework-deep chooses) with the run of `p`: random weights from the model's config.json
/// (never a download), the method, micro-batch, sequence length, optimizer, checkpointing and
/// attention, a few real steps. When the estimate exceeds 85 % of the GPU's free memory the script
/// measures 2- and 4-layer copies; their peak allocated memory is extrapolated linearly in the
/// layer count and the estimate's allocator reserve is added on top (reserved memory does not scale
/// with depth). Never throws: a missing interpreter, torch, transformers, peft or GPU is status
/// "not_measured" with the reason; a hang (killed after `timeout_s`), a crash or output that is not
/// the protocol is "error"; an out-of-memory is "oom".
plan::Measurement measure_plan(const plan::Plan& p, const std::string& given, double timeout_s);

} // namespace halo::probes
