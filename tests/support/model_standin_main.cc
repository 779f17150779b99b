// SPDX-License-Identifier: Apache-2.0
// aj_model_standin: the tests' stand-in model API (model_standin.hpp) as a program of
// its own, for bench/agents.sh and for looking at what a client sends by hand.
//
//   aj_model_standin [--port N] [--text TEXT] [--shell COMMAND] [-v]
//
// Prints the port it listens on (127.0.0.1) as one line on stdout, serves until
// SIGTERM or SIGINT, then prints the number of requests it answered on stderr.
#include "model_standin.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

int main(int argc, char** argv) {
    ajmodel::ModelStandin::Options opts;
    std::string shell;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        bool has_value = i + 1 < argc;
        if (a == "--port" && has_value) {
            opts.port = static_cast<std::uint16_t>(std::strtoul(argv[++i], nullptr, 10));
        } else if (a == "--text" && has_value) {
            opts.final_text = argv[++i];
        } else if (a == "--shell" && has_value) {
            shell = argv[++i];
        } else if (a == "-v" || a == "--verbose") {
            opts.verbose = true;
        } else {
            std::fprintf(stderr, "usage: aj_model_standin [--port N] [--text TEXT] [--shell COMMAND] [-v]\n");
            return 2;
        }
    }
    // Blocked before the server's threads start, so that they inherit the mask and
    // only sigwait below takes these signals.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    try {
        ajmodel::ModelStandin standin(opts);
        if (!shell.empty()) standin.script_shell(shell);
        std::printf("%u\n", standin.port());
        std::fflush(stdout);
        int sig = 0;
        sigwait(&set, &sig);
        standin.stop();
        std::fprintf(stderr, "aj_model_standin: %zu requests, %d shell calls\n", standin.requests().size(),
                     standin.tool_calls());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "aj_model_standin: %s\n", e.what());
        return 1;
    }
    return 0;
}
