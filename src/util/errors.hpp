// Setup-time errors. The hot path never throws; setup code throws one of
// these with a message a user can act on ("Couldn't <verb> <object>: <cause>. <fix>").
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace rateline {

// A fatal setup problem: bad address, port in use, missing interface...
struct SetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The backend cannot run here (kernel feature missing, no permission): the
// caller may fall back to another backend and must say why.
struct BackendUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::string errno_text(int err) { return std::strerror(err); }

}  // namespace rateline
