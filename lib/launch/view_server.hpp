// SPDX-License-Identifier: Apache-2.0
// The workspace's private view: the host's project served to the sandbox through
// FUSE by the supervisor, which decides every name as it is asked for, instead of
// mounts over names decided before the run (docs/workspace.md, "The view").
//
// What this structure gives direct mode, and the name-guarding one could not:
// - nothing is made in the project for the run (no placeholder for a mount point);
// - a hidden name the host creates during the run is hidden (it is judged when the
//   sandbox looks it up, not when the plan walked the tree);
// - a protected name the host replaces during the run (an editor's save, `git
//   config`) is read-only from the first lookup of the new file: no watcher, no window;
// - the start costs no walk of the project: rules are patterns, judged per lookup.
//
// The server runs outside the sandbox with the caller's rights. It reaches the host
// only through descriptors of the files the kernel named (O_PATH, every name a single
// component, never a link followed; a bounded cache of them, each opened again by name
// from its parent's and checked to be the same inode), so the sandbox cannot make it
// act outside the project.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"
#include "sys/fd.hpp"
#include "plan/view_rules.hpp"

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentjail::view {


class Server {
public:
    // Serves the FUSE connection `fuse` (a /dev/fuse descriptor mounted by the sandbox)
    // from the directory `root` (any descriptor of it), on `threads` threads of its
    // own: a lookup of the sandbox's must never wait on the run's loop, which may itself
    // be resolving a path in the sandbox (the socket gate). Stops when the mount is gone
    // or stop() is called.
    static Result<std::unique_ptr<Server>> start(sys::UniqueFd fuse, sys::UniqueFd root,
                                                 std::shared_ptr<const Rules> rules, int threads = 4);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    void stop();
    // What the view refused (a hidden name looked up, a protected one written, made,
    // moved): kind "workspace", what the path inside, bounded as the filter's are.
    // The run's record and `agentjail log` show them beside the filter's and the proxy's.
    RefusalTally refusals() const;
    // After the run, for the check that follows it: could the sandbox have written the
    // file at `rel` (relative to the workspace)? `chain`: the device and inode of the
    // file and of each folder above it up to the workspace, as the check finds them. A
    // protected name (by the rules, or below a protected folder) could not be written
    // through the view unless the run made it or a folder above it, or held the very
    // file open for writing before the host moved it there (a save through a temporary
    // name the sandbox opened), so another change of one is the host's (the user's own
    // `git config` during the run); anything else could.
    bool could_write(const std::string& rel, const std::vector<std::pair<dev_t, ino_t>>& chain) const;

    struct State;

private:
    explicit Server(std::unique_ptr<State> s);
    std::unique_ptr<State> s_;
};

}  // namespace agentjail::view
