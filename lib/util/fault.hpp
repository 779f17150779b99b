// SPDX-License-Identifier: Apache-2.0
// Fault injection for tests (issue 13): a test arms one named point of the launch or
// the run, in its own process, before calling the library; that point then kills
// the process, hangs it, or reports a failure to its caller. Nothing arms a point
// in a normal run: no environment variable, no flag and no policy reaches arm(), so
// the points cost one compare of a null pointer. Safe between clone and execve:
// no allocation, no lock, no exception (the post-clone object library holds it).
#pragma once

namespace agentjail::fault {

enum class Action : int {
    none = 0,
    kill,   // SIGKILL to this process (an init of a pid namespace exits 137 instead)
    hang,   // write "<point> <pid>\n" to the armed fd, then wait for a signal forever
    fail,   // the point returns true: its caller fails as if the step had failed
    hold,   // like hang, then wait for one byte (or EOF) on release_fd and go on: the
            // test kills another process of the launch meanwhile
    crash,  // a trap (SIGILL), as a bug would: a fault the kernel delivers even to the
            // init of a pid namespace, which ignores a signal sent by kill
};

// Arms `point` (a string literal: kept by pointer) for this process and every
// process it clones from now on. report_fd: where hang writes (may be -1).
void arm(const char* point, Action action, int report_fd = -1, int release_fd = -1) noexcept;
void disarm() noexcept;

// At a named point: does what was armed for it. True only for Action::fail.
bool hit(const char* point) noexcept;

// The point names, for tests that walk every stage: the launch's (the launcher's,
// then the child's, then the end of the spawn) ...
// (Three more points of the command, only where Landlock applies, are armed by their
// own test: command.landlock fails the ruleset, command.landlock-restrict skips the
// restriction as a layer silently off would, command.landlock-probe has the probe
// refused with EPERM before Landlock answers.)
extern const char* const launch_points[];
extern const int n_launch_points;
// ... and the run's, in the launcher's threads: the proxy after it accepted a
// connection and as a tunnel starts relaying, the stdio relay before it copies the
// command's output, the guard watch before a re-apply (fail: the re-apply fails) and
// its helper (a process of its own) with the sandbox frozen, the end of wait()
// before the placeholders go, the cgroup's statistics before the cgroup goes.
extern const char* const run_points[];
extern const int n_run_points;

}  // namespace agentjail::fault
