// SPDX-License-Identifier: Apache-2.0
// Direct mode's check after the run: what the sandbox left in the workspace that
// git or a tool would run on the host later, outside what the plan protected.
//
// The plan makes the workspace's own repositories' hooks and config read-only, but
// a repository the agent creates during the run has a config of its own: `git init
// sub`, `git config core.fsmonitor CMD` there and a gitlink in the (writable) index
// make the user's next `git status` in the project run CMD. The same for hooks of
// such a repository and for an interactive rebase left half done with `exec` lines.
// Those are made inert (renamed aside, mode 000) and reported; agent and editor
// settings created below the top level (a sub-folder's .claude/settings.json) are
// reported.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"
#include "sys/scan.hpp"

#include <sys/types.h>

#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace agentjail::workspace {

struct AuditOptions {
    std::string workspace;               // canonical host path
    struct timespec since {};            // the run's start (CLOCK_REALTIME)
    // Host paths the sandbox could not write (the plan's guards): one of them that
    // nothing changed during the run is the user's as it was; one written during it
    // is checked like any other (the host replaced it, and a handle opened inside
    // in the moment before its guard was back could write it).
    std::vector<std::string> protected_paths;
    // The policy's [workspace] protect patterns (relative globs, as
    // workspace::protect_patterns gives them: the default policy's list for a policy
    // without one): a file matching one that the run wrote below the top level is
    // flagged, at the top too (a name without a placeholder the run made; a
    // protected one written during the run).
    std::vector<std::string> protect;
    bool neutralize = true;              // false: report only
    std::size_t max_entries = 1000000;   // a bound on the walk; past it the audit says so
    // The plan's walk of the workspace (null: none): only the directories changed
    // since it began are read again (sys::ScanOptions::before).
    std::shared_ptr<const sys::Scan> before;
    // Where the audit's own walk is left (null: dropped), for the next run's plan.
    sys::Scan* walked = nullptr;
    // With the workspace served through the view (view::Server::could_write): whether
    // the sandbox could have written the file at a path (relative), given the device
    // and inode of it and of each folder above it. A file changed during the run that
    // it could not write is the host's: not the run's, and left alone (a protected
    // name the user changes during the run, which under the view nothing inside can
    // touch). Null: every file changed during the run is the run's, but for
    // `protected_paths` untouched since it began.
    std::function<bool(const std::string&, const std::vector<std::pair<dev_t, ino_t>>&)> could_write;
};

// The findings, in walk order. Never throws; a directory it cannot read is a finding.
std::vector<WorkspaceFinding> audit_direct(const AuditOptions& options);

// The git config keys that make git run a program (core.fsmonitor, core.hooksPath,
// filter.*.clean, ...): "section.key" with any subsection; value as written.
// Returns a description ("core.fsmonitor runs a command") or "" when harmless.
std::string executable_config_key(const std::string& section, const std::string& subsection,
                                  const std::string& key, const std::string& value);

// The same for a key as `git config --list` names it ("section.sub.section.key",
// the subsection being what lies between the first and the last dot).
std::string executable_config_entry(const std::string& dotted_key, const std::string& value);

// Every executable key of a git config file's text, as "section.key" descriptions,
// the text read by git itself (`git config --file - --list`, no include followed:
// an include is a finding of its own). An error when git refuses the text.
Result<std::vector<std::string>> executable_config(const std::string& text);

}  // namespace agentjail::workspace
