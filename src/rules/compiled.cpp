// SPDX-License-Identifier: MIT
// The compiled form of a rule set (issue 33): what the build writes once the rules/*.json text has
// been validated (src/tools/rules_compile.cpp), and what the binary reads at start-up instead of
// lexing the JSON. A flat byte stream of the Rule structs, without the examples; the few JSON
// values a rule holds (literal operands, fix templates) travel tagged (JsonTag).
#include <halo/rules.hpp>

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace halo {
namespace {

/// "HRC" and the format's version: a blob of another version is refused, never misread.
constexpr std::string_view kMagic = "HRC\x02";

/// How a JSON value travels: a tag, then scalars as themselves, arrays and objects as a count and
/// their elements (an object's keys in nlohmann's order, sorted), and anything else (binary) as
/// CBOR. Most values are null (a rule's or fail case's absent fix) or a literal operand, and
/// nlohmann's CBOR reader cost some thousand instructions a value even for null: decoding the
/// fix templates through it was half of decoding the rules (issue 33).
enum class JsonTag : unsigned {
  null,
  boolean,
  integer,
  unsigned_integer,
  real,
  string,
  array,
  object,
  cbor
};

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
  void bits(std::uint64_t v) {
    for (unsigned i = 0; i < 8; ++i)
      byte(static_cast<unsigned>((v >> (8U * i)) & 0xFFU));
  }
  void real(double d) { bits(std::bit_cast<std::uint64_t>(d)); }
  void json(const nlohmann::json& j) {
    using T = nlohmann::json::value_t;
    switch (j.type()) {
    case T::null:
      byte(static_cast<unsigned>(JsonTag::null));
      return;
    case T::boolean:
      byte(static_cast<unsigned>(JsonTag::boolean));
      byte(j.get<bool>() ? 1U : 0U);
      return;
    case T::number_integer:
      byte(static_cast<unsigned>(JsonTag::integer));
      bits(static_cast<std::uint64_t>(j.get<std::int64_t>()));
      return;
    case T::number_unsigned:
      byte(static_cast<unsigned>(JsonTag::unsigned_integer));
      bits(j.get<std::uint64_t>());
      return;
    case T::number_float:
      byte(static_cast<unsigned>(JsonTag::real));
      real(j.get<double>());
      return;
    case T::string:
      byte(static_cast<unsigned>(JsonTag::string));
      str(j.get_ref<const std::string&>());
      return;
    case T::array:
      byte(static_cast<unsigned>(JsonTag::array));
      count(j.size());
      for (const auto& e : j)
        json(e);
      return;
    case T::object:
      byte(static_cast<unsigned>(JsonTag::object));
      count(j.size());
      for (const auto& [k, v] : j.items()) {
        str(k);
        json(v);
      }
      return;
    default:
      break;
    }
    byte(static_cast<unsigned>(JsonTag::cbor));
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
    strings(r.subsumes);
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
  std::uint64_t bits() {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < 8; ++i)
      v |= static_cast<std::uint64_t>(byte()) << (8U * i);
    return v;
  }
  double real() { return std::bit_cast<double>(bits()); }
  nlohmann::json json(unsigned depth = 0) {
    // The writer's values nest as deep as rules/*.json may (kMaxJsonDepth bounds them).
    if (depth > 256) bad("JSON values nested too deep");
    switch (enumerator<JsonTag>(static_cast<unsigned>(JsonTag::cbor))) {
    case JsonTag::null:
      return nullptr;
    case JsonTag::boolean:
      return byte() != 0;
    case JsonTag::integer:
      return static_cast<std::int64_t>(bits());
    case JsonTag::unsigned_integer:
      return bits();
    case JsonTag::real:
      return real();
    case JsonTag::string:
      return str();
    case JsonTag::array: {
      nlohmann::json a = nlohmann::json::array();
      const std::size_t n = items();
      a.get_ref<nlohmann::json::array_t&>().reserve(n);
      for (std::size_t i = 0; i < n; ++i)
        a.push_back(json(depth + 1));
      return a;
    }
    case JsonTag::object: {
      nlohmann::json o = nlohmann::json::object();
      auto& members = o.get_ref<nlohmann::json::object_t&>();
      const std::size_t n = items();
      for (std::size_t i = 0; i < n; ++i) {
        std::string key = str();
        // Written in order: each key goes at the end (a repeated key keeps the first value, as
        // the map's insert does).
        members.emplace_hint(members.end(), std::move(key), json(depth + 1));
      }
      return o;
    }
    case JsonTag::cbor:
      break;
    }
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
    r.subsumes = strings();
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
