// SPDX-License-Identifier: Apache-2.0
// The one way agentjail runs git on the host for clone mode: a fixed environment
// (no system or global config, no pager, no prompt, no replace objects, explicit
// GIT_DIR and work tree) and `-c` settings that switch off everything a
// repository's config could make git execute (hooks, fsmonitor, gc, signing).
#pragma once

#include "base/error.hpp"

#include <string>
#include <vector>

namespace agentjail::workspace {

struct Git {
    std::string git_dir;     // GIT_DIR (required)
    std::string work_tree;   // GIT_WORK_TREE; empty: none (GIT_DIR only)
    std::string index_file;  // GIT_INDEX_FILE; empty: the default
    // Extra NAME=VALUE (a commit's fixed identity); set after the fixed ones.
    std::vector<std::string> env;
    // Directories git must accept whoever owns them (safe.directory, given on the
    // command line, the only place besides system/global config git honours it).
    std::vector<std::string> safe_dirs;
};

struct GitOutput {
    int status = -1;  // exit code, or 128+N for signal N
    std::string out;
    std::string err;
};

// Runs git with args (after the fixed -c settings); stdin is /dev/null unless
// input is given. Fails only when git could not be started.
Result<GitOutput> run_git(const Git& g, const std::vector<std::string>& args, const std::string* input = nullptr);

// The same, and a non-zero exit is an error naming `what` and git's first line of stderr.
Result<std::string> git_ok(const Git& g, const std::vector<std::string>& args, const std::string& what,
                           const std::string* input = nullptr);

// The git binary found (absolute), or an error saying git is needed.
Result<std::string> git_binary();

}  // namespace agentjail::workspace
