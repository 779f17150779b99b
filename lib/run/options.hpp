// SPDX-License-Identifier: Apache-2.0
// How a caller wants a run (its stdio, terminal, descriptors, identity, cgroup
// placement, result file) and the job-control news it gets back; the C++ API's
// Sandbox::spawn and the run (lib/run/run.hpp) take them.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace agentjail {
namespace plan {
struct Plan;  // what a run carries out (lib/plan/plan.hpp)
}

struct SpawnOptions {
    int stdin_fd = -1;
    int stdout_fd = -1;
    int stderr_fd = -1;
    enum class Terminal {
        automatic,  // a pty when any of the three is a terminal, pipes otherwise
        pipes,      // pipes only: the command sees no terminal
    };
    Terminal terminal = Terminal::automatic;
    // Pass every escape sequence to the terminal. By default the relay drops those
    // that act on the user's machine (OSC 52 clipboard, file:// links, title and
    // colour reports, DCS/APC passthrough).
    bool tty_raw = false;
    // Filter what the command writes to pipes too (stdout and stderr when they are
    // not a terminal), for a caller whose pipe ends on a terminal (`| tee log`). Off
    // by default: a pipe carries data, which the filter would change (a raw 0x9b).
    bool filter_pipes = false;
    // Called during spawn(), before the sandbox starts and before the terminal is
    // touched, with each thing the caller's user must be told although the run goes
    // on (a secret's token that has expired, with what to do); one line each.
    std::function<void(const std::string&)> on_warning;
    // Called during spawn(), once the plan is built and before anything of it is
    // carried out, with the plan as `agentjail explain` prints it and its notes: the
    // plan this run carries out, not a second one built to be shown (the CLI's -v).
    std::function<void(const std::string& plan_text, const std::vector<std::string>& notes)> on_plan;
    // The project's own callers (the CLI): a check of the plan the run builds, before
    // anything is made; an error ends the spawn with it.
    std::function<Result<void>(const plan::Plan&)> check_plan;

    // The identity the command runs as (both or neither). Only root may name one
    // other than its own; the command then owns its files as that uid/gid, with no
    // supplementary group, and ~ and HOME are that user's (passwd) unless home says.
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
    // A root caller without uid/gid is refused unless the policy says
    // [process] allow_root (the C API sets this; the CLI, run by a person, does not).
    bool root_needs_identity = false;
    // The caller's side of the run, which the CLI takes from its own process: the
    // environment the policy's [environment] allow passes names from (NAME=VALUE;
    // nullopt: this process's), the home directory (~, HOME; empty: HOME or passwd),
    // the caller's directory (the workspace when the policy names none, and what
    // relative paths start from; empty: this process's).
    std::optional<std::vector<std::string>> environ;
    std::string home;
    std::string cwd;
    // Descriptors of the caller passed to the command at the same numbers (>= 3).
    std::vector<int> pass_fds;
    CgroupPlacement cgroup = CgroupPlacement::automatic;
    std::string cgroup_parent;  // under: a cgroup path as /proc/self/cgroup shows it
    // Where wait() writes the result record (as `agentjail --result-file`); empty: none.
    std::string result_file;
};

// The command stopped (job control) or went on.
struct JobChange {
    bool stopped = false;  // false: it continued
    int sig = 0;           // the signal that stopped it
    // The user typed the suspend character (^Z) just before: the stop is theirs to
    // act on. A stop the sandbox caused itself never sets this.
    bool by_user = false;
};

}  // namespace agentjail
