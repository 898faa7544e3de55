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

} // namespace halo::probes
