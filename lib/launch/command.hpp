// SPDX-License-Identifier: Apache-2.0
// The command's last steps before execve: signals, stdio, privileges, descriptors.
#pragma once

#include "launch/child.hpp"

#include <sys/types.h>

namespace agentjail::launch {

void report(int fd, fs::Stage stage, int err, int index);

// Runs in the init's child; execs the command or reports why not. Never returns.
[[noreturn]] void run_command(const ChildSpec& s, mode_t caller_umask);

}  // namespace agentjail::launch
