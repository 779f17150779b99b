// SPDX-License-Identifier: Apache-2.0
// What a run leaves on the host until it has cleaned up after itself: the
// placeholders in the workspace and the proxy's CA directory in TMPDIR. They are
// written down before they are made, in a journal of the run under
// <state home>/agentjail/leftovers/ (workspace::state_home: $XDG_STATE_HOME, else
// ~/.local/state). Its name says whose it is: "<launcher pid>-<its start time>-<n>",
// and once the sandbox is cloned "-<init pid>" more (one rename). A run that ends
// removes what it made and then its journal; when the launcher was killed first,
// the next run (or `agentjail gc`) finds a journal whose launcher and init are gone
// (told from the name alone, so live runs' journals are never read) and removes
// what is still what that run made: a placeholder of the same inode and still
// empty (or, killed before it knew the inode, an empty one at the staged name only
// that run uses), a CA directory of agentjail's name holding only its bundle.
#pragma once

#include "base/outcome.hpp"
#include "guard/placeholder.hpp"

#include <sys/types.h>

#include <memory>

#include <string>
#include <vector>

namespace agentjail::guard {

// The state home (workspace::state_home) of this process, "" when it has none.
std::string state_base();

struct JournalState;

class Journal {
public:
    // A name for the next run of this process: "<pid>-<start time>-<n>", which the
    // journal is named after and the placeholders' staged names hold.
    static std::string next_tag();
    // Writes the journal before anything it lists is made (the intent): the
    // placeholders the plan asks for, by their staged names, and dirs. Inert (no
    // file, no error) when no state directory can be had: the run goes on, and only
    // a crash of it would leave its leftovers.
    static Journal write(const std::string& tag, const std::vector<WantedPlaceholder>& wanted,
                         const std::vector<std::string>& dirs);
    // Writes it again with what each placeholder made is (its inode), before any is
    // renamed to its name: a sweep removes a name only when it holds that inode.
    void record(const Placeholders& made);
    // Names the sandbox's init (host pid) in the journal, before it is released.
    void set_init(pid_t init) noexcept;
    // The run ended while other runs still use its placeholders (shared_roots.hpp):
    // the journal lists `left` (with their identities), is renamed "ended-<name>" and
    // is no longer this run's; the last run there, or a sweep, removes them.
    void hand_over(const Placeholders& left);

    // A handle on the journal for the guard watch (on the supervisor's thread): adds
    // a placeholder made during the run, with its identity, as soon as it is made.
    // Still valid when the Journal moves; a no-op once the journal is done.
    class Appender {
    public:
        void add(const Placeholder& p, const std::string& root) const;

    private:
        friend class Journal;
        std::shared_ptr<JournalState> s_;
    };
    Appender appender() const;

    Journal() = default;
    Journal(Journal&& o) noexcept = default;
    Journal& operator=(Journal&& o) noexcept;
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;
    ~Journal() { done(); }

    // The run cleaned up: the journal goes.
    void done() noexcept;

private:
    std::shared_ptr<JournalState> s_;
};

struct Sweep {
    std::vector<std::string> removed;  // what a dead run had left, now gone
    std::vector<std::string> kept;     // "PATH: why" for what is no longer what it made
};
// What became of the ending run's own placeholders (see sweep_journals).
struct OwnRemoval {
    std::vector<std::string> made, removed, kept;
};
// Removes what the journals of gone runs (and of ended ones that handed their
// placeholders over) list, deepest name first across them all, then those
// journals; a journal with a placeholder in a directory another run still uses is
// left for later. The last run out of its directories passes `held` (their setup
// locks, held as their only user: not taken again) and `own`, its own placeholders,
// removed in the same order (one run's may lie in another's directory), with what
// became of them in `own_out`.
class RootUsers;
Sweep sweep_journals(const RootUsers* held = nullptr, Placeholders* own = nullptr, OwnRemoval* own_out = nullptr);

// The end of a run's placeholders, once nothing of its sandbox is left (users: the
// run's mark in their directories, shared_roots.hpp). The last run out removes them,
// and with them what the runs before it left there (sweep_journals); any other leaves
// them to the runs still there, listed in its journal, handed over. What became of
// each goes to out (placeholders_made, _removed, _kept). Every argument is left done.
void release_placeholders(RootUsers& users, Placeholders& placeholders, Journal& journal,
                          WorkspaceOutcome& out);

}  // namespace agentjail::guard
