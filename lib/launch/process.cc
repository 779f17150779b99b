// SPDX-License-Identifier: Apache-2.0
// A launched sandbox (launch::Process): signals, the freeze and the stop through its
// supervisor, job-control news, and the wait that reaps the init and joins the
// supervisor.
#include "launch/launch.hpp"

#include "launch/child.hpp"
#include "launch/supervisor.hpp"
#include "sys/syscalls.hpp"
#include "util/fault.hpp"
#include "util/strings.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agentjail::launch {

Process::Process(pid_t pid, sys::UniqueFd pidfd, sys::UniqueFd status_fd, sys::UniqueFd events_fd)
    : pid_(pid), pidfd_(std::move(pidfd)), status_fd_(std::move(status_fd)),
      started_(std::chrono::steady_clock::now()), events_fd_(std::move(events_fd)) {}

Process::Process(Process&& o) noexcept
    : pid_(o.pid_), pidfd_(std::move(o.pidfd_)), status_fd_(std::move(o.status_fd_)),
      started_(o.started_), reaped_(o.reaped_), supervisor_(std::move(o.supervisor_)),
      proxy_socket_(std::move(o.proxy_socket_)), gateway_sockets_(std::move(o.gateway_sockets_)),
      publish_socket_(std::move(o.publish_socket_)),
      pty_master_(std::move(o.pty_master_)),
      events_fd_(std::move(o.events_fd_)), degraded_(std::move(o.degraded_)), view_(std::move(o.view_)) {
    o.reaped_ = true;
}

std::optional<JobChange> Process::next_job_change() {
    if (!events_fd_) return std::nullopt;
    JobEvent e{};
    ssize_t n = ::read(events_fd_.get(), &e, sizeof e);
    if (n != static_cast<ssize_t>(sizeof e)) return std::nullopt;
    JobChange c;
    c.stopped = e.kind == JobEvent::stopped;
    c.sig = c.stopped ? e.sig : 0;
    return c;
}

Process& Process::operator=(Process&& o) noexcept {
    if (this != &o) {
        kill_and_reap();
        pid_ = o.pid_;
        pidfd_ = std::move(o.pidfd_);
        status_fd_ = std::move(o.status_fd_);
        started_ = o.started_;
        reaped_ = o.reaped_;
        supervisor_ = std::move(o.supervisor_);
        proxy_socket_ = std::move(o.proxy_socket_);
        gateway_sockets_ = std::move(o.gateway_sockets_);
        publish_socket_ = std::move(o.publish_socket_);
        pty_master_ = std::move(o.pty_master_);
        events_fd_ = std::move(o.events_fd_);
        degraded_ = std::move(o.degraded_);
        view_ = std::move(o.view_);
        o.reaped_ = true;
    }
    return *this;
}

Process::~Process() { kill_and_reap(); }

void Process::kill_and_reap() noexcept {
    if (!reaped_ && pidfd_) {
        // Killing the init kills the whole pid namespace with it.
        sys::pidfd_send_signal(pidfd_.get(), SIGKILL);
        (void)wait();
    }
    supervisor_.reset();
}

void Process::supervise(std::unique_ptr<Supervisor> s) { supervisor_ = std::move(s); }

Result<void> Process::kill(int sig) {
    if (reaped_) return Error(ErrorKind::invalid_input, ESRCH, "the sandbox has already exited");
    int r = sys::pidfd_send_signal(pidfd_.get(), sig);
    if (r < 0 && r != -ESRCH) return util::errno_error(ErrorKind::setup, -r, "pidfd_send_signal");
    return {};
}

bool Process::freeze() {
    if (reaped_ || !supervisor_) return false;
    // The init answers at once unless it is exiting; a second is plenty.
    return supervisor_->freeze(1000);
}

void Process::thaw() {
    if (!reaped_ && supervisor_) supervisor_->thaw();
}

void Process::stop() {
    if (!reaped_ && supervisor_) supervisor_->stop();
}

Result<RunResult> Process::wait() {
    if (reaped_) return Error(ErrorKind::invalid_input, ECHILD, "the sandbox was already waited for");
    siginfo_t si;
    std::memset(&si, 0, sizeof si);
    while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &si, WEXITED | __WALL) < 0) {
        if (errno != EINTR) return util::errno_error(ErrorKind::internal, errno, "waitid");
    }
    reaped_ = true;
    RunResult res;
    res.degraded = degraded_;
    res.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (supervisor_) {
        supervisor_->join();
        res.timed_out = supervisor_->timed_out();
        res.stop_killed = supervisor_->stop_killed();
        res.seccomp_denials = supervisor_->denials();
        res.refusals = supervisor_->refusals().list();
        res.refusals_more = supervisor_->refusals().more();
        res.internal_error = supervisor_->failure();
    }
    if (view_) {
        // The sandbox is gone, and its mount with it: what the view refused joins the
        // filter's and the proxy's refusals.
        view_->stop();
        const RefusalTally t = view_->refusals();
        res.refusals.insert(res.refusals.end(), t.list().begin(), t.list().end());
        res.refusals_more += t.more();
    }
    // The sandbox is gone: what the run made on the host for it (placeholders, the
    // proxy's CA directory) is removed after this, by the run's components; a test
    // kills the launcher here, and the next run's sweep must find it all.
    (void)fault::hit("run.before-cleanup");
    int status = 0;
    ssize_t n;
    do {
        n = ::read(status_fd_.get(), &status, sizeof status);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof status)) {
        res.exited = WIFEXITED(status);
        res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
        res.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        return res;
    }
    // The init died without a report: killed from outside (or by us).
    if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED) {
        res.exited = false;
        res.term_signal = si.si_status;
    } else {
        res.exited = true;
        res.exit_code = si.si_status;
    }
    return res;
}

}  // namespace agentjail::launch
