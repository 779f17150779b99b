// SPDX-License-Identifier: Apache-2.0
#include "util/fault.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agentjail::fault {

namespace {
const char* armed_point = nullptr;
Action armed_action = Action::none;
int armed_fd = -1;
int armed_release = -1;

void write_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w <= 0) return;
        p += w;
        n -= static_cast<size_t>(w);
    }
}
}  // namespace

// In the order a run passes them: the launcher's, then the child's (setup, the init
// before it forks, the command before execve), then the run's.
const char* const launch_points[] = {
    "launch.before-shared",    "launch.shared-entered", "launch.placeholder-made", "launch.before-clone", "launch.after-clone",  "launch.after-release",
    "child.before-root",       "child.before-fork",   "command.before-exec", "run.after-spawn",
};
const int n_launch_points = static_cast<int>(sizeof launch_points / sizeof launch_points[0]);

// The launcher's threads while the command runs, then its end of the run.
const char* const run_points[] = {
    "proxy.after-accept", "proxy.tunnel",       "relay.copy",   "guard.reapply",
    "guard.frozen",       "run.before-cleanup", "cgroup.stats",
};
const int n_run_points = static_cast<int>(sizeof run_points / sizeof run_points[0]);

void arm(const char* point, Action action, int report_fd, int release_fd) noexcept {
    armed_point = point;
    armed_action = action;
    armed_fd = report_fd;
    armed_release = release_fd;
}

void disarm() noexcept {
    armed_point = nullptr;
    armed_action = Action::none;
    armed_fd = -1;
    armed_release = -1;
}

bool hit(const char* point) noexcept {
    if (armed_point == nullptr || std::strcmp(armed_point, point) != 0) return false;
    switch (armed_action) {
        case Action::none: return false;
        case Action::fail: return true;
        case Action::kill:
            ::syscall(SYS_kill, ::syscall(SYS_getpid), SIGKILL);
            ::_exit(137);  // pid 1 of a namespace ignores its own SIGKILL
        case Action::crash:
            __builtin_trap();
        case Action::hang:
        case Action::hold: {
            if (armed_fd >= 0) {
                char line[160];
                size_t n = std::strlen(point);
                if (n > 100) n = 100;
                std::memcpy(line, point, n);
                line[n++] = ' ';
                // The pid as seen from the caller's namespace is the test's to find;
                // this one is the process's own (1 for an init).
                long pid = ::syscall(SYS_getpid);
                char digits[24];
                int d = 0;
                do {
                    digits[d++] = static_cast<char>('0' + pid % 10);
                    pid /= 10;
                } while (pid > 0 && d < 20);
                while (d > 0) line[n++] = digits[--d];
                line[n++] = '\n';
                write_all(armed_fd, line, n);
            }
            if (armed_action == Action::hold) {
                char byte;
                while (::read(armed_release, &byte, 1) < 0 && errno == EINTR) {
                }
                return false;
            }
            for (;;) ::pause();
        }
    }
    return false;
}

}  // namespace agentjail::fault
