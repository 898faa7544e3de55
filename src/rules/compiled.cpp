// SPDX-License-Identifier: MIT
// The compiled form of a rule set (issue 33): what the build writes once the rules/*.json text has
// been validated (src/tools/rules_compile.cpp), and what the binary reads at start-up instead of
// lexing the JSON. A flat byte stream of the Rule structs, without the examples; the few JSON
// values a rule holds (literal operands, fix templates) travel as CBOR (RFC 8949, nlohmann's
// to_cbor/from_cbor).
#include <halo/rules.hpp>

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <stdexcept>

namespace halo {
namespace {

/// "HRC" and the format's version: a blob of another version is refused, never misread.
constexpr std::string_view kMagic = "HRC\x01";

class Writer {
public:
  void count(std::size_t n) {
    // LEB128: 7 bits a byte, high bit set while more follow.
    do {
      auto byte = static_cast<unsigned char>(n & 0x7FU);
      n >>= 7U;
      if (n != 0) byte |= 0x80U;
      out_.push_back(static_cast<char>(byte));
    } while (n != 0);
  }
  void byte(unsigned v) { out_.push_back(static_cast<char>(static_cast<unsigned char>(v))); }
  void str(std::string_view s) {
    count(s.size());
    out_.append(s);
  }
  void real(double d) {
    const auto bits = std::bit_cast<std::uint64_t>(d);
    for (unsigned i = 0; i < 8; ++i)
      byte(static_cast<unsigned>((bits >> (8U * i)) & 0xFFU));
  }
  void json(const nlohmann::json& j) {
    const std::vector<std::uint8_t> cbor = nlohmann::json::to_cbor(j);
    count(cbor.size());
    out_.append(reinterpret_cast<const char*>(cbor.data()), cbor.size());
  }
  void strings(const std::vector<std::string>& v) {
    count(v.size());
    for (const auto& s : v)
      str(s);
  }
  void operand(const Operand& o) {
    byte(o.literal ? 1U : 0U);
    if (o.literal) json(*o.literal);
    str(o.fact);
    str(o.param);
    real(o.times);
    real(o.plus);
  }
  void condition(const Condition& c) {
    byte(static_cast<unsigned>(c.kind));
    count(c.children.size());
    for (const auto& child : c.children)
      condition(child);
    str(c.fact);
    byte(static_cast<unsigned>(c.op));
    operand(c.operand);
  }
  void precondition(const Precondition& p) {
    condition(p.when);
    str(p.skip_reason);
  }
  void rule(const Rule& r) {
    str(r.id);
    str(r.area);
    str(r.title);
    count(r.applies.size());
    for (const auto& p : r.applies)
      precondition(p);
    byte(static_cast<unsigned>(r.scope));
    byte(r.gpus ? 1U : 0U);
    if (r.gpus) precondition(*r.gpus);
    count(r.fail.size());
    for (const auto& f : r.fail) {
      byte(static_cast<unsigned>(f.severity));
      condition(f.when);
      str(f.message);
      json(f.fix);
    }
    byte(r.pending_when ? 1U : 0U);
    if (r.pending_when) condition(*r.pending_when);
    str(r.pass_message);
    str(r.why);
    json(r.fix);
    strings(r.evidence);
    strings(r.sources);
    byte(r.volatile_verdict ? 1U : 0U);
    str(r.file);
    count(r.line);
  }
  std::string take() { return std::move(out_); }

private:
  std::string out_;
};

class Reader {
public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::size_t count() {
    std::size_t n = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      const unsigned b = byte();
      n |= static_cast<std::size_t>(b & 0x7FU) << shift;
      if ((b & 0x80U) == 0) return n;
    }
    bad("a count past 64 bits");
  }
  /// A number of items, each at least one byte: never more than the bytes left.
  std::size_t items() {
    const std::size_t n = count();
    need(n);
    return n;
  }
  unsigned byte() {
    need(1);
    return static_cast<unsigned char>(in_[pos_++]);
  }
  std::string str() {
    const std::size_t n = count();
    need(n);
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  double real() {
    std::uint64_t bits = 0;
    for (unsigned i = 0; i < 8; ++i)
      bits |= static_cast<std::uint64_t>(byte()) << (8U * i);
    return std::bit_cast<double>(bits);
  }
  nlohmann::json json() {
    const std::size_t n = count();
    need(n);
    const auto* p = reinterpret_cast<const std::uint8_t*>(in_.data() + pos_);
    pos_ += n;
    return nlohmann::json::from_cbor(p, p + n);
  }
  std::vector<std::string> strings() {
    std::vector<std::string> v(items());
    for (auto& s : v)
      s = str();
    return v;
  }
  template <typename E> E enumerator(unsigned last) {
    const unsigned v = byte();
    if (v > last) bad("an enumerator out of range");
    return static_cast<E>(v);
  }
  Operand operand() {
    Operand o;
    if (byte() != 0) o.literal = json();
    o.fact = str();
    o.param = str();
    o.times = real();
    o.plus = real();
    return o;
  }
  Condition condition(unsigned depth = 0) {
    // The writer's conditions nest as deep as rules/*.json may (kMaxJsonDepth bounds them).
    if (depth > 256) bad("conditions nested too deep");
    Condition c;
    c.kind = enumerator<Condition::Kind>(static_cast<unsigned>(Condition::Kind::leaf));
    c.children.resize(items());
    for (auto& child : c.children)
      child = condition(depth + 1);
    c.fact = str();
    c.op = enumerator<Op>(static_cast<unsigned>(Op::version_ge));
    c.operand = operand();
    return c;
  }
  Precondition precondition() {
    Precondition p;
    p.when = condition();
    p.skip_reason = str();
    return p;
  }
  Rule rule() {
    Rule r;
    r.id = str();
    r.area = str();
    r.title = str();
    r.applies.resize(items());
    for (auto& p : r.applies)
      p = precondition();
    r.scope = enumerator<Scope>(static_cast<unsigned>(Scope::gpu));
    if (byte() != 0) r.gpus = precondition();
    r.fail.resize(items());
    for (auto& f : r.fail) {
      f.severity = enumerator<Severity>(static_cast<unsigned>(Severity::error));
      f.when = condition();
      f.message = str();
      f.fix = json();
    }
    if (byte() != 0) r.pending_when = condition();
    r.pass_message = str();
    r.why = str();
    r.fix = json();
    r.evidence = strings();
    r.sources = strings();
    r.volatile_verdict = byte() != 0;
    r.file = str();
    r.line = count();
    return r;
  }
  bool done() const { return pos_ == in_.size(); }

private:
  void need(std::size_t n) const {
    if (n > in_.size() - pos_) bad("truncated");
  }
  [[noreturn]] void bad(std::string_view what) const {
    throw std::runtime_error(fmt::format("compiled rules: {} at byte {}", what, pos_));
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

} // namespace

std::string encode_rules(const RuleSet& rules) {
  Writer w;
  for (const char c : kMagic)
    w.byte(static_cast<unsigned char>(c));
  w.str(rules.version);
  w.str(rules.digest);
  w.count(rules.rules.size());
  for (const auto& r : rules.rules)
    w.rule(r);
  w.count(rules.fleet_compare.size());
  for (const auto& q : rules.fleet_compare) {
    w.str(q.pattern);
    w.str(q.label);
    w.byte(static_cast<unsigned>(q.severity));
  }
  return w.take();
}

RuleSet decode_rules(std::string_view blob) {
  if (blob.substr(0, kMagic.size()) != kMagic)
    throw std::runtime_error("compiled rules: not this version's format");
  Reader in(blob.substr(kMagic.size()));
  RuleSet set;
  set.version = in.str();
  set.digest = in.str();
  set.rules.resize(in.items());
  for (auto& r : set.rules)
    r = in.rule();
  set.fleet_compare.resize(in.items());
  for (auto& q : set.fleet_compare) {
    q.pattern = in.str();
    q.label = in.str();
    q.severity = in.enumerator<Severity>(static_cast<unsigned>(Severity::error));
  }
  if (!in.done()) throw std::runtime_error("compiled rules: bytes after the rule set");
  return set;
}

} // namespace halo
