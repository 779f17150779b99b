// SPDX-License-Identifier: Apache-2.0
// `agentjail check FILE...`: loads and validates policy files, one line each.
#include "commands.hpp"
#include "options.hpp"
#include "verb_args.hpp"

#include "policy/policy.hpp"
#include "seccomp/seccomp.hpp"
#include "util/strings.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

namespace agentjail::cli {

std::string check_help() {
    return "agentjail check: load each policy FILE (with its extends chain), validate it and\n"
           "print 'FILE: ok' (stdout) or the error (stderr: FILE:LINE:COL: KEY: message). Exits 0 "
           "when all\n"
           "are fine, 125 otherwise.\n"
           "\nUsage:\n  agentjail check FILE...\n\nExamples:\n  agentjail check my.toml\n"
           "  agentjail check policies/*.toml\n";
}

int cmd_check(const std::vector<std::string>& args) {
    VerbArgs parsed;
    if (auto status = parse_or_exit("check", check_help(), args, parsed)) return *status;
    const std::vector<std::string>& files = parsed.operands;
    if (files.empty()) return usage_error("check: no FILE given (see agentjail check --help)");
    bool all_ok = true;
    for (const auto& f : files) {
        // A bare word like "default" would load the built-in of that name: check is
        // about files, so a word that is neither a path nor *.toml is read as ./word.
        bool looks_builtin = f.find('/') == std::string::npos &&
                             !(f.size() >= 5 && f.compare(f.size() - 5, 5, ".toml") == 0);
        std::string path = looks_builtin ? "./" + f : f;
        struct stat st;
        if (::stat(f.c_str(), &st) != 0) {
            all_ok = false;
            say_bare(f + ": " + util::errno_text(errno));
            continue;
        }
        auto p = policy::load(path);
        // The [seccomp] rules are resolved and compiled too: unknown syscalls, bad
        // actions and conditions are errors here, not only when a sandbox starts.
        Result<std::shared_ptr<const seccomp::Program>> filter{std::shared_ptr<const seccomp::Program>()};
        if (p) filter = seccomp::compile(p->seccomp);
        if (p && filter) {
            std::printf("%s: ok\n", util::printable(f).c_str());
            continue;
        }
        all_ok = false;
        const std::string& msg = p ? filter.error().message() : p.error().message();
        // Parse errors already start with the file name; others get it in front.
        if (util::starts_with(msg, f) || util::starts_with(msg, path))
            say_bare(msg);
        else
            say_bare(f + ": " + msg);
    }
    std::fflush(stdout);
    return all_ok ? 0 : exit_agentjail_error;
}

}  // namespace agentjail::cli
