// SPDX-License-Identifier: MIT
// Probe: the boot stack, i.e. which tool owns the kernel command line and which one builds the
// initramfs. Detection follows reference/doctor-conventions.md section 5.2: NixOS (os-release
// ID=nixos), ostree (/run/ostree-booted), kernelstub, systemd-boot with kernel-install, GRUB with
// grubby (BLS), GRUB on Debian (update-grub), plain GRUB (grub-mkconfig). Every signal used is
// recorded in boot.evidence; when strong signals name two stacks, boot.stack is an error fact that
// lists them, so `halo-doctor fix` refuses and asks for --stack instead of guessing.
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>
#include <halo/fix.hpp>
#include <halo/text.hpp>

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <array>

namespace halo::probes {
namespace {

/// The directories searched for boot tools, as on a merged-/usr or split system.
constexpr std::array kBinDirs = {"/usr/bin", "/usr/sbin", "/bin", "/sbin"};

/// boot.stack's values are `halo-doctor fix --stack`'s spellings (include/halo/fix.hpp, one home).
std::string stack_name(fix::Stack s) {
  return std::string(fix::to_string(s));
}

/// The tools whose presence is evidence (doctor-conventions.md 5.1, 5.2, 5.4).
constexpr std::array kTools = {"grubby",        "update-grub", "grub-mkconfig",    "grub2-mkconfig",
                               "kernelstub",    "bootctl",     "kernel-install",   "rpm-ostree",
                               "nixos-rebuild", "dracut",      "update-initramfs", "mkinitcpio"};

/// Where systemd-boot and BLS keep loader entries ($BOOT/loader/entries).
constexpr std::array kEntryDirs = {"/boot/loader/entries", "/efi/loader/entries",
                                   "/boot/efi/loader/entries"};

/// The path under `dir` where tool `name` is an executable regular file, or "" (through the Root,
/// so fixtures and a host mounted under --root are read the same way).
std::string find_tool(const Root& root, const std::string& name) {
  for (const char* d : kBinDirs) {
    std::string abs = fmt::format("{}/{}", d, name);
    struct stat st {};
    // One openat2 and fstat; resolve() walked each component with lstat (issue 33).
    if (!root.stat_path(abs, st)) continue;
    if (S_ISREG(st.st_mode) && (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0) return abs;
  }
  return {};
}

/// Kernel-argument prefixes of the modules `fix` sets or removes (amdgpu, the three TTM module
/// names, the IOMMU switches): a quoted Nix string starting with one of them is a definition in
/// boot.kernelParams that the NixOS snippet's values must replace.
constexpr std::array kNixParamPrefixes = {"\"ttm.",    "\"amdttm.",    "\"amd_ttm.", "\"amd-ttm.",
                                          "\"amdgpu.", "\"amd_iommu=", "\"iommu="};

/// Lines of the NixOS configuration (/etc/nixos/*.nix and one directory level below, at most 256
/// files of at most 1 MiB each) that hold such a string, as "PATH:LINE: TEXT".
std::vector<std::string> nixos_param_lines(const Root& root) {
  constexpr std::size_t kMaxFiles = 256;
  constexpr std::size_t kMaxBytes = std::size_t{1} << 20;
  std::vector<std::string> files;
  auto add_dir = [&](const std::string& dir, int depth, auto& self) -> void {
    auto names = root.list(dir);
    if (!names) return;
    for (const auto& n : *names) {
      if (files.size() >= kMaxFiles || n.empty() || n[0] == '.') continue;
      const std::string path = fmt::format("{}/{}", dir, n);
      if (n.size() > 4 && n.substr(n.size() - 4) == ".nix")
        files.push_back(path);
      else if (depth > 0 && root.is_dir(path))
        self(path, depth - 1, self);
    }
  };
  add_dir("/etc/nixos", 1, add_dir);
  std::vector<std::string> out;
  for (const auto& f : files) {
    const ReadResult r = root.read(f, kMaxBytes);
    if (!r.ok()) {
      out.push_back(fmt::format("{}: not searched ({})", f, r.reason));
      continue;
    }
    std::size_t line_no = 0;
    for (const std::string_view line : split_records(r.text, '\n')) {
      ++line_no;
      for (const char* p : kNixParamPrefixes)
        if (line.find(p) != std::string_view::npos) {
          out.push_back(fmt::format("{}:{}: {}", f, line_no, line));
          break;
        }
    }
  }
  return out;
}

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  // The host's boot loader and initramfs: through the host root in a container.
  const Root* host = ctx.host_config_root();
  if (host == nullptr) {
    for (const std::string_view k :
         {fact_keys::boot::stack, fact_keys::boot::evidence, fact_keys::boot::tools,
          fact_keys::boot::initramfs_tool, fact_keys::boot::ostree_booted,
          fact_keys::boot::kernelstub_config, fact_keys::boot::grub_default_exists,
          fact_keys::boot::grub_bls, fact_keys::boot::grub_d_files,
          fact_keys::boot::kernel_cmdline_file, fact_keys::boot::loader_entries,
          fact_keys::boot::nixos_kernel_param_lines})
      facts.put_status(std::string(k), Status::missing, "host root", ctx.host_basis());
    return;
  }
  const Root& root = *host;
  std::vector<std::string> evidence;

  // Tools present.
  std::vector<std::string> tools;
  for (const char* t : kTools) {
    const std::string where = find_tool(root, t);
    if (where.empty()) continue;
    tools.emplace_back(t);
    evidence.push_back(fmt::format("{} is installed ({})", t, where));
  }
  facts.put_ok(std::string(fact_keys::boot::tools), tools,
               "executables in /usr/bin, /usr/sbin, /bin, /sbin");
  auto has = [&](std::string_view t) { return contains(tools, t); };

  // os-release, as the os probe read it (it runs earlier).
  const std::string os_id = facts.get<std::string>(fact_keys::os::id).value_or("");
  const std::string variant = facts.get<std::string>(fact_keys::os::variant_id).value_or("");
  const auto family = facts.get<std::vector<std::string>>(fact_keys::os::family)
                          .value_or(std::vector<std::string>{});
  if (!os_id.empty())
    evidence.push_back(fmt::format("/etc/os-release: ID={}{}", os_id,
                                   variant.empty() ? "" : " VARIANT_ID=" + variant));

  // Markers and configuration files.
  const bool ostree = root.exists("/run/ostree-booted");
  facts.put_ok(std::string(fact_keys::boot::ostree_booted), ostree, "/run/ostree-booted");
  if (ostree) evidence.emplace_back("/run/ostree-booted exists");

  const bool kernelstub_conf = root.exists("/etc/kernelstub/configuration");
  facts.put_ok(std::string(fact_keys::boot::kernelstub_config), kernelstub_conf,
               "/etc/kernelstub/configuration");
  if (kernelstub_conf) evidence.emplace_back("/etc/kernelstub/configuration exists");

  const ReadResult grub = root.read("/etc/default/grub");
  facts.put_ok(std::string(fact_keys::boot::grub_default_exists), grub.ok(), "/etc/default/grub");
  bool bls = false;
  if (grub.ok()) {
    for (const auto& line : split_lines(grub.text)) {
      std::string l = line;
      l.erase(std::remove(l.begin(), l.end(), '"'), l.end());
      if (l.rfind("GRUB_ENABLE_BLSCFG=true", 0) == 0) bls = true;
    }
    evidence.emplace_back(bls ? "/etc/default/grub sets GRUB_ENABLE_BLSCFG=true"
                              : "/etc/default/grub exists");
    facts.put_ok(std::string(fact_keys::boot::grub_bls), bls, "/etc/default/grub");
  } else {
    facts.put_status(std::string(fact_keys::boot::grub_bls), grub.status, grub.path, grub.reason);
  }

  Status st = Status::ok;
  auto grub_d = root.list("/etc/default/grub.d", &st);
  std::vector<std::string> grub_d_files;
  if (grub_d) {
    for (const auto& n : *grub_d)
      if (n.size() > 4 && n.substr(n.size() - 4) == ".cfg") grub_d_files.push_back(n);
    facts.put_ok(std::string(fact_keys::boot::grub_d_files), grub_d_files, "/etc/default/grub.d");
    if (!grub_d_files.empty())
      evidence.push_back(
          fmt::format("/etc/default/grub.d holds {}", fmt::join(grub_d_files, ", ")));
  } else {
    facts.put_status(std::string(fact_keys::boot::grub_d_files), st, "/etc/default/grub.d",
                     "cannot be listed");
  }

  const ReadResult cmdline = root.read_trimmed("/etc/kernel/cmdline");
  if (cmdline.ok()) {
    facts.put_ok(std::string(fact_keys::boot::kernel_cmdline_file), cmdline.text, cmdline.path);
    evidence.emplace_back("/etc/kernel/cmdline exists");
  } else {
    facts.put_status(std::string(fact_keys::boot::kernel_cmdline_file), cmdline.status,
                     cmdline.path, cmdline.reason);
  }

  std::vector<std::string> entries;
  for (const char* d : kEntryDirs) {
    auto names = root.list(d);
    if (!names) continue;
    for (const auto& n : *names)
      if (n.size() > 5 && n.substr(n.size() - 5) == ".conf")
        entries.push_back(std::string(d) + "/" + n);
  }
  facts.put_ok(std::string(fact_keys::boot::loader_entries), entries,
               "/boot/loader/entries, /efi/loader/entries");
  facts.put_ok(std::string(fact_keys::boot::nixos_kernel_param_lines), nixos_param_lines(root),
               "/etc/nixos/**/*.nix");
  if (!entries.empty())
    evidence.push_back(fmt::format("{} loader entries ({})", entries.size(), entries.front()));

  // The initramfs builder: the one the distribution family uses when several are installed.
  std::string initramfs;
  std::vector<std::string> builders;
  for (const char* b : {"dracut", "update-initramfs", "mkinitcpio"})
    if (has(b)) builders.emplace_back(b);
  if (builders.size() == 1)
    initramfs = builders.front();
  else if (builders.size() > 1) {
    if (contains(family, "debian") || contains(family, "ubuntu"))
      initramfs = "update-initramfs";
    else if (contains(family, "arch"))
      initramfs = "mkinitcpio";
    else if (has("dracut"))
      initramfs = "dracut";
  }
  if (!initramfs.empty())
    facts.put_ok(std::string(fact_keys::boot::initramfs_tool), initramfs,
                 std::string(fact_keys::boot::tools));
  else
    facts.put_status(std::string(fact_keys::boot::initramfs_tool), Status::missing,
                     std::string(fact_keys::boot::tools),
                     builders.empty() ? "none of dracut, update-initramfs, mkinitcpio is installed"
                                      : "several initramfs builders installed: " +
                                            fmt::format("{}", fmt::join(builders, ", ")));

  // Candidates, strongest first (doctor-conventions.md 5.2).
  std::vector<std::pair<std::string, std::string>> strong; // kind, why
  if (os_id == "nixos") strong.emplace_back(stack_name(fix::Stack::nixos), "ID=nixos");
  if (ostree) strong.emplace_back(stack_name(fix::Stack::rpm_ostree), "/run/ostree-booted");
  std::string kind;
  // Two or more candidates: refuse with the evidence (the user picks with --stack).
  auto report_conflict = [&](const std::vector<std::pair<std::string, std::string>>& candidates) {
    std::vector<std::string> why;
    why.reserve(candidates.size());
    for (const auto& [k, w] : candidates)
      why.push_back(fmt::format("{} ({})", k, w));
    facts.put_status(std::string(fact_keys::boot::stack), Status::error,
                     std::string(fact_keys::boot::evidence),
                     fmt::format("conflicting evidence: {}", fmt::join(why, " vs ")));
    facts.put_ok(std::string(fact_keys::boot::evidence), evidence, "boot stack detection");
  };
  if (strong.size() > 1) {
    report_conflict(strong);
    return;
  }
  if (strong.size() == 1) kind = strong.front().first;
  if (kind.empty() && (has("kernelstub") || kernelstub_conf))
    kind = stack_name(fix::Stack::kernelstub);
  if (kind.empty()) {
    std::vector<std::pair<std::string, std::string>> c;
    const bool grub_present = grub.ok() || has("grubby") || has("update-grub") ||
                              has("grub-mkconfig") || has("grub2-mkconfig");
    if (has("grubby"))
      c.emplace_back(stack_name(fix::Stack::grubby), bls ? "grubby, BLS" : "grubby");
    if (has("update-grub")) c.emplace_back(stack_name(fix::Stack::grub_debian), "update-grub");
    if (!has("grubby") && !has("update-grub") && (has("grub-mkconfig") || has("grub2-mkconfig")))
      c.emplace_back(stack_name(fix::Stack::grub_arch),
                     has("grub-mkconfig") ? "grub-mkconfig" : "grub2-mkconfig");
    if (has("kernel-install") && (cmdline.ok() || !entries.empty()) && !grub.ok())
      c.emplace_back(stack_name(fix::Stack::systemd_boot),
                     cmdline.ok() ? "kernel-install, /etc/kernel/cmdline"
                                  : "kernel-install, loader entries, no GRUB");
    if (c.size() > 1) {
      report_conflict(c);
      return;
    }
    if (c.size() == 1)
      kind = c.front().first;
    else if (grub_present && !grub.ok())
      evidence.emplace_back("GRUB tools without /etc/default/grub");
  }
  facts.put_ok(std::string(fact_keys::boot::evidence), evidence, "boot stack detection");
  if (kind.empty())
    facts.put_status(std::string(fact_keys::boot::stack), Status::missing,
                     std::string(fact_keys::boot::evidence),
                     "no boot loader tool found (grubby, update-grub, grub-mkconfig, kernelstub, "
                     "kernel-install, rpm-ostree) and not NixOS");
  else
    facts.put_ok(std::string(fact_keys::boot::stack), kind, std::string(fact_keys::boot::evidence));
}

} // namespace

std::unique_ptr<Probe> make_boot_stack_probe() {
  // Its inputs and reads are its checks/boot/facts.json entry, but for the tools it looks for,
  // which come from the tables collect() reads (kBinDirs x kTools), so the two cannot drift.
  auto probe = std::make_unique<BasicProbe>("boot_stack", collect);
  std::vector<std::string> tools;
  tools.reserve(kBinDirs.size() * kTools.size());
  for (const char* d : kBinDirs)
    for (const char* t : kTools)
      tools.push_back(std::string(d) + "/" + t);
  probe->add_reads(std::move(tools));
  return probe;
}

} // namespace halo::probes
