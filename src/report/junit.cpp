// SPDX-License-Identifier: MIT
// The JUnit XML report for CI servers (Jenkins junit step, GitLab artifacts:reports:junit).
// There is no formal JUnit standard; this follows the Ant/Jenkins shape
// (testsuites > testsuite > properties + testcase > failure | error | skipped | system-out),
// with kube-bench's mapping (doctor-conventions.md 1.4, 4.2): fail is <failure>, error is
// <error> so CI tells "could not check" from "failed", skip is <skipped>.
#include <halo/report.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>
#include <pugixml.hpp>

#include <algorithm>
#include <sstream>

namespace halo {
namespace {

/// The full diagnosis of one result, as the text report prints it for a failure.
std::string diagnosis(const Result& r) {
  std::string out =
      fmt::format("{} [{} {}] {}{}\n", r.id, to_string(r.status), to_string(r.severity),
                  r.gpu ? describe_gpu(*r.gpu) + ": " : std::string(), r.message);
  if (r.waiver)
    out += fmt::format("waived until {} by {}: {}\n", r.waiver->expires, r.waiver->owner,
                       r.waiver->reason);
  if (r.pending_reboot) out += "pending reboot: the fix is configured but not active yet\n";
  if (!r.evidence.empty()) {
    out += "found:\n";
    for (const auto& e : r.evidence) {
      const std::string val =
          e.status == "ok"
              ? (e.value.is_string() ? e.value.get<std::string>() : dump_json(e.value))
              : fmt::format("<{}{}{}>", e.status, e.reason.empty() ? "" : ": ", e.reason);
      out += fmt::format("  {} = {}{}\n", e.key, val,
                         e.source.empty() ? "" : fmt::format("  ({})", e.source));
    }
  }
  if (!r.why.empty()) out += fmt::format("why:\n  {}\n", r.why);
  const auto fix = render_fix_lines(r.fix);
  if (!fix.empty()) {
    out += "fix:\n";
    for (const auto& l : fix)
      out += "  " + l + "\n";
  }
  if (!r.sources.empty()) {
    out += "sources:\n";
    for (const auto& s : r.sources)
      out += "  " + s + "\n";
  }
  return out;
}

struct Counts {
  int tests = 0;
  int failures = 0;
  int errors = 0;
  int skipped = 0;
};

void count(Counts& c, const Result& r) {
  ++c.tests;
  if (r.status == Outcome::fail && !r.waived()) ++c.failures;
  if (r.status == Outcome::error) ++c.errors;
  if (r.status == Outcome::skip || r.waived()) ++c.skipped;
}

void set_counts(pugi::xml_node node, const Counts& c, double seconds) {
  node.append_attribute("tests") = c.tests;
  node.append_attribute("failures") = c.failures;
  node.append_attribute("errors") = c.errors;
  node.append_attribute("skipped") = c.skipped;
  node.append_attribute("time") = fmt::format("{:.3f}", seconds).c_str();
}

void add_property(pugi::xml_node props, const char* name, const std::string& value) {
  auto p = props.append_child("property");
  p.append_attribute("name") = name;
  p.append_attribute("value") = value.c_str();
}

/// Makes every attribute value and text node valid XML 1.0 (xml_safe): facts may hold control
/// characters and bytes that are not UTF-8, which pugixml writes as they are.
struct XmlSanitizer : pugi::xml_tree_walker {
  bool for_each(pugi::xml_node& node) override {
    for (auto attr : node.attributes())
      attr.set_value(xml_safe(attr.value()).c_str());
    if (node.type() == pugi::node_pcdata || node.type() == pugi::node_cdata)
      node.set_value(xml_safe(node.value()).c_str());
    return true;
  }
};

} // namespace

std::string junit_report(const std::vector<Result>& results, const ReportContext& ctx) {
  pugi::xml_document doc;
  auto decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";

  auto suites = doc.append_child("testsuites");
  suites.append_attribute("name") = "halo-doctor";
  Counts total;
  for (const auto& r : results)
    count(total, r);
  set_counts(suites, total, ctx.duration_seconds);

  std::vector<std::string> areas;
  for (const auto& r : results)
    if (std::find(areas.begin(), areas.end(), r.area) == areas.end()) areas.push_back(r.area);

  for (const auto& area : areas) {
    auto suite = suites.append_child("testsuite");
    const std::string suite_name = "halo-doctor." + area;
    suite.append_attribute("name") = suite_name.c_str();
    if (!ctx.hostname.empty()) suite.append_attribute("hostname") = ctx.hostname.c_str();
    Counts c;
    for (const auto& r : results)
      if (r.area == area) count(c, r);
    set_counts(suite, c, 0.0);

    auto props = suite.append_child("properties");
    add_property(props, "halo-doctor.version", ctx.tool_version);
    add_property(props, "ruleset.version", ctx.ruleset_version);
    add_property(props, "ruleset.digest", ctx.ruleset_digest);
    add_property(props, "host.kernel", ctx.kernel);
    add_property(props, "host.os", ctx.os);
    add_property(props, "root", ctx.root);
    add_property(props, "exit_code", std::to_string(ctx.exit_code));

    for (const auto& r : results) {
      if (r.area != area) continue;
      auto tc = suite.append_child("testcase");
      tc.append_attribute("name") =
          (r.gpu ? fmt::format("{} [{}]: {}", r.id, describe_gpu(*r.gpu), r.title)
                 : fmt::format("{}: {}", r.id, r.title))
              .c_str();
      tc.append_attribute("classname") = suite_name.c_str();
      tc.append_attribute("time") = "0";
      const std::string type = std::string(to_string(r.severity));
      if (r.waived()) {
        auto s = tc.append_child("skipped");
        s.append_attribute("message") = fmt::format("waived until {} by {}: {}", r.waiver->expires,
                                                    r.waiver->owner, r.waiver->reason)
                                            .c_str();
      } else if (r.status == Outcome::fail) {
        auto f = tc.append_child("failure");
        f.append_attribute("message") = r.message.c_str();
        f.append_attribute("type") = type.c_str();
        std::string body = r.why;
        for (const auto& l : render_fix_lines(r.fix))
          body += "\n" + l;
        f.text().set(body.c_str());
      } else if (r.status == Outcome::error) {
        auto e = tc.append_child("error");
        e.append_attribute("message") = r.message.c_str();
        e.append_attribute("type") = "could-not-check";
      } else if (r.status == Outcome::skip) {
        auto s = tc.append_child("skipped");
        s.append_attribute("message") = r.message.c_str();
      }
      tc.append_child("system-out").text().set(diagnosis(r).c_str());
    }
  }

  XmlSanitizer sanitizer;
  doc.traverse(sanitizer);
  std::ostringstream out;
  doc.save(out, "  ", pugi::format_default, pugi::encoding_utf8);
  return out.str();
}

} // namespace halo
