// SPDX-License-Identifier: Apache-2.0
// The agentjail command: picks the subcommand (run when none is named) and turns
// anything unexpected into the one-line "agentjail: ..." message and status 125.
#include "commands.hpp"
#include "options.hpp"

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

namespace {

int dispatch(const std::vector<std::string>& args) {
    using namespace agentjail::cli;
    if (args.empty())
        return usage_error(
            "no command given (usage: agentjail [OPTIONS] [--] COMMAND [ARGS...]; "
            "see agentjail --help)");
    const std::string& first = args[0];
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (first == "--help" || first == "-h") {
        std::fputs(global_help().c_str(), stdout);
        return 0;
    }
    if (first == "--version") {
        std::printf("agentjail %s\n", AGENTJAIL_VERSION);
        return 0;
    }
    if (first == "run") return cmd_run(rest);
    if (first == "explain") return cmd_explain(rest);
    if (first == "check") return cmd_check(rest);
    if (first == "doctor") return cmd_doctor(rest);
    if (first == "policies") return cmd_policies(rest);
    if (first == "gc") return cmd_gc(rest);
    if (first == "apply") return cmd_apply(rest);
    if (first == "runs") return cmd_runs(rest);
    if (first == "discard") return cmd_discard(rest);
    // No verb: the arguments are run's (`agentjail -- claude`, `agentjail ls -l`).
    // A program named like a verb runs with `agentjail -- doctor`.
    return cmd_run(args);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return dispatch(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const std::bad_alloc&) {
        std::fputs("agentjail: out of memory\n", stderr);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "agentjail: internal error: %s\n", e.what());
    } catch (...) {
        std::fputs("agentjail: internal error\n", stderr);
    }
    return agentjail::cli::exit_agentjail_error;
}
