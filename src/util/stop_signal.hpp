// SIGINT / SIGTERM handling: the handler only sets a lock-free flag (async-
// signal-safe). Workers poll it once per batch; the main thread then writes
// the final report and JSON as on a normal end.
#pragma once

#include <atomic>

namespace rateline {

std::atomic<bool>& stop_flag();
// Which signal stopped us (0 = none yet).
int stop_signal_number();
void install_stop_signals();

}  // namespace rateline
