// SPDX-License-Identifier: Apache-2.0
// `agentjail run` (and the bare `agentjail CMD`): spawns the sandbox, forwards
// signals to it from a signalfd while polling its pidfd, follows the user's ^Z as a
// job-control stop, exits with its status.
#include "commands.hpp"
#include "options.hpp"
#include "result_record.hpp"

#include "plan/plan.hpp"
#include "run/record.hpp"
#include "util/memory.hpp"
#include "util/strings.hpp"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace agentjail::cli {

namespace {

// The signals a user or a job-control shell sends to stop or tell the command
// something; they go to the sandbox instead of killing agentjail and leaving
// the command behind. The stop signals are handled here (see suspend()).
constexpr int forwarded_signals[] = {SIGINT,  SIGTERM,  SIGHUP,  SIGQUIT, SIGUSR1, SIGUSR2,
                                     SIGWINCH, SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU};

// Stops agentjail as a job-control shell expects (it shows "Stopped" and its prompt),
// with the user's terminal as it was, and every process of the sandbox with it,
// whatever group or session it put itself in; on `fg` takes the terminal back, has
// the guarded names checked for what the host changed meanwhile, then lets the
// sandbox go on. The wall clock counts on while stopped and fires once agentjail is
// continued. Only the user's own doing gets here (a ^Z they typed, a SIGTSTP sent to
// agentjail), never a stop the sandbox caused itself, so the sandbox cannot freeze
// its own supervisor.
void suspend(Sandbox& sb, bool stop_command) {
    // The command's job sees a stop of its own first, as under a shell.
    if (stop_command) (void)sb.kill(SIGTSTP);
    if (!sb.suspend()) return;  // the sandbox is ending: nothing to stop for
    sigset_t tstp;
    sigemptyset(&tstp);
    sigaddset(&tstp, SIGTSTP);
    struct sigaction dfl {}, old {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGTSTP, &dfl, &old);
    // Unblocked in this thread only, for the raise: the process stops here (unless
    // its process group is orphaned, where the kernel discards the stop).
    pthread_sigmask(SIG_UNBLOCK, &tstp, nullptr);
    raise(SIGTSTP);
    pthread_sigmask(SIG_BLOCK, &tstp, nullptr);
    sigaction(SIGTSTP, &old, nullptr);
    sb.resume();
}

// Signals that end the run (docs/usage.md, "Stopping and signals"): passed on, and
// whatever is inside is killed after the kill grace.
bool ends_the_run(int sig, bool has_terminal) {
    return sig == SIGTERM || sig == SIGHUP || (sig == SIGINT && !has_terminal);
}

// What direct mode's post-run check found in the workspace (lib/workspace/audit.hpp):
// one line each, after the command's own output, whatever --json says.
void print_workspace_findings(const RunResult& r) {
    for (const auto& f : r.workspace.audit)
        std::fprintf(stderr, "agentjail: workspace: %s: %s; %s\n",
                     f.path.empty() ? "." : f.path.c_str(), util::printable(f.what).c_str(),
                     util::printable(f.action).c_str());
}
}  // namespace

int cmd_learn(const std::vector<std::string>& args) { return cmd_run(args, nullptr, true); }

