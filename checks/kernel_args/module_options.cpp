// SPDX-License-Identifier: MIT
#include "module_options.hpp"

#include "cmdline.hpp"

#include <halo/fact_keys.hpp>

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace halo::probes {

const Fact* hidden_host_config(const FactSet& facts) {
  const Fact* f = facts.find(fact_keys::modprobe::files);
  return f != nullptr && f->not_probed() ? f : nullptr;
}

void put_hidden(FactSet& facts, const std::string& key, const Fact& why) {
  facts.put_status(key, Status::missing, why.source, why.reason);
}

std::map<std::string, ModuleOption> module_options(const FactSet& facts, const std::string& m,
                                                   bool cmdline_only) {
  std::string joined;
  std::vector<std::pair<std::size_t, std::string>> starts;
  auto add = [&](const std::string& key) {
    const Fact* f = facts.find(key);
    auto texts = facts.get<std::vector<std::string>>(key);
    if (f == nullptr || !texts) return;
    for (const auto& t : *texts) {
      if (!joined.empty()) joined += ' ';
      starts.emplace_back(joined.size(), f->source);
      joined += t;
    }
  };
  if (!cmdline_only) add(fact_keys::modprobe::options_text(m));
  add(fact_keys::kernel::cmdline_module_options(m));
  std::map<std::string, ModuleOption> out;
  for (const KernelArg& a : split_kernel_args(joined, true)) {
    std::string src;
    for (const auto& [off, where] : starts)
      if (off <= a.offset) src = where;
    // modprobe.d facts name the line; point to it rather than the module's first line.
    if (const Fact* line = facts.find(fact_keys::modprobe::options(m, a.name));
        line != nullptr && src.find("/proc/cmdline") == std::string::npos)
      src = line->source;
    out[a.name] = ModuleOption{a.value, src};
  }
  return out;
}

std::optional<std::int64_t> kernel_int(const IntParam& p, const std::optional<std::string>& v) {
  if (!v) return std::nullopt; // "`' invalid for parameter": an integer needs a value
  if (p.is_unsigned) {
    auto u = kstrtoull(*v);
    if (!u) return std::nullopt;
    // Valid for the kernel up to 2^64-1; held here saturated at 2^63-1.
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    return static_cast<std::int64_t>(std::min(*u, kMax));
  }
  auto i = kstrtoint(*v);
  if (!i) return std::nullopt;
  return *i;
}

const IntParam* int_param(const std::string& m, const std::string& p) {
  for (const auto& ip : kIntParams)
    if (m == ip.module && p == ip.param) return &ip;
  return nullptr;
}

} // namespace halo::probes
