// SPDX-License-Identifier: Apache-2.0
// The C API (include/agentjail/agentjail.h) over the C++ API: opaque handles,
// int returns, an explicit aj_error out-parameter, and one guard per entry point
// so no C++ exception ever unwinds into a C caller.
#include <agentjail/agentjail.h>
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

namespace {

// Reporting "out of memory" must not need memory: this one is never freed.
aj_error oom_error{AJ_ENOMEM, "out of memory", true, ENOMEM};

int code_of(agentjail::ErrorKind kind) {
    using agentjail::ErrorKind;
    switch (kind) {
    case ErrorKind::invalid_input: return AJ_EINVAL;
    case ErrorKind::unsupported: return AJ_EUNSUPPORTED;
    case ErrorKind::setup: return AJ_ESETUP;
    case ErrorKind::command_not_found: return AJ_ENOTFOUND;
    case ErrorKind::command_not_executable: return AJ_ENOEXEC;
    case ErrorKind::internal: return AJ_EINTERNAL;
    }
    return AJ_EINTERNAL;
}

aj_stage stage_of(agentjail::ErrorStage s) {
    using agentjail::ErrorStage;
    switch (s) {
    case ErrorStage::none: return AJ_STAGE_NONE;
    case ErrorStage::policy: return AJ_STAGE_POLICY;
    case ErrorStage::plan: return AJ_STAGE_PLAN;
    case ErrorStage::prepare: return AJ_STAGE_PREPARE;
    case ErrorStage::launch: return AJ_STAGE_LAUNCH;
    case ErrorStage::sandbox: return AJ_STAGE_SANDBOX;
    case ErrorStage::exec: return AJ_STAGE_EXEC;
    case ErrorStage::wait: return AJ_STAGE_WAIT;
    }
    return AJ_STAGE_NONE;
}

int fail(aj_error** err, int code, std::string message, int sys_errno = 0,
         aj_stage stage = AJ_STAGE_NONE, const char* step = "") {
    if (err != nullptr) {
        try {
            *err = new aj_error{code, std::move(message), false, sys_errno, stage, step};
        } catch (...) {
            *err = &oom_error;
        }
    }
    return code;
}

// `otherwise`: the stage to report when the core did not say (a policy override's
// failure is the policy's).
int fail(aj_error** err, const agentjail::Error& e, aj_stage otherwise = AJ_STAGE_NONE) {
    aj_stage stage = e.stage() == agentjail::ErrorStage::none ? otherwise : stage_of(e.stage());
    return fail(err, code_of(e.kind()), e.message(), e.code(), stage, e.step());
}

// The one guard every extern "C" body runs in. Anything thrown (std::bad_alloc
// above all) becomes an error code with its message kept.
template <class F>
int guarded(aj_error** err, F&& body) noexcept {
    if (err != nullptr) *err = nullptr;
    try {
        return body();
    } catch (const std::bad_alloc&) {
        if (err != nullptr) *err = &oom_error;
        return AJ_ENOMEM;
    } catch (const std::exception& e) {
        return fail(err, AJ_EINTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return fail(err, AJ_EINTERNAL, "internal error: unknown exception");
    }
}

// The same guard for functions that cannot report an error: on any exception
// they answer `fallback`.
template <class T, class F>
T guarded_value(T fallback, F&& body) noexcept {
    try {
        return body();
    } catch (...) {
        return fallback;
    }
}

int null_arg(aj_error** err, const char* fn, const char* arg) {
    return fail(err, AJ_EINVAL, std::string(fn) + ": " + arg + " is NULL", EINVAL);
}

// A policy override's outcome.
int status(aj_error** err, const agentjail::Result<void>& r) {
    return r ? AJ_OK : fail(err, r.error(), AJ_STAGE_POLICY);
}

// The overrides that take one string: the policy and the string non-NULL, then the
// C++ API's member of the same name.
using StringOverride = agentjail::Result<void> (agentjail::Policy::*)(const std::string&);
int string_override(const char* fn, aj_policy* policy, const char* arg, const char* arg_name, StringOverride m,
                    aj_error** err) {
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, fn, "policy");
        if (arg == nullptr) return null_arg(err, fn, arg_name);
        return status(err, (policy->policy.*m)(arg));
    });
}

}  // namespace

