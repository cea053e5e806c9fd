// libFuzzer target: the command-line unit parsers (util/units.hpp). Every
// parser gets the same text. std::invalid_argument is the documented way to
// reject input; any other exception, a crash or a sanitizer report is a bug.
// Accepted values are checked against the bounds each parser promises, and
// fed back through the report formatters.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "util/units.hpp"

using namespace rateline;

// A broken invariant aborts: libFuzzer saves the input and the stage fails.
#define REQUIRE(cond)                                                                    \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace {

template <class F>
void accepts_or_rejects(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument&) {
    // rejected with a message: fine
  }
  // anything else propagates: libFuzzer reports an uncaught exception as a crash
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (uint64_t unit : {uint64_t{1}, uint64_t{1'000'000}, uint64_t{1'000'000'000}}) {
    accepts_or_rejects([&] {
      const uint64_t ns = units::parse_duration_ns(text, unit);
      REQUIRE(ns < 1'000'000'000'000'000'000ull);  // "too long" above 1e18 ns
      (void)units::duration_text(ns);
    });
  }
  // A plain decimal must come back as its own value (to within double rounding).
  bool digits = size > 0 && size <= 20;
  for (char ch : text) digits &= ch >= '0' && ch <= '9';
  const double plain = digits ? std::strtod(std::string(text).c_str(), nullptr) : 0.0;
  auto same_value = [&](uint64_t got) {
    if (!digits) return true;
    const double g = static_cast<double>(got);
    return plain < 9007199254740992.0 ? g == plain : std::fabs(g - plain) <= plain * 1e-15;
  };
  accepts_or_rejects([&] {
    const uint64_t n = units::parse_count(text);
    REQUIRE(same_value(n));
    (void)units::si(static_cast<double>(n));
  });
  accepts_or_rejects([&] { REQUIRE(same_value(units::parse_bytes(text))); });
  accepts_or_rejects([&] {
    const units::Rate r = units::parse_rate(text);
    REQUIRE(r.value > 0 && r.value <= 1e13 && std::isfinite(r.value));
    (void)units::si(r.value, 2);
  });
  accepts_or_rejects([&] {
    const units::PortRange r = units::parse_port_range(text);
    REQUIRE(r.first >= 1 && r.first <= r.last);
    REQUIRE(r.count() >= 1 && r.count() <= 65535);
  });
  return 0;
}
