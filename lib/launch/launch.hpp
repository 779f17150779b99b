// SPDX-License-Identifier: Apache-2.0
// Launch: turns a Plan into a running sandbox (clone, id maps, child steps, init,
// exec) and waits for it. The only module that clones.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"
#include "launch/host_watch.hpp"
#include "plan/plan.hpp"
#include "sys/fd.hpp"
#include "launch/view_server.hpp"

#include <sys/types.h>

#include <sys/ioctl.h>
#include <termios.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace agentjail::launch {

struct Stdio {
    int in = -1;  // -1: inherit the caller's 0, 1, 2 (or, with pty, the pty's slave)
    int out = -1;
    int err = -1;
    // A pty of the sandbox's own (see ChildSpec::pty); its master comes back in
    // Process::take_pty_master().
    bool pty = false;
    const termios* pty_termios = nullptr;
    const winsize* pty_winsize = nullptr;
    // Descriptors of the launcher the sandbox's init must close at once (a relay's ends).
    std::vector<int> close_in_child;
};

// The command stopped (sig > 0) or went on (sig == 0), as the init saw it.
struct JobChange {
    bool stopped = false;
    int sig = 0;
};

// Extension points for the layers above (lib/run builds them in one place from its
// list of the run's components): all optional.
struct Hooks {
    // cgroup v2: clone the init straight into this cgroup (CLONE_INTO_CGROUP).
    int cgroup_fd = -1;
    // The seccomp log, opened by the caller (duplicated here; -1: the launch opens
    // plan.seccomp_log itself, when the plan names one).
    int seccomp_log = -1;
    // Called with the init's pid after clone, before the child is released (it has
    // run nothing yet): the proxy makes its CA here. An error aborts the launch.
    std::function<Result<void>(pid_t)> before_release;
    // Called with the init's pid once it was released to build the root, and before it
    // forks the command (it waits for us): cgroup v1 attaches here, so the kernel's
    // wait in that move (an RCU grace period, milliseconds) overlaps the root's
    // construction instead of adding to it. Nothing of the command has run yet, and
    // every process of the sandbox is forked after it returns. An error aborts.
    std::function<Result<void>(pid_t)> before_fork;
    // Called when the wall clock's grace period ran out, beside SIGKILL to the init
    // (cgroup.kill reaches processes that escaped the pid namespace's reach).
    std::function<void()> on_kill;
    // A watch on the host the supervisor serves for the run (lib/guard's, of the
    // workspace's hidden and protected names), made before the clone so that no
    // change of the host is missed; not owned, it outlives the Process. null: none.
    HostWatch* watch = nullptr;
    // The user's stop of the run (Process::freeze, thaw) through the sandbox's cgroup
    // (cgroup v2's cgroup.freeze): every process stops as it is, the ones a job
    // control shell inside had stopped stay stopped on the thaw. true once the kernel
    // confirmed it within the milliseconds given. null, or false: the init stops and
    // continues every process with signals instead.
    std::function<bool(bool, int)> freeze_group;
    // Called once the sandbox's setup is done: its root is built and the command was
    // exec'd (the setup's reports ended), the supervisor runs. Not called when the
    // launch fails.
    std::function<void()> setup_done;
};

// A running sandbox: the init's pid and pidfd, and the pipe the init reports the
// command's wait status on. Destroying it kills the sandbox (SIGKILL to the init,
// which takes the whole pid namespace with it).
class Supervisor;

class Process {
public:
    Process(pid_t pid, sys::UniqueFd pidfd, sys::UniqueFd status_fd, sys::UniqueFd events_fd = {});
    Process(Process&&) noexcept;
    Process& operator=(Process&&) noexcept;
    ~Process();

    pid_t pid() const noexcept { return pid_; }
    int pidfd() const noexcept { return pidfd_.get(); }

    // Forwards sig to the init, which passes it on to the command.
    Result<void> kill(int sig);
    // Every process of the sandbox stopped (the caller is about to stop), until
    // thaw(); false when the init did not answer (it is exiting).
    bool freeze();
    // Continues a frozen sandbox once the guarded names were checked.
    void thaw();
    // Ends the run: after the kill grace everything inside is killed; a second call
    // kills at once. The caller passed its signal on with kill() first.
    void stop();
    // Blocks until the init exited; returns the command's status.
    Result<RunResult> wait();
    // Not waited for: kills the sandbox and reaps it (the destructor does too). The
    // owner calls it while the run's loop still runs, which the supervisor needs.
    void kill_and_reap() noexcept;

    // Hands over the supervisor (seccomp notifications, wall clock); spawn() does.
    void supervise(std::unique_ptr<Supervisor> s);
    bool supervised() const noexcept { return supervisor_ != nullptr; }

    // The listening socket inside the sandbox's network namespace (Plan::proxy_port),
    // for the network proxy to serve; taken once.
    sys::UniqueFd take_proxy_socket() { return std::move(proxy_socket_); }
    void set_proxy_socket(sys::UniqueFd fd) { proxy_socket_ = std::move(fd); }
    // The model gateways' listeners inside (net::Settings::gateways with `listener`).
    std::vector<sys::UniqueFd> take_gateway_sockets() { return std::move(gateway_sockets_); }
    void add_gateway_socket(sys::UniqueFd fd) { gateway_sockets_.push_back(std::move(fd)); }
    // agentjail's end of the init's socket pair for published ports (Plan::publish).
    sys::UniqueFd take_publish_socket() { return std::move(publish_socket_); }
    void set_publish_socket(sys::UniqueFd fd) { publish_socket_ = std::move(fd); }
    sys::UniqueFd take_pty_master() { return std::move(pty_master_); }
    // A layer in force but lessened, said by the sandbox during its setup: wait()
    // puts each in the result's degraded list.
    void add_degraded(std::string note) { degraded_.push_back(std::move(note)); }
    void set_pty_master(sys::UniqueFd fd) { pty_master_ = std::move(fd); }
    // The workspace's view (plan::MountKind::view), served from the moment the sandbox
    // mounted it; stopped once the run is over.
    void set_view(std::unique_ptr<view::Server> v) { view_ = std::move(v); }
    // The view, for the check after the run (view::Server::could_write); null without one.
    const view::Server* view() const noexcept { return view_.get(); }

    // Readable when the command stopped or went on (job control); -1 when not known.
    int events_fd() const noexcept { return events_fd_.get(); }
    // The next such change, if one is waiting (never blocks).
    std::optional<JobChange> next_job_change();

private:
    pid_t pid_ = -1;
    sys::UniqueFd pidfd_;
    sys::UniqueFd status_fd_;
    std::chrono::steady_clock::time_point started_;
    bool reaped_ = false;
    std::unique_ptr<Supervisor> supervisor_;
    sys::UniqueFd proxy_socket_;
    std::vector<sys::UniqueFd> gateway_sockets_;
    sys::UniqueFd publish_socket_;
    sys::UniqueFd pty_master_;
    sys::UniqueFd events_fd_;
    std::vector<std::string> degraded_;
    std::unique_ptr<view::Server> view_;
};

// Clones the sandbox and runs every setup step; returns once the command has
// been exec'd (or an error naming the failed step: setup and exec failures are
// reported here, never as a silent child exit). The supervisor waits on `loop`, the
// run's event loop, which must run until the Process was waited for or destroyed.
Result<Process> spawn(const plan::Plan& plan, const Stdio& stdio, boost::asio::io_context& loop,
                      const Hooks& hooks = {});

}  // namespace agentjail::launch
