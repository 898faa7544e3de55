// SPDX-License-Identifier: MIT
// Reading the nodes of `fleet compare` (include/halo/fleet.hpp): each input reduced to its values
// of the quantities, on the machine's cores, in a bounded window (issue 42 item 6).
#include <halo/doctor.hpp>
#include <halo/error.hpp>
#include <halo/fleet.hpp>
#include <halo/io.hpp>
#include <halo/rederive.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HALO_HAVE_SIMDJSON
#include <simdjson.h>
#endif

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace halo::fleet {
namespace {

bool is_bundle(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.size() > 7 && name.compare(name.size() - 7, 7, ".tar.gz") == 0;
}

/// The options `fleet compare` replays a node with: `check --facts FILE --no-runtime`'s.
DoctorOptions replay_options(const std::string& path) {
  DoctorOptions c;
  (is_bundle(path) ? c.bundle : c.facts_file) = path;
  c.probe.no_runtime = true;
  return c;
}

#ifdef HALO_HAVE_SIMDJSON
namespace od = simdjson::ondemand;

/// True when a simdjson call failed (its error_code is not SUCCESS).
bool fails(simdjson::error_code e) {
  return e != simdjson::SUCCESS;
}

/// A JSON string's text (escapes and UTF-8 checked by simdjson); false for anything else.
bool read_string(od::value v, std::string_view& out) {
  return !fails(v.get_string().get(out));
}

/// A fact's "value" as value_from_json reads it, into `out` when `out` is given; false for a
/// value value_from_json refuses or that the fast reader is not sure it reads the same: an integer
/// beyond int64 (nlohmann reads one beyond uint64 as a double), a number out of a double's range.
bool read_value(od::value v, Value* out) {
  od::json_type t{};
  if (fails(v.type().get(t))) return false;
  switch (t) {
  case od::json_type::null: {
    bool null = false;
    if (fails(v.is_null().get(null)) || !null) return false;
    if (out != nullptr) *out = std::monostate{};
    return true;
  }
  case od::json_type::boolean: {
    bool b = false;
    if (fails(v.get_bool().get(b))) return false;
    if (out != nullptr) *out = b;
    return true;
  }
  case od::json_type::number: {
    const std::string_view raw = v.raw_json_token();
    // nlohmann's lexer: a number with a fraction or an exponent is a double (strtod, correctly
    // rounded, as simdjson's get_double is); one without is an integer.
    if (raw.find_first_of(".eE") != std::string_view::npos) {
      double d = 0;
      if (fails(v.get_double().get(d))) return false;
      if (out != nullptr) *out = d;
    } else {
      std::int64_t i = 0;
      if (fails(v.get_int64().get(i))) return false;
      if (out != nullptr) *out = i;
    }
    return true;
  }
  case od::json_type::string: {
    std::string_view s;
    if (!read_string(v, s)) return false;
    if (out != nullptr) *out = std::string(s);
    return true;
  }
  case od::json_type::array: {
    od::array a;
    if (fails(v.get_array().get(a))) return false;
    std::vector<std::string> list;
    for (auto e : a) {
      od::value ev;
      std::string_view s;
      // simdjson_result::get is &&-qualified: the move picks it (the type is trivially copyable).
      if (fails(std::move(e).get(ev)) || // NOLINT(performance-move-const-arg)
          !read_string(ev, s))
        return false;
      if (out != nullptr) list.emplace_back(s);
    }
    if (out != nullptr) *out = std::move(list);
    return true;
  }
  case od::json_type::object:
    return false;
  }
  return false;
}

/// One fact's object; put into `facts` when `keep`. False: not in the fast subset.
bool read_fact(std::string_view key, od::value v, bool keep, FactSet& facts) {
  od::object e;
  if (fails(v.get_object().get(e))) return false;
  Fact f;
  unsigned seen = 0; // a bit per field: no field twice (nlohmann would keep the last)
  for (auto field_r : e) {
    od::field field;
    std::string_view name;
    if (fails(std::move(field_r).get(field)) || fails(field.unescaped_key().get(name)))
      return false;
    unsigned bit = 0;
    std::string* text = nullptr;
    if (name == "status")
      bit = 1;
    else if (name == "value")
      bit = 2;
    else if (name == "source")
      bit = 4, text = &f.source;
    else if (name == "reason")
      bit = 8, text = &f.reason;
    else if (name == "probe")
      bit = 16, text = &f.probe;
    else
      return false;
    if ((seen & bit) != 0) return false;
    seen |= bit;
    if (bit == 1) {
      std::string_view s;
      if (!read_string(field.value(), s)) return false;
      const auto st = parse_status(s);
      if (!st) return false;
      f.status = *st;
    } else if (bit == 2) {
      if (!read_value(field.value(), keep ? &f.value : nullptr)) return false;
    } else {
      std::string_view s;
      if (!read_string(field.value(), s)) return false;
      if (keep) text->assign(s);
    }
  }
  if ((seen & 1) == 0) return false;
  if (keep) {
    f.key = std::string(key);
    facts.put(std::move(f));
  }
  return true;
}

/// A hash of strings that finds by std::string_view.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

/// plan.reads_key(key), remembered for this thread: a fleet's files share their keys, so after the
/// first node each of its 2,000 keys costs one hash lookup. At most 65,536 keys are remembered
/// (a hostile file's random keys do not grow the memory).
bool keeps(const RederivePlan& plan, std::string_view key) {
  thread_local const RederivePlan* memo_plan = nullptr;
  thread_local std::unordered_map<std::string, bool, StringHash, std::equal_to<>> memo;
  if (memo_plan != &plan) {
    memo.clear();
    memo_plan = &plan;
  }
  if (const auto it = memo.find(key); it != memo.end()) return it->second;
  const bool keep = plan.reads_key(key);
  if (memo.size() < 65536) memo.emplace(key, keep);
  return keep;
}

/// The subset reader on `padded` (the text, followed by at least SIMDJSON_PADDING bytes).
std::optional<FactSet> read_subset(simdjson::padded_string_view padded, const RederivePlan& plan) {
  // One parser per thread, reused: its buffers grow to the largest file read and stay.
  thread_local od::parser parser;
  od::document doc;
  if (fails(parser.iterate(padded).get(doc))) return std::nullopt;
  od::object top;
  if (fails(doc.get_object().get(top))) return std::nullopt;
  FactSet out;
  unsigned seen = 0;
  for (auto field_r : top) {
    od::field field;
    std::string_view name;
    if (fails(std::move(field_r).get(field)) || fails(field.unescaped_key().get(name)))
      return std::nullopt;
    if (name == "schema_version") {
      std::int64_t v = 0;
      if ((seen & 1) != 0 || fails(field.value().get_int64().get(v)) || v != 1) return std::nullopt;
      seen |= 1;
    } else if (name == "tool") {
      od::object tool;
      if ((seen & 2) != 0 || fails(field.value().get_object().get(tool))) return std::nullopt;
      seen |= 2;
      for (auto t : tool) {
        od::field tf;
        std::string_view k;
        std::string_view s;
        if (fails(std::move(t).get(tf)) || fails(tf.unescaped_key().get(k)) ||
            !read_string(tf.value(), s))
          return std::nullopt;
      }
    } else if (name == "facts") {
      od::object facts;
      if ((seen & 4) != 0 || fails(field.value().get_object().get(facts))) return std::nullopt;
      seen |= 4;
      for (auto fr : facts) {
        od::field ff;
        std::string_view key;
        if (fails(std::move(fr).get(ff)) || fails(ff.unescaped_key().get(key))) return std::nullopt;
        if (!read_fact(key, ff.value(), keeps(plan, key), out)) return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
  }
  // Nothing after the document (nlohmann refuses trailing content): the iterator is past the
  // last token only then (simdjson 3.0 has no document::at_end()).
  const char* rest = nullptr;
  if (doc.current_location().get(rest) != simdjson::OUT_OF_BOUNDS || (seen & 5) != 5)
    return std::nullopt;
  return out;
}

/// Reads the regular file `path` of at most kMaxInputBytes into a buffer of this thread, reused
/// from file to file (a fresh 240 KB string per node cost more in page faults than the parse),
/// with simdjson's padding after it. As read_input_file reads (O_NONBLOCK: a FIFO never blocks;
/// fstat(2) before the first read), but std::nullopt on any failure or a size that changed while
/// read: read_input_file then reads it again and names the error.
std::optional<simdjson::padded_string_view> read_padded(const std::string& path) {
  thread_local std::vector<char> buf;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<simdjson::padded_string_view> out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
      static_cast<std::uintmax_t>(st.st_size) <= kMaxInputBytes) {
    const auto size = static_cast<std::size_t>(st.st_size);
    // One byte more than the size: a file that grew since fstat(2) is noticed.
    if (buf.size() < size + 1 + simdjson::SIMDJSON_PADDING)
      buf.resize(size + 1 + simdjson::SIMDJSON_PADDING);
    std::size_t got = 0;
    while (got <= size) {
      const ssize_t n = ::read(fd, buf.data() + got, size + 1 - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (got == size) out.emplace(buf.data(), size, buf.size());
  }
  ::close(fd);
  return out;
}
#endif

} // namespace

bool fast_reader() {
#ifdef HALO_HAVE_SIMDJSON
  return true;
#else
  return false;
#endif
}

std::optional<FactSet> read_facts_subset(std::string_view text, const RederivePlan& plan) {
#ifdef HALO_HAVE_SIMDJSON
  const simdjson::padded_string padded(text);
  return read_subset(padded, plan);
#else
  (void)text;
  (void)plan;
  return std::nullopt;
#endif
}

Reader::Reader(const ProbeRegistry& registry, std::vector<FleetQuantity> quantities)
    : registry_(registry), quantities_(std::move(quantities)) {
  std::vector<std::string> wanted{std::string(keys::gpu_count), std::string(keys::host_name)};
  for (const auto& q : quantities_)
    wanted.push_back(q.pattern);
  plan_ = std::make_unique<RederivePlan>(plan_rederive(registry_, wanted));
}

Reader::~Reader() = default;

NodeValues Reader::read(const std::string& path) const {
  const DoctorOptions c = replay_options(path);
  const std::string file = std::filesystem::path(path).filename().string();
  NodeValues out;
  FactSet facts;
  try {
    std::optional<FactSet> subset;
#ifdef HALO_HAVE_SIMDJSON
    if (!c.facts_file.empty()) {
      if (const auto text = read_padded(path)) subset = read_subset(*text, *plan_);
      if (subset) rederive(registry_, c.probe, *subset, *plan_);
    }
#endif
    // Outside the fast reader's subset (a bundle, a malformed file): the full replay, whose
    // InputError names what is wrong.
    facts = subset ? std::move(*subset) : gather_facts(c, registry_);
  } catch (const InputError& e) {
    // One node's bad file is that node's error; the others are still compared (issue 44).
    out.name = file;
    out.reason = e.what();
    return out;
  }
  // A count beyond what hardware has (checks/gpus/gpus.hpp) leaves gpu.count an error: the node is
  // named unreadable with that reason rather than compared on a made-up GPU list.
  if (const Fact* n = facts.find(keys::gpu_count); n != nullptr && n->status == Status::error) {
    out.name = file;
    out.reason = fmt::format("{}: {}", path, n->reason);
    return out;
  }
  out.readable = true;
  out.name = facts.get<std::string>(keys::host_name).value_or("");
  if (out.name.empty()) out.name = file;
  out.values = values_of(facts, quantities_);
  return out;
}

Comparison compare_files(const std::vector<std::string>& inputs, const Reader& reader,
                         unsigned threads) {
  Accumulator acc(reader.quantities());
  auto add = [&](std::size_t i, NodeValues n) {
    if (n.readable)
      acc.add_values(std::move(n.name), inputs[i], std::move(n.values));
    else
      acc.add_unreadable(std::move(n.name), inputs[i], std::move(n.reason));
  };
  threads = std::max(1U, std::min<unsigned>(threads, static_cast<unsigned>(inputs.size())));
  if (threads == 1) {
    for (std::size_t i = 0; i < inputs.size(); ++i)
      add(i, reader.read(inputs[i]));
    return acc.finish();
  }
  // Workers take the next input; the caller adds the results in input order. A worker waits
  // while it is `window` inputs ahead of the one added next, so at most `window` results (a few
  // dozen strings each) wait at once, whatever the fleet's size.
  const std::size_t window = std::size_t{4} * threads;
  struct Slot {
    bool done = false;
    NodeValues node;
    std::exception_ptr error;
  };
  std::vector<Slot> slots(window);
  std::mutex m;
  std::condition_variable cv;
  std::size_t next = 0;  // the next input a worker takes
  std::size_t added = 0; // the next input the caller adds
  bool stop = false;
  auto work = [&] {
    std::unique_lock lock(m);
    while (true) {
      cv.wait(lock, [&] { return stop || next >= inputs.size() || next < added + window; });
      if (stop || next >= inputs.size()) return;
      const std::size_t i = next++;
      lock.unlock();
      Slot s;
      try {
        s.node = reader.read(inputs[i]);
      } catch (...) {
        s.error = std::current_exception();
      }
      s.done = true;
      lock.lock();
      slots[i % window] = std::move(s);
      cv.notify_all();
    }
  };
  std::vector<std::jthread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back(work);
  std::exception_ptr error;
  {
    std::unique_lock lock(m);
    while (added < inputs.size()) {
      cv.wait(lock, [&] { return slots[added % window].done; });
      Slot s = std::move(slots[added % window]);
      slots[added % window] = Slot{};
      if (s.error) {
        error = s.error;
        stop = true;
        cv.notify_all();
        break;
      }
      lock.unlock();
      add(added, std::move(s.node));
      lock.lock();
      ++added;
      cv.notify_all();
    }
  }
  pool.clear(); // joins
  if (error) std::rethrow_exception(error);
  return acc.finish();
}

} // namespace halo::fleet
