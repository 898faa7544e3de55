// SPDX-License-Identifier: MIT
// Probe: RAS (reliability, availability, serviceability) error counters of each AMD GPU, from
// amdgpu's sysfs (drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c;
// https://docs.kernel.org/gpu/amdgpu/ras.html):
//   /sys/class/drm/<card>/device/ras/<block>_err_count "ue: N\nce: N\n" (+ "de: N" on newer
//                                                       kernels; "Query currently inaccessible"
//                                                       while RAS is not ready, e.g. in a reset)
//   /sys/class/drm/<card>/device/ras/gpu_vram_bad_pages one "pfn : size : R|P|F" line per page
// Counters are cumulative since the driver loaded; reading them is safe (the driver moves the
// hardware counts into software totals). A GPU without RAS (consumer parts, Strix Halo) has no
// ras/ directory: that is "not supported", never "healthy".
#include "gpus.hpp"
#include "probe_util.hpp"
#include "probes.hpp"

#include <fmt/format.h>

#include <re2/re2.h>

namespace halo::probes {
namespace {

constexpr std::size_t kMaxBlocks = 64;              // the driver has 17 RAS blocks
constexpr std::size_t kMaxBadPagesBytes = 1U << 20; // 4 KiB pages, ~30 bytes a line

/// One `<block>_err_count` file: ue, ce and (newer kernels) de counts.
struct Counts {
  std::int64_t ue = 0;
  std::int64_t ce = 0;
  std::int64_t de = 0;
};

/// Parses "ue: N\nce: N[\nde: N]\n"; std::nullopt for anything else (the caller reports it).
std::optional<Counts> parse_counts(std::string_view text) {
  static const RE2 line_re(R"(\s*(ue|ce|de):\s*(\d+)\s*)");
  Counts c;
  bool ue = false;
  bool ce = false;
  for (const auto& line : split_lines(text)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string name;
    std::string digits;
    if (!RE2::FullMatch(line, line_re, &name, &digits)) return std::nullopt;
    const auto v = parse_int(digits);
    if (!v) return std::nullopt;
    (name == "ue" ? c.ue : name == "ce" ? c.ce : c.de) = *v;
    ue = ue || name == "ue";
    ce = ce || name == "ce";
  }
  if (!ue || !ce) return std::nullopt;
  return c;
}

void collect_card(const ProbeContext& ctx, FactSet& facts, const std::string& card) {
  const std::string dir = "/sys/class/drm/" + card + "/device/ras";
  const std::string ue_count = fact_keys::ras::ue_count(card);
  const std::string ce_count = fact_keys::ras::ce_count(card);
  const std::string de_count = fact_keys::ras::de_count(card);
  const std::string ue_blocks_key = fact_keys::ras::ue_blocks(card);
  const std::string retired_key = fact_keys::ras::bad_pages_retired(card);
  const std::string pending_key = fact_keys::ras::bad_pages_pending(card);
  const std::string failed_key = fact_keys::ras::bad_pages_failed(card);
  Status st = Status::ok;
  const auto names = ctx.root.list(dir, &st);
  if (!names) {
    const bool absent = st == Status::missing;
    facts.put_ok(fact_keys::ras::supported(card), false,
                 absent ? dir + " (absent: RAS not enabled for this GPU)" : dir);
    for (const std::string* k :
         {&ue_count, &ce_count, &de_count, &ue_blocks_key, &retired_key, &pending_key, &failed_key})
      facts.put_status(*k, absent ? Status::missing : st, dir,
                       absent ? "this GPU has no RAS counters (no " + dir + ")"
                              : "cannot list " + dir);
    return;
  }
  facts.put_ok(fact_keys::ras::supported(card), true, dir);
  Counts total;
  std::vector<std::string> ue_blocks;
  std::string trouble; // the first counter that could not be read, and why
  Status trouble_status = Status::ok;
  std::size_t blocks = 0;
  for (const auto& name : *names) {
    static const std::string suffix = "_err_count";
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    if (++blocks > kMaxBlocks) break;
    const std::string block = name.substr(0, name.size() - suffix.size());
    const ReadResult r = ctx.root.read(fmt::format("{}/{}", dir, name));
    if (!r.ok()) {
      if (trouble.empty()) trouble = fmt::format("{}: {}", r.path, r.reason);
      if (trouble_status == Status::ok) trouble_status = r.status;
      continue;
    }
    const auto c = parse_counts(r.text);
    if (!c) {
      // "Query currently inaccessible": RAS is not ready (a GPU reset in progress).
      if (trouble.empty())
        trouble = fmt::format("{}: not 'ue: N / ce: N' ({})", r.path,
                              split_lines(r.text).empty() ? "" : split_lines(r.text).front());
      trouble_status = Status::error;
      continue;
    }
    total.ue += c->ue;
    total.ce += c->ce;
    total.de += c->de;
    if (c->ue > 0) ue_blocks.push_back(fmt::format("{} ({})", block, c->ue));
  }
  const std::string src = dir + "/*_err_count";
  if (!trouble.empty()) {
    // One unreadable block makes the totals unknown: a partial sum must not pass as zero.
    for (const std::string* k : {&ue_count, &ce_count, &de_count, &ue_blocks_key})
      facts.put_status(*k, trouble_status, src, trouble);
  } else {
    facts.put_ok(ue_count, total.ue, src);
    facts.put_ok(ce_count, total.ce, src);
    facts.put_ok(de_count, total.de, src);
    facts.put_ok(ue_blocks_key, ue_blocks, src);
  }
  // gpu_vram_bad_pages exists only while bad page retirement is on (bad_page_threshold != 0).
  const std::string bp = dir + "/gpu_vram_bad_pages";
  const ReadResult pages = ctx.root.read(bp, kMaxBadPagesBytes);
  if (!pages.ok()) {
    for (const std::string* k : {&retired_key, &pending_key, &failed_key})
      facts.put_status(*k, pages.status, bp,
                       pages.status == Status::missing
                           ? "no bad page list (retirement off: amdgpu.bad_page_threshold=0?)"
                           : pages.reason);
    return;
  }
  static const RE2 page_re(R"(\s*0x[0-9a-fA-F]+\s*:\s*0x[0-9a-fA-F]+\s*:\s*([RPF])\s*)");
  std::int64_t retired = 0;
  std::int64_t pending = 0;
  std::int64_t failed = 0;
  for (const auto& line : split_lines(pages.text)) {
    std::string flag;
    if (!RE2::FullMatch(line, page_re, &flag)) continue;
    (flag == "R" ? retired : flag == "P" ? pending : failed) += 1;
  }
  facts.put_ok(retired_key, retired, bp);
  facts.put_ok(pending_key, pending, bp);
  facts.put_ok(failed_key, failed, bp);
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  // The AMD DRM cards the drm probe found (an input: it runs after the drm probe).
  for_each_amd_card(facts, [&](const std::string& card) { collect_card(ctx, facts, card); });
}

} // namespace

std::unique_ptr<Probe> make_ras_probe() {
  return std::make_unique<BasicProbe>("ras", collect);
}

} // namespace halo::probes
