// Runs a helper program (mkfs.*, dd) and collects its output. The child
// gets PR_SET_PDEATHSIG (it dies with us), stdin from /dev/null, LC_ALL=C
// (parsable numbers) and, when cpu >= 0, our submitter's CPU.
#pragma once

#include <string>
#include <vector>

namespace rateline::blocktest {

struct SpawnResult {
  bool started = false;
  int exit_code = -1;     // -1 = killed by a signal
  int signal = 0;
  std::string output;     // stdout + stderr
  bool ok() const { return started && exit_code == 0; }
};

SpawnResult spawn_and_wait(const std::vector<std::string>& argv, int cpu = -1);

// Full path of an executable found in PATH, /usr/sbin or /sbin; "" if none.
std::string find_program(const std::string& name);

}  // namespace rateline::blocktest
