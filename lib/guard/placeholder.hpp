// SPDX-License-Identifier: Apache-2.0
// Placeholders: the empty files and directories the launcher creates on the host
// for guarded names that do not exist yet, so the plan's read-only bind or mask has
// a mount point and the sandbox cannot create the name; removed after the run when
// they are still the ones made and still empty. A launch's are first made under a
// name of the run's own and renamed into place once the run's journal
// (leftovers.hpp) holds what they are, so that nothing is on the host that no
// journal lists.
#pragma once

#include "plan/plan.hpp"

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace agentjail::guard {

struct Placeholder {
    std::string host;  // canonical host path
    bool is_dir = false;
    dev_t dev = 0;  // identity of what we created
    ino_t ino = 0;
    // The name it was made under first, beside host, until Placeholders::commit()
    // renamed it to host ("" when made at host).
    std::string staged;
};

// A placeholder a plan asks for, before it is made.
struct WantedPlaceholder {
    std::string root;  // guard_root(): the bound directory it lies in
    std::string host;
    bool is_dir = false;
    // Not a directory: a socket file (plan::Guard::socket), else a file. The sockets
    // Placeholders::stage makes in one pass are hard links of one inode.
    bool socket = false;
    std::string staged;  // host's directory + "/.agentjail-<tag>-<i>": no other run's name
};
// What the plan's guards need; `tag` is unique to the run (Journal::next_tag()).
// Looked at when the run starts, not when it was planned: a protected name the plan
// saw that is gone now (another run's placeholder it removed, a file deleted
// meanwhile) gets a placeholder too, so the sandbox still cannot create it.
Result<std::vector<WantedPlaceholder>> wanted_placeholders(const plan::Plan& plan,
                                                           const std::string& tag);

// Creates host (a directory of mode 0755, a socket file of mode 0444 with no listener,
// or an empty file of mode 0444: plan::Guard::socket), which must lie
// beneath root, without following any link on the way (openat2 RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS from an fd of root) and only if nothing is there (O_EXCL /
// mkdirat). The parent directory must exist: a placeholder never creates more than
// its own name.
Result<Placeholder> create_placeholder(const std::string& root, const std::string& host, bool is_dir,
                                       bool socket);

// Removes p if it is still the same inode and empty, through its parent's fd, at
// host or else at its staged name; otherwise leaves it. Returns an empty string when
// removed (or gone), else why it was kept.
std::string remove_placeholder(const Placeholder& p, const std::string& root);
// Removes what a run that was killed before it knew the identity may have made at a
// staged name (unique to that run): an empty file, socket or directory of this user's.
std::string remove_staged(const std::string& root, const std::string& staged, bool is_dir);

// The directories the plan's protected names lie in (guard_root of each), once each.
std::vector<std::string> guard_roots(const plan::Plan& plan);

// The bound host directory a guard lies in: the workspace when it holds it, else
// the longest bind source of the plan that does ("" when none).
std::string guard_root(const plan::Plan& plan, const std::string& host);

class Parents;  // placeholder.cc: the parent directories, opened once per pass

// Every placeholder a plan asks for, for one run. Destroying it removes what is
// left; finish() does that and says what became of each.
class Placeholders {
public:
    // Makes each under its staged name. Fails closed: a placeholder that cannot be
    // made is a launch error (those made before it are removed again). One whose
    // directory is itself a placeholder of this run that does not exist yet (another
    // run's, which this run's plan saw, was removed since) waits for it: stage_next()
    // makes it once commit() has put its directory in place.
    static Result<Placeholders> stage(const std::vector<WantedPlaceholder>& wanted);
    // Makes, under their staged names, those that waited for a directory commit()
    // has put in place; the number made (0: none waits any more).
    Result<std::size_t> stage_next();
    // Renames each staged one to its name, never over anything there (as O_EXCL). true
    // when an identity changed (a file system without RENAME_NOREPLACE, where a
    // directory is made anew at its name): the journal must be written again.
    Result<bool> commit();

    Placeholders() = default;
    Placeholders(Placeholders&& o) noexcept = default;
    Placeholders& operator=(Placeholders&& o) noexcept;
    Placeholders(const Placeholders&) = delete;
    Placeholders& operator=(const Placeholders&) = delete;
    ~Placeholders();

    // Takes one made during the run (a protected name the host removed).
    void adopt(Placeholder p, std::string root);
    // Takes all of other's (made after these: removed before them).
    void absorb(Placeholders&& other);
    bool empty() const { return items_.empty(); }
    const std::vector<Placeholder>& items() const { return items_; }
    const std::vector<std::string>& roots() const { return roots_; }  // items()[i] lies in roots()[i]

    // Lets them go without removing them (another run still uses them).
    void forget() noexcept {
        items_.clear();
        roots_.clear();
    }
    // Removes them (newest first); idempotent.
    void finish(std::vector<std::string>& made, std::vector<std::string>& removed,
                std::vector<std::string>& kept);

private:
    Result<void> make(Parents& parents, const WantedPlaceholder& w);
    std::vector<Placeholder> items_;
    std::vector<std::string> roots_;
    std::vector<WantedPlaceholder> waiting_;  // for a directory of this run's, still staged
};

}  // namespace agentjail::guard
