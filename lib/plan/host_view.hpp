// SPDX-License-Identifier: Apache-2.0
// The host as the planner sees it: the host's own answers, and what the run's host
// actions (plan.hpp, HostAction) will have made by the time the sandbox is built.
// The planner makes and writes nothing: lib/run carries the actions out before the
// launch and `explain` only shows them, so both see one plan.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <vector>

namespace agentjail::plan {

class HostView {
public:
    // `path` (absolute, normalised) will be an empty directory (0700) or an empty
    // file (0600) of the caller's: a host action makes it, replacing what is in the
    // way. Its parent is on the host or was named here before.
    void will_make(const std::string& path, bool is_dir);
    // Whether a host action makes `path` (as named or canonical).
    bool makes(const std::string& path) const;

    // lstat(2)/stat(2): a name an action makes answers as what it will be (never a
    // link); 0, or -1 with errno set.
    int lstat(const std::string& path, struct stat& st) const;
    int stat(const std::string& path, struct stat& st) const;
    // realpath(3), with the names an action makes resolved as they will be (no link
    // below them); nullopt with errno set when the path cannot be resolved.
    std::optional<std::string> canonical(const std::string& path) const;

private:
    struct Made {
        std::string path;       // as named
        std::string canonical;  // where it will be
        bool is_dir = false;
    };
    const Made* find(const std::string& path) const;
    // The nearest name an action makes at or above path (as named or canonical).
    const Made* above(const std::string& path, std::string& rest) const;
    std::vector<Made> made_;
};

}  // namespace agentjail::plan
