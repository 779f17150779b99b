// SPDX-License-Identifier: Apache-2.0
// Runs that share a directory with placeholders in it (two agents in one project,
// a Slurm array, a CI matrix, an embedder's threads). A placeholder one run made is
// an existing name to the next run's plan, bound read-only as it stands; were the
// first run to remove it while the second still sets up or runs, the second would
// fail its launch (the bind source gone) or lose the protection (the name free to
// create on the host, the guard re-applying). So, per directory and per user:
//
//   - a setup lock, held from before a run makes its placeholders until its
//     sandbox's root is built, and again while a run ends: setups and ends take
//     turns, never interleave;
//   - a users mark, a shared lock each live run holds from its setup to its end:
//     the run that ends last (no mark but its own) removes the placeholders, its own
//     and those the runs before it left (their journals, marked ended, say which);
//     any other leaves them and hands its journal over.
//
// Both are flock(2) locks on files under <state home>/agentjail/roots/, named
// after the directory's device and inode: a killed run's locks go with it, and the
// sandbox sees none of them. Without a state directory, or on one whose filesystem
// has no locks (NFS without a lock manager), the run goes on unshared, as before (a
// concurrent run's end may then take its placeholders).
#pragma once

#include "base/error.hpp"
#include "sys/fd.hpp"

#include <string>
#include <vector>

namespace agentjail::guard {

class RootUsers {
public:
    // Takes the setup lock of each directory (in one order, so runs never deadlock),
    // waiting up to timeout_s for a run that holds one, then marks this run as a
    // user of each. An error names the directory whose lock stayed taken.
    static Result<RootUsers> enter(std::vector<std::string> roots, double timeout_s);

    RootUsers() = default;
    RootUsers(RootUsers&&) noexcept = default;
    RootUsers& operator=(RootUsers&&) noexcept = default;
    RootUsers(const RootUsers&) = delete;
    RootUsers& operator=(const RootUsers&) = delete;

    // The sandbox's root is built: other runs may set up or end.
    void setup_done() noexcept;
    // At the run's end: takes the setup locks again (up to enter()'s timeout each) and drops
    // this run's mark. True when no other run is left in any of the directories: the
    // caller removes the placeholders. False: they stay for the runs still there.
    // The setup locks stay held until done() (or destruction).
    bool leave() noexcept;
    void done() noexcept;

    bool empty() const { return roots_.empty(); }
    // Whether this holds dir's setup lock and is its only user (after leave() said so).
    bool holds_alone(const std::string& dir) const;

private:
    struct Root {
        std::string dir;
        std::string key;  // "<dev>-<ino>"
        sys::UniqueFd lock, users;
        bool locked = false, alone = false;
    };
    std::vector<Root> roots_;
    double timeout_s_ = 60;
};

// For a sweep: takes dir's setup lock and checks that no run is its user, without
// waiting. Holds both until destroyed; ok() false when another run is there (or
// there is no state directory to coordinate in, when ok() is true and nothing held).
class IdleRoot {
public:
    explicit IdleRoot(const std::string& dir);
    bool ok() const { return ok_; }

private:
    sys::UniqueFd lock_, users_;
    bool ok_ = false;
};

}  // namespace agentjail::guard
