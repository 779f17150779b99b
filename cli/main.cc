// SPDX-License-Identifier: Apache-2.0
// The agentjail command: picks the subcommand (run when none is named) and turns
// anything unexpected into the one-line "agentjail: ..." message and status 125.
#include "commands.hpp"
#include "options.hpp"
#include "verbs.hpp"

#include "commit.h"
#include "sys/syscalls.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

// run's arguments when args run a command (`agentjail run ...`, or no verb: the
// arguments are run's, `agentjail -- claude`, `agentjail ls -l`; a program named like
// a verb runs with `agentjail -- doctor`); nullopt for another verb or no arguments.
std::optional<std::vector<std::string>> run_args(const std::vector<std::string>& args) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "--version")
        return std::nullopt;
    if (args[0] == "run") return std::vector<std::string>(args.begin() + 1, args.end());
    if (agentjail::cli::find_subcommand(args[0]) != nullptr) return std::nullopt;
    return args;
}

// A closed stdin, stdout or stderr is refused before anything is opened: the next
// file agentjail opened (a policy, a pipe to the sandbox) would take its number, and
// the command's output meant for the terminal would land in it. The closed ones get
// /dev/null first, so the refusal itself lands nowhere it should not; a run that asked
// for a result record (--result-file, --json, --json-fd) gets its XX record too, as
// for any other failure before the command starts.
int refuse_closed_stdio(const std::vector<std::string>& args) {
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
    using namespace agentjail;
    const Error e(
        ErrorKind::invalid_input, EBADF,
        std::string(names[closed]) + " (fd " + std::to_string(closed) +
            ") is closed; agentjail and the command need stdin, stdout and stderr open (give it "
            "/dev/null: " +
            (closed == 0   ? "<"
             : closed == 1 ? ">"
                           : "2>") +
            "/dev/null)");
    // With 0-2 on /dev/null the options can be read as for any run (a policy file
    // opened now gets a number of its own), and the record written where they say.
    auto run = run_args(args);
    return run ? cli::cmd_run(*run, &e) : cli::report(e);
}

// The highest Landlock ABI the headers this was built with describe (each ABI added
// a right); the running kernel's is sys::landlock_abi().
int landlock_abi_known() {
#if defined(LANDLOCK_SCOPE_SIGNAL)
    return 6;
#elif defined(LANDLOCK_ACCESS_FS_IOCTL_DEV)
    return 5;
#elif defined(LANDLOCK_ACCESS_NET_BIND_TCP)
    return 4;
#elif defined(LANDLOCK_ACCESS_FS_TRUNCATE)
    return 3;
#elif defined(LANDLOCK_ACCESS_FS_REFER)
    return 2;
#else
    return 1;
#endif
}

// `agentjail --version`: the first line is the version alone (what scripts read),
// then the commit and what the build holds.
std::string version_text() {
    const scmp_version* sv = seccomp_version();
    const long running = agentjail::sys::landlock_abi();
    std::string t = std::string("agentjail ") + AGENTJAIL_VERSION + "\n";
    t += std::string("commit: ") + AGENTJAIL_COMMIT + "\n";
    t += std::string("build: ") + AJ_BUILD_TYPE + ", " +
         (AJ_STATIC_COMMAND ? "static (only libc is a shared library)" : "dynamic") + "\n";
    t += "libseccomp: " + std::to_string(sv->major) + "." + std::to_string(sv->minor) + "." +
         std::to_string(sv->micro) + "\n";
    t += "landlock: ABI " + std::to_string(landlock_abi_known()) + " known; this kernel: " +
         (running > 0 ? "ABI " + std::to_string(running) : std::string("none")) + "\n";
    return t;
}

int dispatch(const std::vector<std::string>& args) {
    using namespace agentjail::cli;
    if (args.empty())
        return usage_error(
            "no command given (usage: agentjail [OPTIONS] [--] COMMAND [ARGS...]; "
            "see agentjail --help)");
    const std::string& first = args[0];
    if (first == "--help" || first == "-h") {
        std::fputs(global_help().c_str(), stdout);
        return 0;
    }
    if (first == "--version") {
        std::fputs(version_text().c_str(), stdout);
        return 0;
    }
    if (auto run = run_args(args)) return cmd_run(*run);
    if (const Subcommand* sub = find_subcommand(first))
        return sub->run(std::vector<std::string>(args.begin() + 1, args.end()));
    return exit_agentjail_error;  // not reached: run_args takes every other word
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::vector<std::string> args(argv + 1, argv + argc);
        if (int status = refuse_closed_stdio(args); status != 0) return status;
        return dispatch(args);
    } catch (const std::bad_alloc&) {
        std::fputs("agentjail: out of memory\n", stderr);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "agentjail: internal error: %s\n", e.what());
    } catch (...) {
        std::fputs("agentjail: internal error\n", stderr);
    }
    return agentjail::cli::exit_agentjail_error;
}
