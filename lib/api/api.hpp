// SPDX-License-Identifier: Apache-2.0
// The library's C++ API inside the project (the CLI, the tests, the C API over it):
// load a policy, override it, spawn a sandboxed command, wait for its result. Not
// installed and not exported: libagentjail.so's ABI is the C API alone
// (include/agentjail/agentjail.h), and embedders' C++ header is the header-only
// layer over it (include/agentjail/agentjail.hpp).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/error.hpp"
#include "base/outcome.hpp"
#include "base/version.hpp"
#include "run/options.hpp"

namespace agentjail {
namespace policy {
struct Policy;  // the library's internal policy data (lib/policy/policy.hpp)
}


// A loaded, merged and validated policy plus the overrides applied to it.
class Policy {
public:
    // A built-in name ("default", "minimal", ...) or a path to a TOML file.
    static Result<Policy> load(const std::string& name_or_path);
    // TOML text; name: what messages call it.
    static Result<Policy> load_text(const std::string& toml, const std::string& name);

    Policy(const Policy&);
    Policy(Policy&&) noexcept;
    Policy& operator=(const Policy&);
    Policy& operator=(Policy&&) noexcept;
    ~Policy();

    // Overrides, as the CLI flags of the same names. dst empty: same path inside.
    Result<void> add_ro(const std::string& src, const std::string& dst = {});
    Result<void> add_rw(const std::string& src, const std::string& dst = {});
    Result<void> add_hide(const std::string& path);
    Result<void> add_socket(const std::string& path);
    Result<void> add_tmpfs(const std::string& path, std::uint64_t size_bytes = 0);
    // value empty and pass_through true: take NAME from the caller's environment.
    Result<void> set_env(const std::string& name, const std::string& value);
    Result<void> pass_env(const std::string& name);
    // Nothing of the caller's environment passes (the allow list emptied).
    Result<void> clear_env();
    Result<void> set_workspace(const std::string& dir);
    Result<void> set_hostname(const std::string& name);
    Result<void> set_cwd(const std::string& dir);
    // A [limits] key with its value spelt as in a policy file or on the command line:
    // "memory" "2G", "swap" "0", "cpus" "1.5", "pids" "256", "timeout" "30m",
    // "kill_grace" "5s", "cpu_time" "10m", "nofile" "1024", "fsize" "1G",
    // "tmpfs_size" "512M"; "max" lifts a limit; "allow_degraded" "true" runs with
    // rlimits only where no cgroup can be made (RunResult::degraded says so).
    Result<void> set_limit(const std::string& key, const std::string& value);
    // [workspace]: "direct", "clone" or "overlay" (docs/workspace.md); a path under the
    // workspace made read-only inside (** allowed); one of the policy's protected
    // paths taken out (an error if the policy has no such entry).
    Result<void> set_workspace_mode(const std::string& mode);
    Result<void> set_workspace_view(const std::string& view);  // "fuse" | "mounts"
    Result<void> add_protect(const std::string& pattern);
    Result<void> remove_protect(const std::string& pattern);
    // The network and the logs, as the flags --net, --allow-host, --deny-host,
    // --net-preset, --secret, --net-log, --seccomp-log (paths absolute or ~/...).
    Result<void> set_net_mode(const std::string& mode);
    Result<void> allow_host(const std::string& pattern);
    Result<void> deny_host(const std::string& pattern);
    Result<void> net_preset(const std::string& name);
    Result<void> add_secret(const std::string& spec);
    Result<void> set_net_log(const std::string& path);
    Result<void> set_seccomp_log(const std::string& path);

    policy::Policy& raw();
    const policy::Policy& raw() const;

private:
    explicit Policy(std::unique_ptr<policy::Policy> p);
    std::unique_ptr<policy::Policy> p_;
};

// Where the command's 0, 1, 2 lead (-1: the caller's own 0, 1, 2). The command never
// holds these descriptors: it gets pipes, or a pty of the sandbox's own where one of
// them is a terminal, and a thread of agentjail copies between them and the caller's
// (the descriptors are duplicated: the caller may close its own after spawn()).




namespace run {
class Run;
}

// A running sandbox. Destroying it before wait() kills the whole sandbox.
class Sandbox {
public:
    static Result<Sandbox> spawn(const Policy& policy, const std::vector<std::string>& argv,
                                 const SpawnOptions& options = {});
    Sandbox(Sandbox&&) noexcept;
    Sandbox& operator=(Sandbox&&) noexcept;
    ~Sandbox();

    // The sandbox's init, as a pid of the caller's pid namespace.
    pid_t pid() const noexcept;
    // A pidfd for the init, to poll beside other events; readable once it exited.
    int pidfd() const noexcept;
    // Delivers sig to the command (through the sandbox's init).
    Result<void> kill(int sig);
    // Ends the run on time: sig to the command now, and everything inside killed
    // once the policy's kill grace ([limits] kill_grace) has passed; a second stop()
    // kills at once. The result says which signal and whether it came to a kill.
    Result<void> stop(int sig);
    // Waits for the command; afterwards nothing of the sandbox is left (and all it
    // wrote has been copied to the caller's descriptors).
    Result<RunResult> wait();

    // Job control, for a caller that runs the sandbox from a terminal (the CLI):
    // job_fd() is readable when next_job_change() has news (-1: none to poll). It
    // hangs up (POLLHUP) when the sandbox's init exits, a moment before pidfd() says
    // so: stop polling it then.
    int job_fd() const noexcept;
    std::optional<JobChange> next_job_change();
    // Whether the command runs on a pty of the sandbox's own.
    bool has_terminal() const noexcept;
    // The caller's terminal changed size: the pty follows (SIGWINCH inside).
    void terminal_resized();
    // Before the caller stops itself: every process of the sandbox is stopped, with
    // the user's terminal as it was before the run. false: the sandbox did not
    // confirm the stop (it is exiting).
    bool suspend();
    // After the caller was continued: raw mode again, the size re-read; the guarded
    // names are checked for what the host changed meanwhile, then the sandbox goes on.
    void resume();
    // Only the terminal, around a stop the caller did not choose (SIGSTOP: the
    // sandbox froze itself and thaws once the caller runs again).
    void suspend_terminal();
    void resume_terminal();

private:
    explicit Sandbox(std::unique_ptr<run::Run> r);
    std::unique_ptr<run::Run> r_;
};


}  // namespace agentjail
