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

namespace agentjail {
namespace policy {
struct Policy;  // the library's internal policy data (lib/policy/policy.hpp)
}
namespace plan {
struct Plan;  // what a run carries out (lib/plan/plan.hpp)
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

struct SpawnOptions {
    int stdin_fd = -1;
    int stdout_fd = -1;
    int stderr_fd = -1;
    enum class Terminal {
        automatic,  // a pty when any of the three is a terminal, pipes otherwise
        pipes,      // pipes only: the command sees no terminal
    };
    Terminal terminal = Terminal::automatic;
    // Pass every escape sequence to the terminal. By default the relay drops those
    // that act on the user's machine (OSC 52 clipboard, file:// links, title and
    // colour reports, DCS/APC passthrough).
    bool tty_raw = false;
    // Called during spawn(), before the sandbox starts and before the terminal is
    // touched, with each thing the caller's user must be told although the run goes
    // on (a secret's token that has expired, with what to do); one line each.
    std::function<void(const std::string&)> on_warning;
    // Called during spawn(), once the plan is built and before anything of it is
    // carried out, with the plan as `agentjail explain` prints it and its notes: the
    // plan this run carries out, not a second one built to be shown (the CLI's -v).
    std::function<void(const std::string& plan_text, const std::vector<std::string>& notes)> on_plan;
    // The project's own callers (the CLI): a check of the plan the run builds, before
    // anything is made; an error ends the spawn with it.
    std::function<Result<void>(const plan::Plan&)> check_plan;

    // The identity the command runs as (both or neither). Only root may name one
    // other than its own; the command then owns its files as that uid/gid, with no
    // supplementary group, and ~ and HOME are that user's (passwd) unless home says.
    std::optional<uid_t> uid;
    std::optional<gid_t> gid;
    // A root caller without uid/gid is refused unless the policy says
    // [process] allow_root (the C API sets this; the CLI, run by a person, does not).
    bool root_needs_identity = false;
    // The caller's side of the run, which the CLI takes from its own process: the
    // environment the policy's [environment] allow passes names from (NAME=VALUE;
    // nullopt: this process's), the home directory (~, HOME; empty: HOME or passwd),
    // the caller's directory (the workspace when the policy names none, and what
    // relative paths start from; empty: this process's).
    std::optional<std::vector<std::string>> environ;
    std::string home;
    std::string cwd;
    // Descriptors of the caller passed to the command at the same numbers (>= 3).
    std::vector<int> pass_fds;
    CgroupPlacement cgroup = CgroupPlacement::automatic;
    std::string cgroup_parent;  // under: a cgroup path as /proc/self/cgroup shows it
    // Where wait() writes the result record (as `agentjail --result-file`); empty: none.
    std::string result_file;
};

// The command stopped (job control) or went on.
struct JobChange {
    bool stopped = false;  // false: it continued
    int sig = 0;           // the signal that stopped it
    // The user typed the suspend character (^Z) just before: the stop is theirs to
    // act on. A stop the sandbox caused itself never sets this.
    bool by_user = false;
};


class Launched;

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
    // job_fd() is readable when next_job_change() has news (-1: none to poll).
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
    explicit Sandbox(std::unique_ptr<Launched> l);
    std::unique_ptr<Launched> l_;
};


}  // namespace agentjail
