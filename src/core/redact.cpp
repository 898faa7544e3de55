// SPDX-License-Identifier: MIT
// TextRedactor (include/halo/redact.hpp): a report redacted as a capture bundle is.
#include "redact_rules.hpp"

#include <halo/bundle.hpp>
#include <halo/redact.hpp>

#include <fmt/format.h>

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace halo {
namespace {

/// A user or host name as the shadow utils accept one (useradd(8): letters, digits, `_`, `-`,
/// `.`), at most 64 bytes; anything else is not learnt.
bool plausible_name(std::string_view n) {
  if (n.empty() || n.size() > 64 || n == "." || n == "..") return false;
  return std::ranges::all_of(n, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
  });
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.' ||
         c == '/';
}

/// `text` with every occurrence of `from` that stands as a word (no name or path character on
/// either side; a `/home/` before it is a home directory and counts as a word start) replaced.
std::string replace_word(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t at = text.find(from, i);
    if (at == std::string_view::npos) break;
    const std::size_t end = at + from.size();
    const bool home = at >= 6 && text.substr(at - 6, 6) == "/home/";
    const bool start_ok = at == 0 || home || !word_char(text[at - 1]);
    // A trailing '.' ends a sentence: "user dev." is the name dev.
    const bool end_ok = end == text.size() || !word_char(text[end]) || (text[end] == '/' && home) ||
                        (text[end] == '.' && (end + 1 == text.size() || !word_char(text[end + 1])));
    out.append(text.substr(i, at - i));
    out.append(start_ok && end_ok ? to : from);
    i = end;
  }
  out.append(text.substr(i));
  return out;
}

} // namespace

TextRedactor::TextRedactor(const FactSet& facts) {
  if (auto h = facts.get<std::string>(keys::host_name); h && plausible_name(*h)) hostname_ = *h;
  for (const auto key : {keys::user_name, keys::env_sudo_user})
    if (auto u = facts.get<std::string>(key)) learn_user(*u);
  static const RE2 kHome(R"(/(?:var/)?home/([A-Za-z0-9_.-]{1,64}))");
  for (const auto& [key, fact] : facts.all()) {
    auto learn_in = [&](const std::string& s) {
      re2::StringPiece in(s);
      std::string name;
      while (RE2::FindAndConsume(&in, kHome, &name))
        learn_user(name);
    };
    const bool id_key = redact_rules::identifier_key(key);
    if (const auto* v = std::get_if<std::string>(&fact.value)) {
      learn_in(*v);
      if (id_key && fact.ok() && v->size() >= 4 && !redact_rules::identifies_nothing(*v) &&
          !ids_.contains(*v))
        ids_.emplace(*v, redact_rules::serial(ids_.size() + 1));
    }
    if (const auto* l = std::get_if<std::vector<std::string>>(&fact.value))
      for (const auto& e : *l)
        learn_in(e);
    learn_in(fact.source);
    learn_in(fact.reason);
  }
}

void TextRedactor::learn_user(const std::string& name) {
  // root and the system accounts name no person; a bundle keeps them too (uid < 1000).
  if (!plausible_name(name) || name == "root" || users_.contains(name)) return;
  users_.emplace(name, redact_rules::user(users_.size() + 1));
}

std::string TextRedactor::user(std::string_view name) const {
  auto it = users_.find(name);
  return it == users_.end() ? std::string() : it->second;
}

std::string TextRedactor::operator()(std::string_view text) const {
  std::string out = mask_url_credentials(text);
  for (const auto& [id, pseudonym] : ids_)
    for (std::size_t at = out.find(id); at != std::string::npos;
         at = out.find(id, at + pseudonym.size()))
      out.replace(at, id.size(), pseudonym);
  if (!hostname_.empty()) out = replace_word(out, hostname_, redact_rules::kHost);
  for (const auto& [name, pseudonym] : users_)
    out = replace_word(out, name, pseudonym);
  return out;
}

} // namespace halo
