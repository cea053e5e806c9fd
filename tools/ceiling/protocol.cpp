#include "protocol.hpp"
#include "backend.hpp"
#include "wire/test_payload.hpp"

#include <algorithm>
#include <charconv>

namespace rateline::ceiling::proto {

namespace {

bool is_verb(std::string_view s) {
  return !s.empty() && s.size() <= 16 && std::all_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}
bool is_key(std::string_view s) {
  return !s.empty() && s.size() <= 16 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
}
bool is_value(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                  c == ':' || c == '+' || c == '-';
         });
}

bool to_u64(const std::string& s, uint64_t& v) {
  if (s.empty() || s.size() > 19 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

const std::string* Message::get(std::string_view key) const {
  for (const auto& [k, v] : fields)
    if (k == key) return &v;
  return nullptr;
}

std::optional<Message> parse(std::string_view line, std::string* error) {
  auto fail = [&](std::string e) -> std::optional<Message> {
    if (error) *error = std::move(e);
    return std::nullopt;
  };
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  for (const unsigned char c : line)
    if (c < 0x20 || c > 0x7e) return fail("non-printable byte in line");
  Message m;
  size_t pos = line.find(' ');
  const std::string_view verb = line.substr(0, pos);
  if (!is_verb(verb)) return fail("expected an upper-case verb, got '" + std::string(verb.substr(0, 20)) + "'");
  m.verb = verb;
  while (pos != std::string_view::npos) {
    const size_t start = pos + 1;
    pos = line.find(' ', start);
    const std::string_view tok = line.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start);
    const size_t eq = tok.find('=');
    if (eq == std::string_view::npos || !is_key(tok.substr(0, eq))) {
      m.text = line.substr(start);  // free text from here on
      break;
    }
    const std::string key(tok.substr(0, eq)), value(tok.substr(eq + 1));
    if (!is_value(value)) return fail("bad value for " + key);
    if (m.get(key)) return fail("duplicate key " + key);
    if (m.fields.size() >= kMaxFields) return fail("too many fields");
    m.fields.emplace_back(key, value);
  }
  return m;
}

std::optional<TrialRequest> trial_from(const Message& m, std::string* code, std::string* error) {
  auto fail = [&](const char* c, std::string e) -> std::optional<TrialRequest> {
    if (code) *code = c;
    if (error) *error = std::move(e);
    return std::nullopt;
  };
  if (!m.text.empty()) return fail("malformed", "TRIAL takes key=value fields only");
  static const char* const known[] = {"id", "size", "port", "idle_ms", "max_ms", "backend", "rcvbuf", "slow_us", "threads"};
  for (const auto& [k, v] : m.fields)
    if (std::find_if(std::begin(known), std::end(known), [&](const char* n) { return k == n; }) == std::end(known))
      return fail("bad-value", "unknown field " + k);
  TrialRequest t;
  auto num = [&](const char* key, bool required, uint64_t lo, uint64_t hi, uint64_t& out) -> bool {
    const std::string* v = m.get(key);
    if (!v) {
      if (required) fail("malformed", std::string("missing ") + key);
      return !required;
    }
    uint64_t x = 0;
    if (!to_u64(*v, x) || x < lo || x > hi) {
      fail("bad-value", std::string(key) + "=" + *v + " out of range " + std::to_string(lo) + ".." + std::to_string(hi));
      return false;
    }
    out = x;
    return true;
  };
  uint64_t id = 0, size = t.size, port = t.port, idle = t.idle_ms, max_ms = t.max_ms, slow = 0, threads = 1;
  uint64_t rcvbuf = UINT64_MAX;
  if (!num("id", true, 1, (1ull << 62), id) || !num("size", true, wire::kMinPayloadBytes, 9000, size) ||
      !num("port", true, 1024, 65535, port) || !num("idle_ms", false, 50, 60000, idle) ||
      !num("max_ms", false, 100, 3'600'000, max_ms) || !num("slow_us", false, 0, 1'000'000, slow) ||
      !num("threads", false, 1, 64, threads) || !num("rcvbuf", false, 0, 1ull << 30, rcvbuf))
    return std::nullopt;
  if (const std::string* b = m.get("backend")) {
    const std::vector<std::string> names = drivers::path_backend_choices();
    if (std::find(names.begin(), names.end(), *b) == names.end()) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      return fail("bad-value", "backend=" + *b + " is not one of " + list);
    }
    t.backend = *b;
  }
  t.id = id;
  t.size = static_cast<uint32_t>(size);
  t.port = static_cast<uint16_t>(port);
  t.idle_ms = static_cast<uint32_t>(idle);
  t.max_ms = static_cast<uint32_t>(max_ms);
  t.slow_us = static_cast<uint32_t>(slow);
  t.threads = static_cast<uint32_t>(threads);
  t.rcvbuf = rcvbuf == UINT64_MAX ? -1 : static_cast<int64_t>(rcvbuf);
  return t;
}

std::string to_line(const TrialRequest& t) {
  std::string s = "TRIAL id=" + std::to_string(t.id) + " size=" + std::to_string(t.size) + " port=" +
                  std::to_string(t.port) + " idle_ms=" + std::to_string(t.idle_ms) + " max_ms=" + std::to_string(t.max_ms) +
                  " backend=" + t.backend;
  if (t.rcvbuf >= 0) s += " rcvbuf=" + std::to_string(t.rcvbuf);
  if (t.slow_us) s += " slow_us=" + std::to_string(t.slow_us);
  if (t.threads != 1) s += " threads=" + std::to_string(t.threads);
  return s + "\n";
}

void LineSplitter::feed(std::string_view bytes) {
  if (ready_pos_ == ready_.size()) {
    ready_.clear();
    ready_pos_ = 0;
  }
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const std::string_view chunk = bytes.substr(0, nl);
    if (skipping_) {
      if (nl == std::string_view::npos) return;
      skipping_ = false;
    } else if (buf_.size() + chunk.size() + 1 > max_) {
      // Too long (the newline counts): say so once, drop the rest of the line.
      ready_.push_back({std::string(), true});
      buf_.clear();
      if (nl == std::string_view::npos) {
        skipping_ = true;
        return;
      }
    } else {
      buf_.append(chunk);
      if (nl == std::string_view::npos) return;
      ready_.push_back({std::move(buf_), false});
      buf_.clear();
    }
    bytes.remove_prefix(nl + 1);
  }
}

std::optional<LineSplitter::Item> LineSplitter::next() {
  if (ready_pos_ >= ready_.size()) return std::nullopt;
  return std::move(ready_[ready_pos_++]);
}

}  // namespace rateline::ceiling::proto
