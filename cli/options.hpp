// SPDX-License-Identifier: Apache-2.0
// The run/explain command line: flags parsed with Boost.Program_options and applied
// as overrides to the one policy::Policy (no parallel option struct).
#pragma once

#include "api/api.hpp"

#include "policy/policy.hpp"

#include <optional>
#include <string>
#include <vector>

namespace boost::program_options {
class error;
}

namespace agentjail::cli {

// Exit status when agentjail itself fails (bad flag, bad policy, setup error).
inline constexpr int exit_agentjail_error = 125;

// What relative paths and ~ in flags are resolved against.
struct Context {
    std::string cwd;   // the caller's working directory
    std::string home;  // $HOME (or the passwd entry)
    std::string pwd;   // cwd as the caller's shell names it (sys::caller_pwd); "": cwd
    // The user's config.toml (policy::user_config_file), "" for none: its settings
    // come before the command line's flags. With it, the project's trusted
    // agentjail.toml is looked for too (project_policy_file).
    std::string config;
};
Result<Context> current_context();

enum class Verb { run, explain };

// One parsed `run` or `explain` command line.
struct Invocation {
    // The loaded policy with every flag applied as an override; empty with --help.
    std::optional<agentjail::Policy> policy;
    std::vector<std::string> command;  // what follows the options (may be empty)
    bool help = false;
    bool verbose = false;
    bool json = false;        // explain: the plan as JSON; run: the result record last on stderr
    int json_fd = -1;         // run: --json-fd N, the record alone on N
    std::string result_file;  // run: write the result record here (also when agentjail fails)
    bool tty_raw = false;     // run: no output filter on the pty relay
    bool filter_pipes = false;  // run: --tty-filter always (the output pipes filtered too)
    bool no_tty = false;      // run: pipes even from a terminal
    bool apply = false;       // run: overlay mode, apply the change set at exit
    bool quiet = false;       // run: no summary of what was refused after the run
    // Said on stderr before anything runs ("agentjail: " first): a project policy
    // file that is there but not trusted.
    std::vector<std::string> warnings;
};

// The project's own policy file: agentjail.toml in the current directory or above it,
// up to the project's top (a directory holding .git) or the home; nullopt for none
// (cmd_trust.cc). Used only when trusted: its content approved with `agentjail trust`.
std::optional<std::string> project_policy_file(const Context& ctx);
// A regular file of at most `max` bytes at dirfd/name (AT_FDCWD: a path), no link
// followed at its name; nullopt otherwise.
std::optional<std::string> read_regular_at(int dirfd, const std::string& name, std::size_t max);
// The file's text when it is trusted as it is now: what the policy is then loaded
// from (never read again, which the agent could have changed in between).
std::optional<std::string> trusted_project_policy(const std::string& path);
// The trusted project policy loaded from that text; refused when it extends a file
// (which trust does not cover: the agent could change it) rather than a built-in or
// one of your policies.
Result<agentjail::Policy> load_project_policy(const std::string& text, const std::string& path);

// Parses args (without the program name and the verb). The first word that is
// not an option, or `--`, ends the options. Errors are invalid_input with the
// message the user sees after "agentjail: ".
Result<Invocation> parse_invocation(Verb verb, const std::vector<std::string>& args,
                                    const Context& ctx);

// Resolves a path given on the command line: ~ and ~/x against ctx.home, a
// relative path against ctx.cwd, lexically normalised; a path starting with a
// policy placeholder ({workspace}, {tmp}) is left for the planner.
std::string resolve_path(const std::string& path, const Context& ctx);

// The overrides the command line put on p, one line each ("--ro /a -> /b").
std::vector<std::string> describe_overrides(const policy::Policy& p);

// Help texts (stdout) for the whole program and per subcommand.
std::string global_help();
std::string explain_help();
std::string gc_help();

// Prints "agentjail: <message>" on stderr and returns the exit status for it
// (125; 126/127 for a command that is not executable / not found).
int report(const Error& e);
int usage_error(const std::string& message);

// A Boost.Program_options error's message, safe whatever the user typed (Boost's own
// what() loops forever on an argument holding one of its %placeholders%).
std::string error_text(boost::program_options::error& e);
// Every other line agentjail writes on stderr: "agentjail: <line>" (say) or the line
// alone (say_bare), made printable (util::printable): names from a policy file, the
// host or the sandbox (a key with ESC or NUL in it) never act on the terminal or
// cut a message short.
void say(const std::string& line);
void say_bare(const std::string& line);

}  // namespace agentjail::cli