int cmd_run(const std::vector<std::string>& args, const Error* refused, bool learn) {
    auto ctx = current_context();
    if (!ctx) return report(refused ? *refused : ctx.error());
    // The record's clock starts here; a run that fails from here on still gets one.
    RecordRequest rec = prescan_record_flags(args, ctx->cwd);
    auto inv = parse_invocation(Verb::run, args, *ctx);
    if (!inv) return finish_error(rec, refused ? *refused : inv.error());
    if (inv->policy) apply_stored_secrets(inv->policy->raw());
    for (const auto& w : inv->warnings) say(w);
    if (inv->policy)
        if (auto r = prepare_record(rec, *inv); !r) return finish_error(rec, r.error());
    if (refused) return finish_error(rec, *refused);
    if (inv->help) {
        std::fputs(global_help().c_str(), stdout);
        return 0;
    }
    if (inv->command.empty())
        return usage_error("no command given (usage: agentjail [OPTIONS] [--] COMMAND [ARGS...])");
    if (inv->apply && inv->policy->raw().workspace_mode.value != policy::WorkspaceMode::overlay)
        return finish_error(rec, Error(ErrorKind::invalid_input, EINVAL,
                                       "--apply: only overlay runs have changes to apply (--workspace-mode overlay)"));

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

    if (learn && inv->policy->raw().network.mode.value == policy::NetMode::none) {
        // With no network at all a connect fails before anything sees it: through the
        // proxy, with nothing more allowed, each host the command tries is refused
        // and named.
        inv->policy->raw().network.mode =
            policy::Located<policy::NetMode>{policy::NetMode::proxy, policy::Origin{"agentjail learn", 0, 0, ""}};
        say("learn: the network goes through the proxy, with nothing more allowed, so that each host the "
            "command tries is seen");
    }
    if (inv->policy->raw().network.mode.value == policy::NetMode::host)
        say("warning: the sandbox shares the host's network (" +
            inv->policy->raw().network.mode.origin.describe() + ")");
    SpawnOptions so;
    // Checked against the one plan the run builds (not a second one built here).
    so.check_plan = [&rec](const plan::Plan& p) { return check_result_file(rec, p); };
    so.tty_raw = inv->tty_raw;
    so.filter_pipes = inv->filter_pipes;
    if (inv->no_tty) so.terminal = SpawnOptions::Terminal::pipes;
    so.on_warning = [](const std::string& w) {
        std::fprintf(stderr, "agentjail: warning: %s\n", util::printable(w).c_str());
        std::fflush(stderr);
    };
    if (inv->verbose)
        so.on_plan = [](const std::string& text, const std::vector<std::string>&) {
            // Paths come from the filesystem: no control character of theirs reaches
            // the terminal. The text ends with the plan's notes.
            std::fputs(util::printable(text, true).c_str(), stderr);
            std::fflush(stderr);
        };
    auto sb = Sandbox::spawn(*inv->policy, inv->command, so);
    if (!sb) {
        ::close(sfd);
        return finish_error(rec, sb.error());
    }
    // This thread writes the record and messages on stderr after the command: a
    // reader that went away must cost the record, not agentjail's exit status (141).
    // Blocked here only, after the spawn: the library's threads guard themselves.
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);

    // From here agentjail only waits, forwards signals and answers the filter: what
    // the start touched need not stay resident while the command runs.
    util::release_startup_memory();

    pollfd fds[3] = {{sb->pidfd(), POLLIN, 0}, {sfd, POLLIN, 0}, {sb->job_fd(), POLLIN, 0}};
    for (;;) {
        int n = poll(fds, 3, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            ::close(sfd);
            return finish_error(rec, Error(ErrorKind::internal, errno, "poll failed"));
        }
        if (fds[0].revents != 0) break;  // the sandbox's init exited
        if (fds[2].revents & POLLIN) {
            while (auto c = sb->next_job_change()) {
                // The user's ^Z stopped the command: the job stops as a whole.
                if (c->stopped && c->by_user) suspend(*sb, false);
            }
        }
        // The init closed its end as it exits (its namespaces' teardown can take
        // milliseconds before the pidfd says so): polled on, the hang-up would wake
        // this loop again at once, a thousand times a run.
        if ((fds[2].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0 && (fds[2].revents & POLLIN) == 0) fds[2].fd = -1;
        if (fds[1].revents & POLLIN) {
            signalfd_siginfo si;
            ssize_t r = read(sfd, &si, sizeof si);
            if (r != sizeof si) continue;
            int sig = static_cast<int>(si.ssi_signo);
            // The command is in a session of its own, so whatever the terminal sent
            // our process group (Ctrl-C without a pty of its own) is passed on.
            if (sig == SIGWINCH && sb->has_terminal()) {
                sb->terminal_resized();
                continue;
            }
            if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
                suspend(*sb, true);
                continue;
            }
            // Continued after a SIGSTOP: the sandbox froze itself when it saw us stopped
            // and thaws once the guarded names are checked; only the terminal is ours.
            if (sig == SIGCONT) sb->resume_terminal();
            // ESRCH while the sandbox is exiting is fine: the pidfd tells us next.
            if (ends_the_run(sig, sb->has_terminal()))
                (void)sb->stop(sig);
            else
                (void)sb->kill(sig);
        }
    }
    ::close(sfd);
    auto res = sb->wait();
    if (!res) return finish_error(rec, res.error());
    const WorkspaceOutcome& ws = res->workspace;
    // Direct mode: the host replaced a guarded name during the run (docs/workspace.md).
    // A few lines, then a count: a host loop replacing a name must not flood stderr.
    const size_t shown = std::min<size_t>(res->workspace.reapplied.size(), 5);
    if (res->workspace.reapplied_count > shown)
        std::fprintf(stderr, "agentjail: the host replaced guarded names %llu times during the run (first %zu below)\n",
                     static_cast<unsigned long long>(res->workspace.reapplied_count), shown);
    for (size_t i = 0; i < shown; ++i) {
        const auto& w = res->workspace.reapplied[i];
        char ms[32];
        std::snprintf(ms, sizeof ms, "%.1f", w.window_ms);
        say(w.name + ": " + w.why + " by the host during the run; its " + w.action + " was re-applied in " + ms +
            " ms");
    }
    if (!res->workspace.stopped.empty()) say(res->workspace.stopped);
    print_workspace_findings(*res);
    // Clone and overlay modes: what came back and what in it runs code later, before
    // the record (names in it are escaped by the library: nothing the agent chose acts
    // on the terminal).
    if (!res->workspace.report_text.empty()) std::fputs(res->workspace.report_text.c_str(), stderr);
    if (inv->apply && res->workspace.mode == "overlay" && !res->workspace.run_id.empty())
        (void)apply_at_exit(res->workspace.run_id, false);
    // What was refused and what ended the run, each with what would allow it: before
    // the record, which a --json reader takes as the last lines on stderr. Names in
    // them come from the sandbox (hosts, paths): say() escapes them.
    const auto summary = run::summary_lines(*res);
    if (!summary.empty() && !inv->quiet) {
        say("refused or stopped during the run (`agentjail log` shows this again):");
        for (const auto& line : summary) say("  " + line);  // say() escapes
    }
    keep_run_log(*res, inv->command, ctx->cwd, inv->policy->raw().name, run::exit_status(*res), summary);
    if (learn) {
        const std::string toml = proposed_policy(*res, inv->policy->raw().name, ctx->cwd);
        if (toml.empty()) {
            say("learn: nothing was refused that a policy line would allow");
        } else {
            say("learn: a policy that would have allowed what was refused (review each line; "
                "`agentjail log --policy` prints it again):");
            std::fputs(toml.c_str(), stderr);
        }
    }
    int status = finish_run(rec, *res);
    if (ws.status == "refused" || ws.status == "failed") {
        std::fprintf(stderr, "agentjail: %s mode: the work did not come back (%s): %s (the command's own exit status: %d)\n",
                     ws.mode.c_str(), ws.status.c_str(), util::printable(ws.message).c_str(), status);
        return exit_agentjail_error;
    }
    return status;
}

}  // namespace agentjail::cli
