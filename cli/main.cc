// SPDX-License-Identifier: Apache-2.0
// The agentjail command: picks the subcommand (run when none is named) and turns
// anything unexpected into the one-line "agentjail: ..." message and status 125.
#include "commands.hpp"
#include "options.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

namespace {

// A closed stdin, stdout or stderr is refused before anything is opened: the next
// file agentjail opened (a policy, a pipe to the sandbox) would take its number, and
// the command's output meant for the terminal would land in it. The closed ones get
// /dev/null first, so the refusal itself lands nowhere it should not.
int refuse_closed_stdio() {
    static const char* const names[] = {"stdin", "stdout", "stderr"};
    int closed = -1;
    for (int fd = 2; fd >= 0; --fd) {
        if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
        int null = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (null >= 0 && null != fd) {
            ::dup2(null, fd);
            ::close(null);
        }
        closed = fd;
    }
    if (closed < 0) return 0;
    std::fprintf(stderr,
                 "agentjail: %s (fd %d) is closed; agentjail and the command need stdin, stdout and "
                 "stderr open (give it /dev/null: %s/dev/null)\n",
                 names[closed], closed, closed == 0 ? "<" : closed == 1 ? ">" : "2>");
    return agentjail::cli::exit_agentjail_error;
}

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
    if (int status = refuse_closed_stdio(); status != 0) return status;
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
