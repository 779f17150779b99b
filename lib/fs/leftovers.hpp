// SPDX-License-Identifier: Apache-2.0
// What a run leaves on the host until it has cleaned up after itself: the
// placeholders in the workspace and the proxy's CA directory in TMPDIR. They are
// written down before the sandbox is cloned, in a journal of the run under
// <state home>/agentjail/leftovers/ (workspace::state_home: $XDG_STATE_HOME, else
// ~/.local/state). Its name says whose it is: "<launcher pid>-<its start time>-<n>",
// and once the sandbox is cloned "-<init pid>" more (one rename). A run that ends
// removes what it made and then its journal; when the launcher was killed first,
// the next run (or `agentjail gc`) finds a journal whose launcher and init are gone
// (told from the name alone, so live runs' journals are never read) and removes
// what is still what that run made: a placeholder of the same inode and still
// empty, a CA directory of agentjail's name holding only its bundle.
#pragma once

#include "fs/placeholder.hpp"

#include <sys/types.h>

#include <string>
#include <vector>

namespace agentjail::fs {

class Journal {
public:
    // Writes the journal once the placeholders are made, before the clone. Inert
    // (no file, no error) when no state directory can be had: the run goes on, and
    // only a crash of it would leave its leftovers.
    static Journal write(const Placeholders& placeholders, const std::vector<std::string>& dirs);
    // Names the sandbox's init (host pid) in the journal, before it is released.
    void set_init(pid_t init) noexcept;

    Journal() = default;
    Journal(Journal&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
    Journal& operator=(Journal&& o) noexcept;
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;
    ~Journal() { done(); }

    // The run cleaned up: the journal goes.
    void done() noexcept;

private:
    std::string path_;
};

struct Sweep {
    std::vector<std::string> removed;  // what a dead run had left, now gone
    std::vector<std::string> kept;     // "PATH: why" for what is no longer what it made
};
// Removes what the journals of gone runs list, then those journals.
Sweep sweep_journals();

}  // namespace agentjail::fs