extern "C" {

AJ_API int aj_version(int* major, int* minor, int* patch) {
    if (major != nullptr) *major = AGENTJAIL_VERSION_MAJOR;
    if (minor != nullptr) *minor = AGENTJAIL_VERSION_MINOR;
    if (patch != nullptr) *patch = AGENTJAIL_VERSION_PATCH;
    return AJ_OK;
}

AJ_API const char* aj_version_string(void) { return AGENTJAIL_VERSION; }

// ---- errors ----

AJ_API const char* aj_error_message(const aj_error* err) {
    return guarded_value<const char*>("",
                                      [&] { return err != nullptr ? err->message.c_str() : ""; });
}

AJ_API int aj_error_code(const aj_error* err) {
    return guarded_value(AJ_EINTERNAL, [&] { return err != nullptr ? err->code : AJ_OK; });
}

AJ_API int aj_error_errno(const aj_error* err) { return err != nullptr ? err->sys_errno : 0; }

AJ_API aj_stage aj_error_stage(const aj_error* err) { return err != nullptr ? err->stage : AJ_STAGE_NONE; }

AJ_API const char* aj_stage_name(aj_stage stage) {
    switch (stage) {
    case AJ_STAGE_NONE: return "none";
    case AJ_STAGE_POLICY: return "policy";
    case AJ_STAGE_PLAN: return "plan";
    case AJ_STAGE_PREPARE: return "prepare";
    case AJ_STAGE_LAUNCH: return "launch";
    case AJ_STAGE_SANDBOX: return "sandbox";
    case AJ_STAGE_EXEC: return "exec";
    case AJ_STAGE_WAIT: return "wait";
    }
    return "unknown";
}

AJ_API const char* aj_error_step(const aj_error* err) { return err != nullptr ? err->step : ""; }

AJ_API void aj_error_free(aj_error* err) {
    guarded_value(0, [&] {
        if (err != nullptr && !err->is_static) delete err;
        return 0;
    });
}

// ---- policies ----


AJ_API int aj_policy_load(aj_policy** out, const char* name_or_path, aj_error** err) {
    return guarded(err, [&] {
        if (out == nullptr) return null_arg(err, "aj_policy_load", "out");
        *out = nullptr;
        if (name_or_path == nullptr) return null_arg(err, "aj_policy_load", "name_or_path");
        auto p = agentjail::Policy::load(name_or_path);
        if (!p) return fail(err, p.error(), AJ_STAGE_POLICY);
        *out = new aj_policy{std::move(*p)};
        return AJ_OK;
    });
}

AJ_API int aj_policy_load_text(aj_policy** out, const char* toml, const char* name, aj_error** err) {
    return guarded(err, [&] {
        if (out == nullptr) return null_arg(err, "aj_policy_load_text", "out");
        *out = nullptr;
        if (toml == nullptr) return null_arg(err, "aj_policy_load_text", "toml");
        auto p = agentjail::Policy::load_text(toml, name != nullptr && name[0] != '\0' ? name : "<text>");
        if (!p) return fail(err, p.error(), AJ_STAGE_POLICY);
        *out = new aj_policy{std::move(*p)};
        return AJ_OK;
    });
}

AJ_API int aj_policy_add_ro(aj_policy* policy, const char* src, const char* dst, aj_error** err) {
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_add_ro", "policy");
        if (src == nullptr) return null_arg(err, "aj_policy_add_ro", "src");
        return status(err, policy->policy.add_ro(src, dst != nullptr ? dst : ""));
    });
}

AJ_API int aj_policy_add_rw(aj_policy* policy, const char* src, const char* dst, aj_error** err) {
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_add_rw", "policy");
        if (src == nullptr) return null_arg(err, "aj_policy_add_rw", "src");
        return status(err, policy->policy.add_rw(src, dst != nullptr ? dst : ""));
    });
}

AJ_API int aj_policy_add_hide(aj_policy* policy, const char* path, aj_error** err) {
    return string_override("aj_policy_add_hide", policy, path, "path", &agentjail::Policy::add_hide, err);
}

AJ_API int aj_policy_add_tmpfs(aj_policy* policy, const char* path, uint64_t size, aj_error** err) {
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_add_tmpfs", "policy");
        if (path == nullptr) return null_arg(err, "aj_policy_add_tmpfs", "path");
        return status(err, policy->policy.add_tmpfs(path, size));
    });
}

AJ_API int aj_policy_set_env(aj_policy* policy, const char* name, const char* value,
                             aj_error** err) {
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_set_env", "policy");
        if (name == nullptr) return null_arg(err, "aj_policy_set_env", "name");
        if (value == nullptr) return null_arg(err, "aj_policy_set_env", "value");
        return status(err, policy->policy.set_env(name, value));
    });
}

