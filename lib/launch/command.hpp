// SPDX-License-Identifier: Apache-2.0
// The command's last steps before execve: signals, stdio, privileges, descriptors.
#pragma once

#include "launch/child.hpp"

#include <sys/types.h>

namespace agentjail::launch {

void report(int fd, Stage stage, int err, int index);

// Hands a descriptor to the parent as SCM_RIGHTS behind a Report header whose
// stage (listener, proxy_fd) says what it is. Returns 0 or -errno.
int send_fd(int sock, Stage what, int fd);

// Runs in the init's child; execs the command or reports why not. Never returns.
[[noreturn]] void run_command(const ChildSpec& s, mode_t caller_umask);

}  // namespace agentjail::launch
