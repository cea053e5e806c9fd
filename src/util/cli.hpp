// Command-line conventions shared by every program: bad input (an empty
// value too) prints one line "<prog>: <what is wrong>" and exits 2; --help exits 0.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace rateline::cli {

// Thrown by option conversion (units, ranges): becomes the one-line error.
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

inline constexpr int kUsageExit = 2;

// Parses argv; returns -1 to go on, or the exit code to return now.
// An empty value (--json "", --dst=) is refused: the tools read an empty
// string as "not given", so it would silently mean the default.
inline int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    for (const CLI::Option* o : app.get_options()) {
      if (o->get_expected_min() == 0) continue;  // flags, and options whose value is optional (rx --count)
      for (const std::string& v : o->results())
        if (v.empty()) {
          std::fprintf(stderr, "%s: %s: empty value (give one, or leave the option out)\n", app.get_name().c_str(),
                       o->get_name().c_str());
          return kUsageExit;
        }
    }
    return -1;
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::puts(e.what());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", app.get_name().c_str(), e.what());
    return kUsageExit;
  }
}

// Wraps a conversion: rethrows any std::invalid_argument as "--opt: message".
template <class F>
auto convert(const char* option, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string(option) + ": " + e.what());
  }
}

// A file an option names that cannot be used (a key file that is missing or
// readable by others) is bad usage like any bad value: the reader's one-line
// std::runtime_error becomes the UsageError, so the tool exits 2.
template <class F>
auto file_option(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
}

// --device a,b: the devices of a port set (one whole run each), in order.
// One name (or none) is no set: an empty list. Throws UsageError for an
// empty or repeated name.
inline std::vector<std::string> port_devices(const std::string& device) {
  if (device.find(',') == std::string::npos) return {};
  std::vector<std::string> names;
  for (size_t pos = 0;;) {
    const size_t comma = device.find(',', pos);
    const std::string name = device.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (name.empty()) throw UsageError("--device " + device + ": an empty name in the list (a,b: one device per port)");
    for (const std::string& n : names)
      if (n == name) throw UsageError("--device " + device + ": " + name + " twice (each port once)");
    names.push_back(name);
    if (comma == std::string::npos) return names;
    pos = comma + 1;
  }
}

template <class T>
T in_range(const char* option, T v, T lo, T hi) {
  if (v < lo || v > hi)
    throw UsageError(std::string(option) + ": " + std::to_string(v) + " is out of range (" + std::to_string(lo) +
                     ".." + std::to_string(hi) + ")");
  return v;
}

}  // namespace rateline::cli
