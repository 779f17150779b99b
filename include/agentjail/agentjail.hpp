// SPDX-License-Identifier: Apache-2.0
// The C++ API for embedders: a header-only layer over the C API (agentjail.h), so
// that libagentjail.so exports no C++ symbol and a program built with another
// compiler or standard library links it all the same. Errors are exceptions
// (agentjail::Error) carrying the C API's class, errno and stage.
#pragma once

#include <agentjail/agentjail.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace agentjail {
// The ABI major: a library of another major is another namespace, never mixed up.
inline namespace v1 {

// A failure of the library: what() is its one-line message.
class Error : public std::runtime_error {
public:
    explicit Error(const aj_error* e)
        : std::runtime_error(aj_error_message(e)),
          code_(aj_error_code(e)),
          errno_(aj_error_errno(e)),
          stage_(aj_error_stage(e)),
          step_(aj_error_step(e)) {}
    int code() const noexcept { return code_; }  // AJ_EINVAL, AJ_ESETUP, ...
    int sys_errno() const noexcept { return errno_; }
    aj_stage stage() const noexcept { return stage_; }
    const char* stage_name() const noexcept { return aj_stage_name(stage_); }
    const std::string& step() const noexcept { return step_; }

private:
    int code_;
    int errno_;
    aj_stage stage_;
    std::string step_;
};

namespace detail {
// Owns one handle of the C API, freed by its aj_*_free; moves, never copies.
template <class T, void (*Free)(T*)>
class Owned {
public:
    explicit Owned(T* p = nullptr) noexcept : p_(p) {}
    Owned(Owned&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    Owned& operator=(Owned&& o) noexcept {
        std::swap(p_, o.p_);
        return *this;
    }
    Owned(const Owned&) = delete;
    Owned& operator=(const Owned&) = delete;
    ~Owned() { Free(p_); }
    T* get() const noexcept { return p_; }

private:
    T* p_;
};

// Runs a C call with an aj_error out-parameter; throws its error on failure.
template <class F>
void check(F&& call) {
    aj_error* err = nullptr;
    if (call(&err) == AJ_OK) return;
    Error e(err);
    aj_error_free(err);
    throw e;
}
}  // namespace detail

inline std::string version() { return aj_version_string(); }

// A loaded policy with its overrides. Move-only: it owns one aj_policy.
class Policy {
public:
    // A built-in name ("default", "minimal", ...) or a path to a TOML file.
    static Policy load(const std::string& name_or_path) {
        aj_policy* p = nullptr;
        detail::check([&](aj_error** e) { return aj_policy_load(&p, name_or_path.c_str(), e); });
        return Policy(p);
    }
    static Policy from_text(const std::string& toml, const std::string& name = "<text>") {
        aj_policy* p = nullptr;
        detail::check(
            [&](aj_error** e) { return aj_policy_load_text(&p, toml.c_str(), name.c_str(), e); });
        return Policy(p);
    }

    // The overrides of agentjail.h, by the same names.
    void add_ro(const std::string& src, const std::string& dst = {}) {
        detail::check(
            [&](aj_error** e) { return aj_policy_add_ro(p_.get(), src.c_str(), opt(dst), e); });
    }
    void add_rw(const std::string& src, const std::string& dst = {}) {
        detail::check(
            [&](aj_error** e) { return aj_policy_add_rw(p_.get(), src.c_str(), opt(dst), e); });
    }
    void add_tmpfs(const std::string& path, std::uint64_t size = 0) {
        detail::check(
            [&](aj_error** e) { return aj_policy_add_tmpfs(p_.get(), path.c_str(), size, e); });
    }
    void set_env(const std::string& name, const std::string& value) {
        detail::check([&](aj_error** e) {
            return aj_policy_set_env(p_.get(), name.c_str(), value.c_str(), e);
        });
    }
    void set_limit(const std::string& key, const std::string& value) {
        detail::check([&](aj_error** e) {
            return aj_policy_set_limit(p_.get(), key.c_str(), value.c_str(), e);
        });
    }
    void clear_env() {
        detail::check([&](aj_error** e) { return aj_policy_clear_env(p_.get(), e); });
    }
    void add_hide(const std::string& v) { one(aj_policy_add_hide, v); }
    void add_socket(const std::string& v) { one(aj_policy_add_socket, v); }
    void pass_env(const std::string& v) { one(aj_policy_pass_env, v); }
    void set_workspace(const std::string& v) { one(aj_policy_set_workspace, v); }
    void set_hostname(const std::string& v) { one(aj_policy_set_hostname, v); }
    void set_cwd(const std::string& v) { one(aj_policy_set_cwd, v); }
    void set_workspace_mode(const std::string& v) { one(aj_policy_set_workspace_mode, v); }
    void set_workspace_view(const std::string& v) { one(aj_policy_set_workspace_view, v); }
    void add_protect(const std::string& v) { one(aj_policy_add_protect, v); }
    void remove_protect(const std::string& v) { one(aj_policy_remove_protect, v); }
    void set_net_mode(const std::string& v) { one(aj_policy_set_net_mode, v); }
    void allow_host(const std::string& v) { one(aj_policy_allow_host, v); }
    void deny_host(const std::string& v) { one(aj_policy_deny_host, v); }
    void net_preset(const std::string& v) { one(aj_policy_net_preset, v); }
    void add_secret(const std::string& v) { one(aj_policy_add_secret, v); }
    void set_net_log(const std::string& v) { one(aj_policy_set_net_log, v); }
    void set_seccomp_log(const std::string& v) { one(aj_policy_set_seccomp_log, v); }

    const aj_policy* get() const noexcept { return p_.get(); }

private:
    explicit Policy(aj_policy* p) : p_(p) {}
    static const char* opt(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }
    void one(int (*f)(aj_policy*, const char*, aj_error**), const std::string& v) {
        detail::check([&](aj_error** e) { return f(p_.get(), v.c_str(), e); });
    }
    detail::Owned<aj_policy, aj_policy_free> p_;
};

// aj_run_options with the defaults of this header (aj_run_options_init).
inline aj_run_options run_options() {
    aj_run_options o;
    if (aj_run_options_init(&o, AJ_RUN_OPTIONS_VERSION) != AJ_OK)
        throw std::runtime_error(
            "agentjail: the library is older than this header (aj_run_options version " +
            std::to_string(AJ_RUN_OPTIONS_VERSION) + ")");
    return o;
}

// What a finished run did. Move-only: it owns one aj_result.
class RunResult {
public:
    explicit RunResult(aj_result* r) : r_(r) {}

    bool exited() const noexcept { return aj_result_exited(r_.get()) != 0; }
    int exit_code() const noexcept { return aj_result_exit_code(r_.get()); }
    int signal() const noexcept { return aj_result_signal(r_.get()); }
    double wall_time() const noexcept { return aj_result_wall_time(r_.get()); }
    bool timed_out() const noexcept { return aj_result_timed_out(r_.get()) != 0; }
    // agentjail's exit status (124 TO, 137 ML, 125 XX, else the command's own).
    int exit_status() const noexcept { return aj_result_exit_status(r_.get()); }
    std::uint64_t stat(aj_stat s) const {
        std::uint64_t v = 0;
        detail::check([&](aj_error** e) { return aj_result_stat(&v, r_.get(), s, e); });
        return v;
    }
    // The result record, one JSON object on one line.
    std::string json() const {
        char* s = nullptr;
        detail::check([&](aj_error** e) { return aj_result_json(&s, r_.get(), e); });
        std::string out(s);
        aj_string_free(s);
        return out;
    }

private:
    detail::Owned<aj_result, aj_result_free> r_;
};

// A running sandbox. Destroying it before wait() kills everything in it (in the
// process that spawned it; a child of fork() only forgets it).
class Sandbox {
public:
    static Sandbox spawn(const Policy& policy, const std::vector<std::string>& argv,
                         const aj_run_options& options = run_options()) {
        std::vector<const char*> args;
        for (const auto& a : argv) args.push_back(a.c_str());
        args.push_back(nullptr);
        aj_sandbox* sb = nullptr;
        detail::check(
            [&](aj_error** e) { return aj_spawn(&sb, policy.get(), args.data(), &options, e); });
        return Sandbox(sb);
    }

    int pid() const noexcept { return aj_sandbox_pid(sb_.get()); }
    int pidfd() const noexcept { return aj_sandbox_pidfd(sb_.get()); }
    void kill(int sig) {
        detail::check([&](aj_error** e) { return aj_sandbox_kill(sb_.get(), sig, e); });
    }
    // sig now, everything inside killed after the policy's kill grace (aj_sandbox_stop).
    void stop(int sig) {
        detail::check([&](aj_error** e) { return aj_sandbox_stop(sb_.get(), sig, e); });
    }
    RunResult wait() {
        aj_result* r = nullptr;
        detail::check([&](aj_error** e) { return aj_sandbox_wait(&r, sb_.get(), e); });
        return RunResult(r);
    }

private:
    explicit Sandbox(aj_sandbox* sb) : sb_(sb) {}
    detail::Owned<aj_sandbox, aj_sandbox_free> sb_;
};

}  // namespace v1
}  // namespace agentjail
