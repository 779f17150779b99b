// SPDX-License-Identifier: Apache-2.0
// agentjail's own state under the caller's state home: opened and made without
// following links, files replaced by rename, trees removed without following links.
#pragma once

#include "base/error.hpp"
#include "sys/fd.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace agentjail::sys {

// $XDG_STATE_HOME when it is set to an absolute path in `environ`, else
// <home>/.local/state (the XDG base directory spec). Pure.
std::string state_home(const std::vector<std::string>& environ, const std::string& home);

// Whether opening agentjail's state makes what is missing (a run), or only opens
// what is there and fails with ENOENT otherwise (the planner, which makes nothing).
enum class StateDir { create, existing };

// Opens <state_home>/<names...>, creating what is missing (0700): the part of
// state_home that exists is followed as the user set it up, what is missing of it
// is made one component at a time without following links, and each of `names`
// must be a directory of the caller's, closed to others (a link or a foreign
// directory planted there is refused).
Result<UniqueFd> open_own_state_dir(const std::string& state_home, const std::vector<std::string>& names,
                                    StateDir how = StateDir::create);

// Opens (creating, 0700) the directory `name` under `parent` without following a
// link; it must be the caller's own and closed to others. `path` names it in errors.
Result<UniqueFd> own_dir_at(int parent, const std::string& name, const std::string& path,
                            StateDir how = StateDir::create);

// Removes everything inside the directory `dirfd` (not the directory), never
// following a link; for run directories and clones.
Result<void> remove_tree_at(int dirfd, const std::string& what);
// Removes dirfd/name whatever it is (a directory with all it holds), never
// following a link; a name already gone is fine.
Result<void> remove_at(int dirfd, const std::string& name, const std::string& what);
// Replaces dirfd/name by text: a fresh name (O_EXCL|O_NOFOLLOW) renamed over it, so
// a reader sees the old file or the new one and a link planted at name is replaced,
// never written through. `what` names it in errors.
Result<void> replace_file_at(int dirfd, const char* name, std::string_view text, unsigned mode,
                             const std::string& what);

// The root of all runs' state for a caller: $XDG_STATE_HOME/agentjail/runs when
// XDG_STATE_HOME is set to an absolute path in `environ`, else
// <home>/.local/state/agentjail/runs. Pure.
std::string runs_root(const std::vector<std::string>& environ, const std::string& home);


// A fresh run id: UTC time to the second (sortable) and 24 random bits,
// "20261202-011500-ab12cd". `now` 0: the current time.
std::string new_run_id(long long now = 0);

// Whether `id` has the form new_run_id makes (no '/', no "..": safe as a name).
bool valid_run_id(const std::string& id);


// path with its longest existing prefix resolved (realpath) and the rest as written:
// where a directory agentjail is about to make there will be, free of links.
std::string resolve_existing(const std::string& path);

}  // namespace agentjail::sys