AJ_API int aj_policy_pass_env(aj_policy* policy, const char* name, aj_error** err) {
    return string_override("aj_policy_pass_env", policy, name, "name", &agentjail::Policy::pass_env, err);
}

AJ_API int aj_policy_set_workspace(aj_policy* policy, const char* dir, aj_error** err) {
    return string_override("aj_policy_set_workspace", policy, dir, "dir", &agentjail::Policy::set_workspace, err);
}

AJ_API int aj_policy_set_hostname(aj_policy* policy, const char* name, aj_error** err) {
    return string_override("aj_policy_set_hostname", policy, name, "name", &agentjail::Policy::set_hostname, err);
}

AJ_API int aj_policy_set_cwd(aj_policy* policy, const char* dir, aj_error** err) {
    return string_override("aj_policy_set_cwd", policy, dir, "dir", &agentjail::Policy::set_cwd, err);
}

AJ_API int aj_policy_set_limit(aj_policy* policy, const char* key, const char* value,
                               aj_error** err) {
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_set_limit", "policy");
        if (key == nullptr) return null_arg(err, "aj_policy_set_limit", "key");
        if (value == nullptr) return null_arg(err, "aj_policy_set_limit", "value");
        return status(err, policy->policy.set_limit(key, value));
    });
}

AJ_API int aj_policy_set_workspace_mode(aj_policy* policy, const char* mode, aj_error** err) {
    return string_override("aj_policy_set_workspace_mode", policy, mode, "mode", &agentjail::Policy::set_workspace_mode, err);
}

AJ_API int aj_policy_clear_env(aj_policy* policy, aj_error** err) {
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_clear_env", "policy");
        return status(err, policy->policy.clear_env());
    });
}


AJ_API int aj_policy_add_protect(aj_policy* policy, const char* pattern, aj_error** err) {
    return string_override("aj_policy_add_protect", policy, pattern, "pattern", &agentjail::Policy::add_protect, err);
}

AJ_API int aj_policy_remove_protect(aj_policy* policy, const char* pattern, aj_error** err) {
    return string_override("aj_policy_remove_protect", policy, pattern, "pattern",
                           &agentjail::Policy::remove_protect, err);
}

AJ_API int aj_policy_set_net_mode(aj_policy* policy, const char* mode, aj_error** err) {
    return string_override("aj_policy_set_net_mode", policy, mode, "mode", &agentjail::Policy::set_net_mode, err);
}

AJ_API int aj_policy_allow_host(aj_policy* policy, const char* pattern, aj_error** err) {
    return string_override("aj_policy_allow_host", policy, pattern, "pattern", &agentjail::Policy::allow_host, err);
}

AJ_API int aj_policy_deny_host(aj_policy* policy, const char* pattern, aj_error** err) {
    return string_override("aj_policy_deny_host", policy, pattern, "pattern", &agentjail::Policy::deny_host, err);
}

AJ_API int aj_policy_net_preset(aj_policy* policy, const char* name, aj_error** err) {
    return string_override("aj_policy_net_preset", policy, name, "name", &agentjail::Policy::net_preset, err);
}

AJ_API int aj_policy_add_secret(aj_policy* policy, const char* spec, aj_error** err) {
    return string_override("aj_policy_add_secret", policy, spec, "spec", &agentjail::Policy::add_secret, err);
}

AJ_API int aj_policy_set_net_log(aj_policy* policy, const char* path, aj_error** err) {
    return string_override("aj_policy_set_net_log", policy, path, "path", &agentjail::Policy::set_net_log, err);
}

AJ_API int aj_policy_set_seccomp_log(aj_policy* policy, const char* path, aj_error** err) {
    return string_override("aj_policy_set_seccomp_log", policy, path, "path",
                           &agentjail::Policy::set_seccomp_log, err);
}

AJ_API void aj_policy_free(aj_policy* policy) {
    guarded_value(0, [&] {
        delete policy;
        return 0;
    });
}

// ---- running ----

namespace {

// The size of aj_run_options as version v of the header declared it: a caller built
// against an older header owns only that many bytes. 0: not a version we know.
size_t run_options_size(unsigned version) {
    switch (version) {
    case 1: return offsetof(aj_run_options, terminal);
    case 2: return offsetof(aj_run_options, uid);
    case 3: return sizeof(aj_run_options);
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
