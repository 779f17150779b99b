// SPDX-License-Identifier: Apache-2.0
// clone(2) flags newer than some system headers, with the kernel's ABI values: one
// place for the launcher's clone3 (sys/syscalls.hpp) and the seccomp policies'
// names for them (seccomp/constants.cc). Macros only: nothing here calls anything.
// Included after the system's own <sched.h> or <linux/sched.h>, whose definitions win.
#pragma once

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_CLEAR_SIGHAND
#define CLONE_CLEAR_SIGHAND 0x100000000ULL
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
