// SPDX-License-Identifier: MIT
// Slurm node state, drain reasons and the drain/resume decision (include/halo/slurm.hpp).
#include <halo/result.hpp>
#include <halo/slurm.hpp>
#include <halo/text.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace halo::slurm {

std::string_view to_string(Mode m) {
  switch (m) {
  case Mode::health_check:
    return "health-check";
  case Mode::prolog:
    return "prolog";
  case Mode::epilog:
    return "epilog";
  }
  return "health-check";
}

namespace {

/// The '+'-separated parts of a State= value ("IDLE+DRAIN" -> IDLE, DRAIN).
std::vector<std::string_view> state_parts(std::string_view state) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= state.size()) {
    std::size_t plus = state.find('+', start);
    if (plus == std::string_view::npos) plus = state.size();
    parts.push_back(state.substr(start, plus - start));
    start = plus + 1;
  }
  return parts;
}

bool has_part(std::string_view state, std::string_view part) {
  const auto parts = state_parts(state);
  return std::find(parts.begin(), parts.end(), part) != parts.end();
}

/// Value of ` KEY=` in a one-line record, up to the next space; empty when absent.
std::string field(std::string_view line, std::string_view key) {
  const std::string needle = fmt::format("{}=", key);
  std::size_t at = 0;
  while (true) {
    at = line.find(needle, at);
    if (at == std::string_view::npos) return {};
    if (at == 0 || line[at - 1] == ' ') break;
    at += needle.size();
  }
  const std::size_t start = at + needle.size();
  const std::size_t end = line.find(' ', start);
  return std::string(line.substr(start, end == std::string_view::npos ? end : end - start));
}

/// Reason= runs to the end of the line, less an optional " Comment=..." / " Extra=..." tail and
/// the " [USER@TIME]" that scontrol appends after the first line of the reason.
std::string reason_of(std::string_view line) {
  std::size_t at = line.find(" Reason=");
  if (at == std::string_view::npos) return {};
  std::string_view r = line.substr(at + 8);
  for (std::string_view tail : {" Comment=", " Extra="}) {
    const std::size_t t = r.rfind(tail);
    if (t != std::string_view::npos) r = r.substr(0, t);
  }
  while (!r.empty() && (r.back() == ' ' || r.back() == '\r'))
    r.remove_suffix(1);
  if (!r.empty() && r.back() == ']') {
    const std::size_t open = r.rfind(" [");
    if (open != std::string_view::npos && r.find('@', open) != std::string_view::npos)
      r = r.substr(0, open);
  }
  return std::string(r);
}

} // namespace

bool Node::drain() const {
  return has_part(state, "DRAIN") || has_part(state, "DRAINING") || has_part(state, "DRAINED");
}

bool Node::down() const {
  return has_part(state, "DOWN") || has_part(state, "FAIL") || has_part(state, "FAILING");
}

bool Node::ours() const {
  return std::string_view(reason).substr(0, kReasonPrefix.size()) == kReasonPrefix;
}

std::vector<Node> parse_show_node(std::string_view text) {
  std::vector<Node> nodes;
  for (const std::string_view line : split_records(text, '\n')) {
    if (line.substr(0, 9) != "NodeName=") continue;
    Node n;
    n.name = field(line, "NodeName");
    n.hostname = field(line, "NodeHostName");
    n.state = field(line, "State");
    n.reason = reason_of(line);
    if (!n.name.empty()) nodes.push_back(std::move(n));
  }
  return nodes;
}

std::optional<std::string> node_for_host(const std::vector<Node>& nodes,
                                         std::string_view short_hostname) {
  std::optional<std::string> found;
  for (const auto& n : nodes) {
    if (n.name != short_hostname && n.hostname != short_hostname) continue;
    if (found && *found != n.name) return std::nullopt;
    found = n.name;
  }
  return found;
}

std::string drain_reason(std::string_view label, const std::vector<std::string>& ids,
                         std::size_t max) {
  std::string head = fmt::format("{} {}", kReasonPrefix, label);
  if (ids.empty()) {
    while (!head.empty() && (head.back() == ' ' || head.back() == ':'))
      head.pop_back();
    return head.size() > max ? head.substr(0, max) : head;
  }
  // Keep the first k ids that fit with the " +N" marker for the rest.
  for (std::size_t k = ids.size(); k >= 1; --k) {
    std::string s = head;
    for (std::size_t i = 0; i < k; ++i) {
      if (i > 0) s += ',';
      s += ids[i];
    }
    if (k < ids.size()) s += fmt::format(" +{}", ids.size() - k);
    if (s.size() <= max) return s;
  }
  // Not even the first id fits: cut it.
  std::string s = head + ids.front();
  const std::string more = ids.size() > 1 ? fmt::format(" +{}", ids.size() - 1) : std::string();
  const std::string cut = "...";
  if (max > head.size() + cut.size() + more.size())
    return s.substr(0, max - cut.size() - more.size()) + cut + more;
  return s.substr(0, max);
}

