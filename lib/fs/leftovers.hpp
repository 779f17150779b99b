// SPDX-License-Identifier: Apache-2.0
// What a run leaves on the host until it has cleaned up after itself: the
// placeholders in the workspace and the proxy's CA directory in TMPDIR. They are
// written down before the sandbox starts, in a journal of the run under
// $XDG_STATE_HOME/agentjail/leftovers/ (default ~/.local/state), named after the
// launching process (pid and start time). A run that ends removes them and then its
// journal; when the launcher is killed first, the next run (or `agentjail gc`) finds
// the journal of a process that is gone and removes what is still what that run
// made (a placeholder of the same inode and still empty; a CA directory of agentjail's
// name holding only its bundle), never following a link.
#pragma once

#include "fs/placeholder.hpp"

#include <sys/types.h>

#include <string>
#include <vector>

namespace agentjail::fs {

class Journal {
public:
    // Writes the journal of a run, once its placeholders are made and before the
    // sandbox is cloned; set_init() adds the sandbox's init (host pid) before it is
    // released. Inert (no file, no error) when no state directory can be made: the
    // run goes on, and only a crash of it would leave its leftovers.
    static Journal write(const Placeholders& placeholders, const std::vector<std::string>& dirs);
    void set_init(pid_t init);

    Journal() = default;
    Journal(Journal&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
    Journal& operator=(Journal&& o) noexcept;
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;
    ~Journal() { done(); }

    // The run cleaned up: the journal goes.
    void done() noexcept;
    const std::string& path() const { return path_; }

private:
    bool store() noexcept;
    std::string path_;
    std::string text_;  // the journal as written, without its init
};

struct Sweep {
    std::vector<std::string> removed;  // what a dead run had left, now gone
    std::vector<std::string> kept;     // "PATH: why" for what is no longer what it made
};
// Removes what the journals of gone launchers list, then those journals.
Sweep sweep_journals();

}  // namespace agentjail::fs
