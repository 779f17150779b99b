// SPDX-License-Identifier: Apache-2.0
// The C API (include/agentjail/agentjail.h) over the C++ API: opaque handles,
// int returns, an explicit aj_error out-parameter, and one guard per entry point
// so no C++ exception ever unwinds into a C caller.
#include <agentjail/agentjail.h>
#include <agentjail/agentjail.hpp>

#include "limits/record.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

struct aj_policy {
    agentjail::Policy policy;
};

struct aj_sandbox {
    agentjail::Sandbox sandbox;
    std::chrono::system_clock::time_point start;  // for the result record
};

struct aj_result {
    agentjail::RunResult result;
    std::chrono::system_clock::time_point start;
};

struct aj_error {
    int code;
    std::string message;
    bool is_static;  // the preallocated out-of-memory error: never deleted
};

namespace {

// Reporting "out of memory" must not need memory: this one is never freed.
aj_error oom_error{AJ_ENOMEM, "out of memory", true};

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

int fail(aj_error** err, int code, std::string message) {
    if (err != nullptr) {
        try {
            *err = new aj_error{code, std::move(message), false};
        } catch (...) {
            *err = &oom_error;
        }
    }
    return code;
}

int fail(aj_error** err, const agentjail::Error& e) {
    return fail(err, code_of(e.kind()), e.message());
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
    return fail(err, AJ_EINVAL, std::string(fn) + ": " + arg + " is NULL");
}

int status(aj_error** err, const agentjail::Result<void>& r) {
    return r ? AJ_OK : fail(err, r.error());
}

}  // namespace

extern "C" {

AJ_API const char* aj_version(void) {
    return guarded_value<const char*>("", [] { return agentjail::version(); });
}

// ---- errors ----

AJ_API const char* aj_error_message(const aj_error* err) {
    return guarded_value<const char*>("",
                                      [&] { return err != nullptr ? err->message.c_str() : ""; });
}

AJ_API int aj_error_code(const aj_error* err) {
    return guarded_value(AJ_EINTERNAL, [&] { return err != nullptr ? err->code : AJ_OK; });
}

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
        if (!p) return fail(err, p.error());
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
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_add_hide", "policy");
        if (path == nullptr) return null_arg(err, "aj_policy_add_hide", "path");
        return status(err, policy->policy.add_hide(path));
    });
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
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_pass_env", "policy");
        if (name == nullptr) return null_arg(err, "aj_policy_pass_env", "name");
        return status(err, policy->policy.pass_env(name));
    });
}

AJ_API int aj_policy_set_workspace(aj_policy* policy, const char* dir, aj_error** err) {
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_set_workspace", "policy");
        if (dir == nullptr) return null_arg(err, "aj_policy_set_workspace", "dir");
        return status(err, policy->policy.set_workspace(dir));
    });
}

AJ_API int aj_policy_set_hostname(aj_policy* policy, const char* name, aj_error** err) {
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_set_hostname", "policy");
        if (name == nullptr) return null_arg(err, "aj_policy_set_hostname", "name");
        return status(err, policy->policy.set_hostname(name));
    });
}

AJ_API int aj_policy_set_cwd(aj_policy* policy, const char* dir, aj_error** err) {
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_set_cwd", "policy");
        if (dir == nullptr) return null_arg(err, "aj_policy_set_cwd", "dir");
        return status(err, policy->policy.set_cwd(dir));
    });
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
    return guarded(err, [&] {
        if (policy == nullptr) return null_arg(err, "aj_policy_set_workspace_mode", "policy");
        if (mode == nullptr) return null_arg(err, "aj_policy_set_workspace_mode", "mode");
        return status(err, policy->policy.set_workspace_mode(mode));
    });
}

AJ_API void aj_policy_free(aj_policy* policy) {
    guarded_value(0, [&] {
        delete policy;
        return 0;
    });
}

// ---- running ----

AJ_API int aj_spawn(aj_sandbox** out, const aj_policy* policy, const char* const* argv,
                    const aj_run_options* opts, aj_error** err) {
    return guarded(err, [&] {
        if (out == nullptr) return null_arg(err, "aj_spawn", "out");
        *out = nullptr;
        if (policy == nullptr) return null_arg(err, "aj_spawn", "policy");
        if (argv == nullptr) return null_arg(err, "aj_spawn", "argv");
        if (argv[0] == nullptr || argv[0][0] == '\0')
            return fail(err, AJ_EINVAL, "aj_spawn: argv holds no command");
        agentjail::SpawnOptions so;
        if (opts != nullptr) {
            // A struct from a newer header may carry fields whose meaning this
            // library does not know: refuse it rather than silently ignore them.
            if (opts->version == 0 || opts->version > AJ_RUN_OPTIONS_VERSION)
                return fail(err, AJ_EINVAL,
                            "aj_spawn: aj_run_options version " + std::to_string(opts->version) +
                                " is not supported (this library knows 1.." +
                                std::to_string(AJ_RUN_OPTIONS_VERSION) + ")");
            so.stdin_fd = opts->stdin_fd;
            so.stdout_fd = opts->stdout_fd;
            so.stderr_fd = opts->stderr_fd;
            if (opts->version >= 2) {
                if (opts->terminal != AJ_TERMINAL_AUTO && opts->terminal != AJ_TERMINAL_PIPES)
                    return fail(err, AJ_EINVAL,
                                "aj_spawn: aj_run_options.terminal " + std::to_string(opts->terminal) +
                                    " is neither AJ_TERMINAL_AUTO nor AJ_TERMINAL_PIPES");
                if (opts->terminal == AJ_TERMINAL_PIPES) so.terminal = agentjail::SpawnOptions::Terminal::pipes;
                so.tty_raw = opts->tty_raw != 0;
            }
        }
        std::vector<std::string> args;
        for (const char* const* a = argv; *a != nullptr; ++a) args.emplace_back(*a);
        auto start = std::chrono::system_clock::now();
        auto sb = agentjail::Sandbox::spawn(policy->policy, args, so);
        if (!sb) return fail(err, sb.error());
        *out = new aj_sandbox{std::move(*sb), start};
        return AJ_OK;
    });
}

AJ_API int aj_sandbox_pid(const aj_sandbox* sb) {
    return guarded_value(-1,
                         [&] { return sb != nullptr ? static_cast<int>(sb->sandbox.pid()) : -1; });
}

AJ_API int aj_sandbox_pidfd(const aj_sandbox* sb) {
    return guarded_value(-1, [&] { return sb != nullptr ? sb->sandbox.pidfd() : -1; });
}

AJ_API int aj_sandbox_kill(aj_sandbox* sb, int sig, aj_error** err) {
    return guarded(err, [&] {
        if (sb == nullptr) return null_arg(err, "aj_sandbox_kill", "sb");
        return status(err, sb->sandbox.kill(sig));
    });
}

AJ_API int aj_sandbox_wait(aj_result** out, aj_sandbox* sb, aj_error** err) {
    return guarded(err, [&] {
        if (out == nullptr) return null_arg(err, "aj_sandbox_wait", "out");
        *out = nullptr;
        if (sb == nullptr) return null_arg(err, "aj_sandbox_wait", "sb");
        auto r = sb->sandbox.wait();
        if (!r) return fail(err, r.error());
        *out = new aj_result{*r, sb->start};
        return AJ_OK;
    });
}

AJ_API void aj_sandbox_free(aj_sandbox* sb) {
    guarded_value(0, [&] {
        delete sb;  // ~Sandbox kills a sandbox that is still running
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
        std::string json = agentjail::limits::record_json(res->result, res->start, -1);
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