Verdict verdict_from_results(const std::vector<Result>& results, FailOn fail_on) {
  Verdict v;
  if (fail_on == FailOn::never) return v;
  const auto threshold = static_cast<Severity>(static_cast<int>(fail_on));
  auto add = [](std::vector<std::string>& to, const std::string& id) {
    if (std::find(to.begin(), to.end(), id) == to.end()) to.push_back(id);
  };
  for (const auto& r : results)
    if (r.status == Outcome::fail && r.severity >= threshold && !r.waived() && !r.pending_reboot)
      add(v.failed, r.id);
  for (const auto& r : results)
    if (r.status == Outcome::fail && r.severity >= threshold && !r.waived() && r.pending_reboot &&
        std::find(v.failed.begin(), v.failed.end(), r.id) == v.failed.end())
      add(v.pending, r.id);
  // Cleared: every result of the id passed or failed uncounted; one skip or error, or a counted
  // failure, and the id is not.
  std::vector<std::string> not_cleared;
  for (const auto& r : results) {
    const bool counted = r.status == Outcome::fail && r.severity >= threshold && !r.waived();
    if (r.status == Outcome::skip || r.status == Outcome::error || counted) add(not_cleared, r.id);
  }
  for (const auto& r : results)
    if (std::find(not_cleared.begin(), not_cleared.end(), r.id) == not_cleared.end())
      add(v.cleared, r.id);
  return v;
}

ReasonRules rules_of_reason(std::string_view reason) {
  ReasonRules out;
  if (reason.substr(0, kReasonPrefix.size()) != kReasonPrefix) return out;
  std::string_view r = reason.substr(kReasonPrefix.size());
  while (!r.empty() && r.front() == ' ')
    r.remove_prefix(1);
  constexpr std::string_view kPending = "reboot pending: ";
  if (r.substr(0, kPending.size()) == kPending) r.remove_prefix(kPending.size());
  if (r.empty() || r.substr(0, 15) == "could not check") return out;
  const std::size_t space = r.find(' ');
  const std::string_view list = r.substr(0, space);
  const bool cut = space != std::string_view::npos || list.find("...") != std::string_view::npos;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    const std::string_view id = list.substr(start, comma - start);
    if (!id.empty() && id.find("...") == std::string_view::npos) out.ids.emplace_back(id);
    start = comma + 1;
  }
  out.all = !cut && !out.ids.empty();
  return out;
}

Decision decide(const Verdict& v, const std::optional<Node>& node, const Settings& s) {
  Decision d;
  const bool job = s.mode != Mode::health_check;
  Action want = Action::none;
  std::string what;
  if (!v.internal_error.empty()) {
    what = fmt::format("could not check the node ({})", v.internal_error);
    if (s.drain_on_internal_error) {
      want = Action::drain;
      d.reason =
          drain_reason(fmt::format("could not check: {}", v.internal_error), {}, s.reason_max);
      d.exit_code = job ? exit_code::failed : exit_code::internal;
    } else {
      d.exit_code = job ? exit_code::ok : exit_code::internal;
    }
  } else if (!v.failed.empty()) {
    std::vector<std::string> ids = v.failed;
    ids.insert(ids.end(), v.pending.begin(), v.pending.end());
    what = fmt::format("failed: {}", fmt::join(ids, ", "));
    want = Action::drain;
    d.reason = drain_reason("", ids, s.reason_max);
    d.exit_code = exit_code::failed;
  } else if (!v.pending.empty()) {
    what = fmt::format("waiting for a reboot: {}", fmt::join(v.pending, ", "));
    if (s.pending_reboot == PendingReboot::drain) {
      want = Action::drain;
      d.reason = drain_reason("reboot pending: ", v.pending, s.reason_max);
      d.exit_code = exit_code::pending_reboot;
    } else {
      d.exit_code = job ? exit_code::ok : exit_code::pending_reboot;
    }
  } else {
    what = "healthy";
    want = Action::resume;
    d.exit_code = exit_code::ok;
  }

  if (!node) {
    d.summary = fmt::format("{}; the node's state could not be read, so it is left as it is", what);
    if (!job) d.exit_code = exit_code::internal;
    return d;
  }
  const std::string state = node->reason.empty()
                                ? node->state
                                : fmt::format("{}, reason \"{}\"", node->state, node->reason);
  switch (want) {
  case Action::drain:
    if (!node->reason.empty() && !node->ours()) {
      d.summary = fmt::format("{}; node {} ({}) was set by someone else and is left as it is", what,
                              node->name, state);
    } else if (node->drain() && node->reason == d.reason) {
      d.summary = fmt::format("{}; node {} is already drained with this reason", what, node->name);
    } else {
      d.action = Action::drain;
      d.summary = fmt::format("{}; draining node {} ({})", what, node->name, state);
    }
    break;
  case Action::resume:
    if (node->ours() && (node->drain() || node->down())) {
      // Lift only what this run judged (issue 44 item 5).
      const ReasonRules named = rules_of_reason(node->reason);
      std::vector<std::string> unjudged;
      for (const auto& id : named.ids)
        if (std::find(v.cleared.begin(), v.cleared.end(), id) == v.cleared.end())
          unjudged.push_back(id);
      if (unjudged.empty() && (named.all || v.complete)) {
        d.action = Action::resume;
        d.summary = fmt::format("{}; resuming node {} ({})", what, node->name, state);
      } else if (!unjudged.empty()) {
        d.summary =
            fmt::format("{}; node {} ({}) is kept drained: this {} did not evaluate and "
                        "pass {}",
                        what, node->name, state, to_string(s.mode), fmt::join(unjudged, ", "));
      } else {
        d.summary = fmt::format("{}; node {} ({}) is kept drained: its reason does not name every "
                                "rule it was drained for, and this {} did not evaluate every rule",
                                what, node->name, state, to_string(s.mode));
      }
    } else if (node->drain() || node->down()) {
      d.summary =
          fmt::format("{}; node {} ({}) was not drained by halo-doctor and is left as it is", what,
                      node->name, state);
    } else {
      d.summary = fmt::format("{}; node {} is {}", what, node->name, node->state);
    }
    break;
  case Action::none:
    d.summary = fmt::format("{}; node {} ({}) is left as it is", what, node->name, state);
    break;
  }
  return d;
}

} // namespace halo::slurm
