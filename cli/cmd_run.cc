// SPDX-License-Identifier: Apache-2.0
// `agentjail run` (and the bare `agentjail CMD`): spawns the sandbox, forwards
// signals to it from a signalfd while polling its pidfd, exits with its status.
#include "commands.hpp"
#include "options.hpp"
#include "result_record.hpp"

#include "plan/plan.hpp"
#include "util/strings.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace agentjail::cli {

namespace {

// The signals a user or a job-control shell sends to stop or tell the command
// something; they go to the sandbox instead of killing agentjail and leaving
// the command behind.
constexpr int forwarded_signals[] = {SIGINT,  SIGTERM, SIGHUP,   SIGQUIT,
                                     SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

void print_plan_summary(const Invocation& inv) {
    auto host = plan::HostFacts::current();
    if (!host) return;  // the spawn below reports the same failure
    auto plan = plan::build(inv.policy->raw(), inv.command, *host);
    if (!plan) return;
    // Paths come from the filesystem: no control character of theirs reaches the terminal.
    std::fputs(util::printable(plan::to_text(*plan), true).c_str(), stderr);
    for (const auto& note : plan->notes)
        std::fprintf(stderr, "note: %s\n", util::printable(note).c_str());
    std::fflush(stderr);
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
    auto ctx = current_context();
    if (!ctx) return report(ctx.error());
    // The record's clock starts here; a run that fails from here on still gets one.
    RecordRequest rec = prescan_record_flags(args, ctx->cwd);
    auto inv = parse_invocation(Verb::run, args, *ctx);
    if (!inv) return finish_error(rec, inv.error());
    if (inv->policy)
        if (auto r = prepare_record(rec, *inv); !r) return finish_error(rec, r.error());
    if (inv->help) {
        std::fputs(global_help().c_str(), stdout);
        return 0;
    }
    if (inv->command.empty())
        return usage_error("no command given (usage: agentjail [OPTIONS] [--] COMMAND [ARGS...])");
    if (inv->verbose) print_plan_summary(*inv);

    // Blocked before the spawn so that none is lost in between: the sandbox's
    // command starts with an empty signal mask whatever ours is.
    sigset_t set;
    sigemptyset(&set);
    for (int s : forwarded_signals) sigaddset(&set, s);
    sigset_t old;
    if (sigprocmask(SIG_BLOCK, &set, &old) != 0)
        return report(Error(ErrorKind::internal, errno, "sigprocmask: failed"));
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd < 0) return report(Error(ErrorKind::setup, errno, "signalfd failed"));

    if (inv->policy->raw().network.mode.value == policy::NetMode::host)
        std::fprintf(stderr, "agentjail: warning: the sandbox shares the host's network (%s)\n",
                     inv->policy->raw().network.mode.origin.describe().c_str());
    auto sb = Sandbox::spawn(*inv->policy, inv->command);
    if (!sb) {
        ::close(sfd);
        return finish_error(rec, sb.error());
    }

    pollfd fds[2] = {{sb->pidfd(), POLLIN, 0}, {sfd, POLLIN, 0}};
    for (;;) {
        int n = poll(fds, 2, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            ::close(sfd);
            return finish_error(rec, Error(ErrorKind::internal, errno, "poll failed"));
        }
        if (fds[0].revents != 0) break;  // the sandbox's init exited
        if (fds[1].revents & POLLIN) {
            signalfd_siginfo si;
            ssize_t r = read(sfd, &si, sizeof si);
            if (r != sizeof si) continue;
            // Ctrl-C, Ctrl-\ and window-size changes come from the terminal
            // driver (SI_KERNEL) to the whole foreground process group, which
            // the command is in: it already has them, sending again would
            // deliver them twice.
            if (si.ssi_code == SI_KERNEL) continue;
            // ESRCH while the sandbox is exiting is fine: the pidfd tells us next.
            (void)sb->kill(static_cast<int>(si.ssi_signo));
        }
    }
    ::close(sfd);
    auto res = sb->wait();
    if (!res) return finish_error(rec, res.error());
    return finish_run(rec, *res);
}

}  // namespace agentjail::cli
