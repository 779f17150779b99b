// SPDX-License-Identifier: Apache-2.0
// The risky-change report of clone and overlay runs: the agent's changes, and a
// flag on each one that makes something execute later on the host (a hook, a CI
// workflow, an install script, a Makefile, an editor task, a link out of the
// repository...). Pure: the caller lists the changes and says how to read content.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace agentjail::workspace {

enum class ChangeKind { added, modified, deleted, type_changed };
const char* change_kind_name(ChangeKind k);  // "added", "modified", "deleted", "type-changed"

// git-style modes (as git ls-tree prints them, octal).
inline constexpr unsigned kModeFile = 0100644;
inline constexpr unsigned kModeExec = 0100755;
inline constexpr unsigned kModeLink = 0120000;
inline constexpr unsigned kModeGitlink = 0160000;  // a submodule's commit
inline constexpr unsigned kModeDir = 040000;

// One changed path, relative to the repository's (workspace's) root, '/'-separated,
// as raw bytes (it may hold anything but NUL).
struct Change {
    std::string path;
    ChangeKind kind = ChangeKind::modified;
    unsigned old_mode = 0;    // 0: none (added)
    unsigned new_mode = 0;    // 0: none (deleted)
    std::string link_target;  // new_mode == kModeLink: the link's text
    // The new content (at most `limit` bytes); nullopt when it cannot be read.
    // Unset: content rules (package.json scripts, .gitattributes filters) say
    // that they could not look.
    std::function<std::optional<std::string>(std::size_t limit)> read_new;
};

// What a flag is about: a stable word for machines.
//   git            the repository's own machinery: .git/ content, hooks, config,
//                  info/, alternates, a nested repository's .git, .gitmodules
//   ci             CI workflows (.github/workflows/, .gitlab-ci.yml, .circleci/, Jenkinsfile...)
//   gitattributes  .gitattributes (filter/diff/merge drivers run on checkout and diff)
//   install-script package manifests' install/lifecycle scripts and build scripts
//                  (package.json scripts, setup.py, pyproject.toml build backends, build.rs...)
//   build          Makefiles and other build files (run by `make`, `cmake`...)
//   editor         editor tasks and settings (.vscode/, .idea/)
//   auto-run       files a shell tool runs on `cd` (.envrc, .tool-versions, mise.toml)
//   agent-config   agent settings and hooks (.claude/, .mcp.json, .codex/, .cursor/...)
//   executable     a new executable bit
//   symlink        a symbolic link pointing outside the repository or into .git
//   submodule      a submodule's commit or URL changed
//   file-name      a file name with control characters or invalid UTF-8
struct Flag {
    std::string category;
    std::string path;    // raw bytes (print with util::printable)
    std::string detail;  // one sentence, plain ASCII apart from printable() paths
};

// Flags for a list of changes, in the order of the changes.
std::vector<Flag> classify(const std::vector<Change>& changes);

// A commit the run made (clone mode).
struct Commit {
    std::string id;       // full hash
    std::string subject;  // first line of the message, raw
    std::string author;   // "Name <email>", raw
};

struct Report {
    std::string mode;    // "clone" or "overlay"
    std::string run_id;
    std::string branch;  // clone: "agentjail/<run-id>"
    std::string base;    // the commit the run started from ("" when none)
    std::string head;    // the branch's commit ("" when none)
    std::vector<Commit> commits;  // oldest first
    std::vector<Change> changes;  // against base
    std::vector<Flag> flags;      // classify(changes) plus what the mode found itself
    std::vector<std::string> notes;  // plain sentences ("uncommitted work committed as ...")
    // Nothing came back (the sandbox tampered with what agentjail needs); why.
    std::string refused;
};

// For people: a few lines, every path and subject through util::printable, so no
// name the agent chose can act on the terminal. Ends with a newline.
std::string to_text(const Report& r);
// For machines: a JSON object (schema in docs/workspace.md). indent < 0: one line.
std::string to_json(const Report& r, int indent = 2);

// Parses a git-style octal mode ("100644"); 0 when not one.
unsigned parse_mode(const std::string& s);

}  // namespace agentjail::workspace
