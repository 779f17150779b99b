// SPDX-License-Identifier: Apache-2.0
// The C API (include/agentjail/agentjail.h) over the C++ API: opaque handles, int
// returns, an explicit aj_error out-parameter, and one guard per entry point
// (guard.hpp) so no C++ exception ever unwinds into a C caller. Versions, errors and
// policies here; running a sandbox and its result in spawn.cc.
#include <agentjail/agentjail.h>
#include "capi/guard.hpp"
#include "capi/handles.hpp"

#include <cerrno>
#include <new>
#include <string>
#include <utility>

namespace agentjail::capi::detail {

// Reporting "out of memory" must not need memory: this one is never freed.
aj_error oom_error{AJ_ENOMEM, "out of memory", true, ENOMEM};

}  // namespace agentjail::capi::detail

namespace {

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

}  // namespace

namespace agentjail::capi::detail {

int fail(aj_error** err, int code, std::string message, int sys_errno,
         aj_stage stage, const char* step) {
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
int fail(aj_error** err, const agentjail::Error& e, aj_stage otherwise) {
    aj_stage stage = e.stage() == agentjail::ErrorStage::none ? otherwise : stage_of(e.stage());
    return fail(err, code_of(e.kind()), e.message(), e.code(), stage, e.step());
}

int null_arg(aj_error** err, const char* fn, const char* arg) {
    return fail(err, AJ_EINVAL, std::string(fn) + ": " + arg + " is NULL", EINVAL);
}

// A policy override's outcome.
int status(aj_error** err, const agentjail::Result<void>& r) {
    return r ? AJ_OK : fail(err, r.error(), AJ_STAGE_POLICY);
}

}  // namespace agentjail::capi::detail

using namespace agentjail::capi::detail;

namespace {

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

AJ_API int aj_policy_add_socket(aj_policy* policy, const char* path, aj_error** err) {
    return string_override("aj_policy_add_socket", policy, path, "path", &agentjail::Policy::add_socket, err);
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

AJ_API int aj_policy_set_workspace_view(aj_policy* policy, const char* view, aj_error** err) {
    return string_override("aj_policy_set_workspace_view", policy, view, "view", &agentjail::Policy::set_workspace_view, err);
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

}  // extern "C"
