// SPDX-License-Identifier: Apache-2.0
// The C API's running half (capi.cc has the rest): aj_run_options of every version,
// aj_spawn, the sandbox handle (owned by the process that spawned it) and the result's
// accessors, each entry point inside the one guard of guard.hpp.
#include <agentjail/agentjail.h>
#include "capi/guard.hpp"
#include "capi/handles.hpp"

#include "run/record.hpp"
#include "sys/host_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace agentjail::capi::detail;

extern "C" {

// ---- running ----

namespace {

// The size of aj_run_options as version v of the header declared it: a caller built
// against an older header owns only that many bytes. 0: not a version we know.
size_t run_options_size(unsigned version) {
    switch (version) {
    case 1: return offsetof(aj_run_options, terminal);
    case 2: return offsetof(aj_run_options, uid);
    case 3: return offsetof(aj_run_options, filter_pipes);
    case 4: return sizeof(aj_run_options);
    default: return 0;
    }
}

}  // namespace

AJ_API int aj_run_options_init(aj_run_options* opts, unsigned int version) {
    return guarded(nullptr, [&] {
        if (opts == nullptr || run_options_size(version) == 0) return AJ_EINVAL;
        aj_run_options d = AJ_RUN_OPTIONS_INIT;
        d.version = version;
        std::memcpy(opts, &d, run_options_size(version));
        return AJ_OK;
    });
}

namespace {

// aj_run_options of any version this library knows -> SpawnOptions. Fields past the
// caller's version keep their defaults.
int spawn_options(agentjail::SpawnOptions& so, const aj_run_options& o, aj_error** err) {
    using agentjail::CgroupPlacement;
    // A struct from a newer header may carry fields whose meaning this library does
    // not know: refuse it rather than silently ignore them.
    if (run_options_size(o.version) == 0)
        return fail(err, AJ_EINVAL,
                    "aj_spawn: aj_run_options version " + std::to_string(o.version) +
                        " is not supported (this library knows 1.." + std::to_string(AJ_RUN_OPTIONS_VERSION) +
                        ")",
                    EINVAL);
    so.stdin_fd = o.stdin_fd;
    so.stdout_fd = o.stdout_fd;
    so.stderr_fd = o.stderr_fd;
    if (o.version >= 2) {
        if (o.terminal != AJ_TERMINAL_AUTO && o.terminal != AJ_TERMINAL_PIPES)
            return fail(err, AJ_EINVAL,
                        "aj_spawn: aj_run_options.terminal " + std::to_string(o.terminal) +
                            " is neither AJ_TERMINAL_AUTO nor AJ_TERMINAL_PIPES",
                        EINVAL);
        if (o.terminal == AJ_TERMINAL_PIPES) so.terminal = agentjail::SpawnOptions::Terminal::pipes;
        so.tty_raw = o.tty_raw != 0;
    }
    // The command never runs as host root by accident: a root caller names the
    // identity, or the policy allows root inside.
    so.root_needs_identity = true;
    so.cgroup = CgroupPlacement::caller;
    if (o.version < 3) return AJ_OK;
    // -1: the caller's; otherwise an id the kernel can map ((uid_t)-1 it cannot).
    for (auto [v, what] : {std::pair{o.uid, "uid"}, std::pair{o.gid, "gid"}})
        if (v != -1 && (v < 0 || v >= 0xffffffffLL))
            return fail(err, AJ_EINVAL,
                        std::string("aj_spawn: aj_run_options.") + what + " " + std::to_string(v) +
                            " is not a valid id (-1: the caller's)",
                        EINVAL);
    if (o.uid != -1) so.uid = static_cast<uid_t>(o.uid);
    if (o.gid != -1) so.gid = static_cast<gid_t>(o.gid);
    if (o.envp != nullptr) {
        so.environ.emplace();
        for (const char* const* e = o.envp; *e != nullptr; ++e) so.environ->emplace_back(*e);
    }
    if (o.home != nullptr) so.home = o.home;
    if (o.cwd != nullptr) so.cwd = o.cwd;
    if (o.n_pass_fds > 0 && o.pass_fds == nullptr) return null_arg(err, "aj_spawn", "aj_run_options.pass_fds");
    so.pass_fds.assign(o.pass_fds, o.pass_fds + o.n_pass_fds);
    switch (o.cgroup) {
    case AJ_CGROUP_CALLER: so.cgroup = CgroupPlacement::caller; break;
    case AJ_CGROUP_UNDER: so.cgroup = CgroupPlacement::under; break;
    case AJ_CGROUP_AUTO: so.cgroup = CgroupPlacement::automatic; break;
    default:
        return fail(err, AJ_EINVAL,
                    "aj_spawn: aj_run_options.cgroup " + std::to_string(o.cgroup) +
                        " is none of AJ_CGROUP_CALLER, AJ_CGROUP_UNDER, AJ_CGROUP_AUTO",
                    EINVAL);
    }
    if (o.cgroup_parent != nullptr) so.cgroup_parent = o.cgroup_parent;
    if (o.result_path != nullptr) so.result_file = o.result_path;
    if (o.log != nullptr) {
        auto log = o.log;
        void* payload = o.log_payload;
        so.on_warning = [log, payload](const std::string& w) { log(payload, AJ_LOG_WARNING, w.c_str()); };
        so.on_plan = [log, payload](const std::string& plan, const std::vector<std::string>& notes) {
            for (const auto& n : notes) log(payload, AJ_LOG_NOTE, n.c_str());
            log(payload, AJ_LOG_PLAN, plan.c_str());
        };
    }
    if (o.version < 4) return AJ_OK;
    if (o.filter_pipes != 0 && so.tty_raw)
        return fail(err, AJ_EINVAL, "aj_spawn: aj_run_options.filter_pipes and tty_raw contradict each other", EINVAL);
    so.filter_pipes = o.filter_pipes != 0;
    return AJ_OK;
}

// The process that made a handle is the only one that may act on it: a child of
// fork() shares the parent's pids and descriptors, but none of its threads.
int foreign(aj_error** err, const char* fn, const aj_sandbox* sb) {
    return fail(err, AJ_EINVAL,
                std::string(fn) + ": the sandbox belongs to process " + std::to_string(sb->owner) +
                    ", not to this child of fork() (free it here: that only forgets it)",
                EPERM);
}

}  // namespace

AJ_API int aj_spawn(aj_sandbox** out, const aj_policy* policy, const char* const* argv,
                    const aj_run_options* opts, aj_error** err) {
    return guarded(err, [&] {
        if (out == nullptr) return null_arg(err, "aj_spawn", "out");
        *out = nullptr;
        if (policy == nullptr) return null_arg(err, "aj_spawn", "policy");
        if (argv == nullptr) return null_arg(err, "aj_spawn", "argv");
        if (argv[0] == nullptr || argv[0][0] == '\0')
            return fail(err, AJ_EINVAL, "aj_spawn: argv holds no command", EINVAL);
        agentjail::SpawnOptions so;
        aj_run_options defaults = AJ_RUN_OPTIONS_INIT;
        if (int rc = spawn_options(so, opts != nullptr ? *opts : defaults, err); rc != AJ_OK) return rc;
        std::vector<std::string> args;
        for (const char* const* a = argv; *a != nullptr; ++a) args.emplace_back(*a);
        auto start = std::chrono::system_clock::now();
        auto t0 = std::chrono::steady_clock::now();
        auto sb = agentjail::Sandbox::spawn(policy->policy, args, so);
        if (!sb) {
            // A scheduler reads the record whatever happened: the failure gets its XX
            // record too, once the path passed the plan's checks (a failure from the
            // preparation on; a refused path is never written).
            using agentjail::ErrorStage;
            const auto& e = sb.error();
            const bool checked = e.stage() == ErrorStage::prepare || e.stage() == ErrorStage::launch ||
                                 e.stage() == ErrorStage::sandbox || e.stage() == ErrorStage::exec;
            if (!so.result_file.empty() && checked) {
                double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                (void)agentjail::sys::replace_host_file(
                    so.result_file, agentjail::run::error_record_json(e, start, wall, std::nullopt, 2) + "\n", {},
                    "result file");
            }
            return fail(err, e);
        }
        auto held = std::make_unique<agentjail::Sandbox>(std::move(*sb));
        *out = new aj_sandbox{held.get(), start, ::getpid()};
        held.release();
        return AJ_OK;
    });
}

AJ_API int aj_sandbox_pid(const aj_sandbox* sb) {
    return guarded_value(-1, [&] { return sb != nullptr ? static_cast<int>(sb->sandbox->pid()) : -1; });
}

AJ_API int aj_sandbox_pidfd(const aj_sandbox* sb) {
    return guarded_value(-1, [&] { return sb != nullptr ? sb->sandbox->pidfd() : -1; });
}

AJ_API int aj_sandbox_kill(aj_sandbox* sb, int sig, aj_error** err) {
    return guarded(err, [&] {
        if (sb == nullptr) return null_arg(err, "aj_sandbox_kill", "sb");
        if (sb->owner != ::getpid()) return foreign(err, "aj_sandbox_kill", sb);
        return status(err, sb->sandbox->kill(sig));
    });
}

AJ_API int aj_sandbox_stop(aj_sandbox* sb, int sig, aj_error** err) {
    return guarded(err, [&] {
        if (sb == nullptr) return null_arg(err, "aj_sandbox_stop", "sb");
        if (sb->owner != ::getpid()) return foreign(err, "aj_sandbox_stop", sb);
        return status(err, sb->sandbox->stop(sig));
    });
}

AJ_API int aj_sandbox_wait(aj_result** out, aj_sandbox* sb, aj_error** err) {
    return guarded(err, [&] {
        if (out == nullptr) return null_arg(err, "aj_sandbox_wait", "out");
        *out = nullptr;
        if (sb == nullptr) return null_arg(err, "aj_sandbox_wait", "sb");
        if (sb->owner != ::getpid()) return foreign(err, "aj_sandbox_wait", sb);
        auto r = sb->sandbox->wait();
        if (!r) return fail(err, r.error(), AJ_STAGE_WAIT);
        *out = new aj_result{*r, sb->start};
        return AJ_OK;
    });
}

AJ_API void aj_sandbox_free(aj_sandbox* sb) {
    guarded_value(0, [&] {
        if (sb == nullptr) return 0;
        // In a child of fork(): forget it. The sandbox, its supervisor and relay
        // threads are the parent's; destroying them here would SIGKILL the parent's
        // run and join threads this process does not have.
        if (sb->owner == ::getpid()) delete sb->sandbox;  // ~Sandbox kills a sandbox still running
        delete sb;
        return 0;
    });
}

AJ_API int aj_result_exited(const aj_result* res) {
    return guarded_value(0, [&] { return res != nullptr && res->result.exited ? 1 : 0; });
}

AJ_API int aj_result_exit_code(const aj_result* res) {
    return guarded_value(0, [&] { return res != nullptr ? res->result.exit_code : 0; });
}

AJ_API int aj_result_signal(const aj_result* res) {
    return guarded_value(
        0, [&] { return res != nullptr && !res->result.exited ? res->result.term_signal : 0; });
}

AJ_API double aj_result_wall_time(const aj_result* res) {
    return guarded_value(0.0, [&] { return res != nullptr ? res->result.wall_time_s : 0.0; });
}

AJ_API int aj_result_timed_out(const aj_result* res) {
    return guarded_value(0, [&] { return res != nullptr && res->result.timed_out ? 1 : 0; });
}

AJ_API int aj_result_exit_status(const aj_result* res) {
    // The rule lives in run::exit_status, which the CLI's exit and the record's
    // exit_status use too. A NULL result is agentjail's failure, never a success.
    return guarded_value(
        125, [&] { return res != nullptr ? agentjail::run::exit_status(res->result) : 125; });
}

AJ_API int aj_result_stat(uint64_t* out, const aj_result* res, aj_stat stat, aj_error** err) {
    return guarded(err, [&] {
        if (out == nullptr) return null_arg(err, "aj_result_stat", "out");
        *out = 0;
        if (res == nullptr) return null_arg(err, "aj_result_stat", "res");
        const agentjail::RunResult& r = res->result;
        auto us = [](double s) { return s > 0 ? static_cast<uint64_t>(s * 1e6 + 0.5) : uint64_t{0}; };
        switch (stat) {
        case AJ_STAT_MEMORY_PEAK_BYTES: *out = r.memory_peak_bytes; break;
        case AJ_STAT_OOM_KILLS: *out = r.oom_kill_count; break;
        case AJ_STAT_PIDS_PEAK: *out = r.pids_peak; break;
        case AJ_STAT_PIDS_MAX_HITS: *out = r.pids_max_hits; break;
        case AJ_STAT_CPU_USER_US: *out = us(r.cpu_user_s); break;
        case AJ_STAT_CPU_SYSTEM_US: *out = us(r.cpu_system_s); break;
        case AJ_STAT_CPU_THROTTLED_US: *out = r.cpu_throttled_us; break;
        case AJ_STAT_SECCOMP_DENIALS: *out = r.seccomp_denials; break;
        case AJ_STAT_NETWORK_DENIALS: *out = r.network_denials; break;
        case AJ_STAT_NETWORK_ALLOWED: *out = r.network_allowed; break;
        default:
            return fail(err, AJ_EINVAL, "aj_result_stat: unknown stat " + std::to_string(static_cast<int>(stat)));
        }
        return AJ_OK;
    });
}

AJ_API int aj_result_json(char** out, const aj_result* res, aj_error** err) {
    return guarded(err, [&] {
        if (out == nullptr) return null_arg(err, "aj_result_json", "out");
        *out = nullptr;
        if (res == nullptr) return null_arg(err, "aj_result_json", "res");
        std::string json = agentjail::run::record_json(res->result, res->start, -1);
        // malloc, not new: a C caller may free it with either aj_string_free or free().
        char* s = static_cast<char*>(std::malloc(json.size() + 1));
        if (s == nullptr) throw std::bad_alloc();
        std::memcpy(s, json.c_str(), json.size() + 1);
        *out = s;
        return AJ_OK;
    });
}

AJ_API void aj_string_free(char* s) { std::free(s); }

AJ_API void aj_result_free(aj_result* res) {
    guarded_value(0, [&] {
        delete res;
        return 0;
    });
}

}  // extern "C"
