// SPDX-License-Identifier: Apache-2.0
// The guard watcher: for the run, inotify on the host directories that hold the
// plan's hidden and protected names. The kernel detaches a mount in another mount
// namespace when its name is replaced or unlinked on the host (an editor's atomic
// save, `sed -i`, `git config`); when that happens the watcher puts the mask or the
// read-only bind back inside the sandbox, or says the run must stop.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"

#include "guard/leftovers.hpp"
#include "guard/placeholder.hpp"
#include "plan/plan.hpp"
#include "sys/fd.hpp"

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace agentjail::guard {

class Watch {
public:
    // Watches every guard of the plan; fails closed (inotify refused: the guarantee
    // could not hold). Returns null when the plan has no guards: nothing is set up.
    static Result<std::unique_ptr<Watch>> create(const plan::Plan& plan);

    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

    // The sandbox, right after clone (its init waits to be released, and is still
    // dumpable: later only a caller with CAP_SYS_PTRACE could reach its namespaces):
    // opens its user and mount namespaces for the helper to enter. freeze_fd, when not
    // -1, freezes it while a protection is re-applied (not owned; it outlives this).
    Result<void> attach(pid_t init, int freeze_fd);
    // The run's journal (guard/leftovers.hpp): a placeholder made during the run is
    // written down as soon as it is made, so a launcher killed later leaves none
    // that no journal lists.
    void journal_to(guard::Journal::Appender j) { journal_ = std::move(j); }

    // The inotify descriptor, for the supervisor's poll.
    int fd() const { return inotify_.get(); }
    // Reads what arrived and re-applies what was lost. false: a protection could not
    // be re-applied; the caller stops the run (stopped() says why).
    bool handle();
    // A last look once the sandbox is set up: a name replaced between the plan and
    // the watch is found here too.
    bool check_all(const char* why);

    // After the run. With placeholders to remove (its own, or release_namespaces from
    // the caller), the sandbox's namespaces are let go here first: a placeholder is a
    // mount point in the sandbox's mount namespace while that lives, and removing it
    // then detaches the mount and waits for an RCU grace period, once per placeholder
    // (3-9 ms each under load); the namespace's own teardown waits once. The
    // placeholders it made go to `made`, which the caller removes with its own.
    void finish(WorkspaceOutcome& out, bool release_namespaces, guard::Placeholders& made);

private:
    struct Item {
        plan::Guard guard;
        std::string root;    // the bound host directory it lies in
        std::string parent;  // host directory holding the name
        std::string name;
        std::string watched;  // the deepest existing directory on the way to parent
        int wd = -1;
        const char* dirty = nullptr;  // why it must be checked, or null
    };
    Watch() = default;
    void watch(Item& it);
    void mark(int wd, const char* name, std::uint32_t mask);
    // Checks one guard and re-applies it; false when that failed.
    bool check(Item& it, const char* why);
    // Runs the helper in the sandbox: 0 in place, 1 re-applied, 2 the name is gone
    // inside, 3 it is not the inode the host has, <0 -errno with *stage set.
    int run_helper(const Item& it, bool is_dir, bool have_ino, dev_t dev, ino_t ino, const char** stage);

    std::vector<Item> items_;
    sys::UniqueFd inotify_;
    sys::UniqueFd userns_;
    sys::UniqueFd mntns_;
    int freeze_fd_ = -1;     // the cgroup v1 freezer.state, not owned
    guard::Journal::Appender journal_;
    guard::Placeholders made_;  // placeholders made again for protected names the host removed
    std::vector<WorkspaceReapplied> reapplied_;
    std::uint64_t count_ = 0;
    std::string stopped_;
};

}  // namespace agentjail::guard
