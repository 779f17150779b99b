// SPDX-License-Identifier: Apache-2.0
// The public C++ API (agentjail::Policy, agentjail::Sandbox) over the core:
// policy::load and its overrides, and run::Run.
#include "api/api.hpp"

#include "run/run.hpp"

#include "policy/policy.hpp"

#include <cerrno>
#include <optional>
#include <string_view>

namespace agentjail {

namespace {

policy::Origin api_origin(const char* key) { return policy::Origin{"api", 0, 0, key}; }

Error invalid(const char* what, const std::string& message) {
    return Error(ErrorKind::invalid_input, EINVAL, std::string("api: ") + what + ": " + message);
}

// Library callers get no implicit "relative to the current directory": a host
// that is multi-threaded or changes directory would bind something it did not
// mean. The planner expands ~ and {workspace} and canonicalises.
bool path_form_ok(std::string_view p) {
    if (p.empty()) return false;
    if (p[0] == '/') return true;
    if (p == "~" || p.substr(0, 2) == "~/") return true;
    if (p.substr(0, 11) == "{workspace}" || p.substr(0, 5) == "{tmp}") return true;
    return false;
}

Result<void> check_path(const char* what, const std::string& p) {
    if (p.empty()) return invalid(what, "empty path");
    if (!path_form_ok(p))
        return invalid(what,
                       "'" + p + "' is relative: give an absolute path, ~/... or {workspace}/...");
    return {};
}

Result<void> check_env_name(const char* what, const std::string& name) {
    bool ok = !name.empty() && (name[0] == '_' || (name[0] >= 'A' && name[0] <= 'Z') ||
                                (name[0] >= 'a' && name[0] <= 'z'));
    for (char c : name)
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9')))
            ok = false;
    if (!ok) return invalid(what, "'" + name + "' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
    return {};
}

Error moved_from() {
    return Error(ErrorKind::internal, EINVAL, "sandbox: used after it was moved from");
}

}  // namespace

// ---- Policy ----

Policy::Policy(std::unique_ptr<policy::Policy> p) : p_(std::move(p)) {}
Policy::Policy(const Policy& o) : p_(std::make_unique<policy::Policy>(*o.p_)) {}
Policy::Policy(Policy&&) noexcept = default;
Policy& Policy::operator=(const Policy& o) {
    if (this != &o) p_ = std::make_unique<policy::Policy>(*o.p_);
    return *this;
}
Policy& Policy::operator=(Policy&&) noexcept = default;
Policy::~Policy() = default;

Result<Policy> Policy::load(const std::string& name_or_path) {
    if (name_or_path.empty()) return invalid("load", "empty policy name");
    auto p = policy::load(name_or_path);
    if (!p) return std::move(p).error();
    return Policy(std::make_unique<policy::Policy>(std::move(*p)));
}

Result<Policy> Policy::load_text(const std::string& toml, const std::string& name) {
    auto p = policy::load_text(toml, name);
    if (!p) return std::move(p).error();
    return Policy(std::make_unique<policy::Policy>(std::move(*p)));
}

policy::Policy& Policy::raw() { return *p_; }
const policy::Policy& Policy::raw() const { return *p_; }

Result<void> Policy::add_ro(const std::string& src, const std::string& dst) {
    if (auto r = check_path("add_ro", src); !r) return r;
    if (!dst.empty())
        if (auto r = check_path("add_ro", dst); !r) return r;
    policy::add_ro(*p_, src, dst, api_origin("add_ro"));
    return {};
}

Result<void> Policy::add_rw(const std::string& src, const std::string& dst) {
    if (auto r = check_path("add_rw", src); !r) return r;
    if (!dst.empty())
        if (auto r = check_path("add_rw", dst); !r) return r;
    policy::add_rw(*p_, src, dst, api_origin("add_rw"));
    return {};
}

Result<void> Policy::add_hide(const std::string& path) {
    if (auto r = check_path("add_hide", path); !r) return r;
    policy::add_hide(*p_, path, api_origin("add_hide"));
    return {};
}

Result<void> Policy::add_socket(const std::string& path) {
    if (auto r = check_path("add_socket", path); !r) return r;
    policy::add_socket(*p_, path, api_origin("add_socket"));
    return {};
}

Result<void> Policy::add_tmpfs(const std::string& path, std::uint64_t size_bytes) {
    if (auto r = check_path("add_tmpfs", path); !r) return r;
    policy::add_tmpfs(*p_, path, size_bytes, api_origin("add_tmpfs"));
    return {};
}

Result<void> Policy::set_env(const std::string& name, const std::string& value) {
    if (auto r = check_env_name("set_env", name); !r) return r;
    policy::set_env(*p_, name, value, api_origin("set_env"));
    return {};
}

Result<void> Policy::pass_env(const std::string& name) {
    if (auto r = check_env_name("pass_env", name); !r) return r;
    policy::pass_env(*p_, name, api_origin("pass_env"));
    return {};
}

Result<void> Policy::clear_env() {
    p_->env_allow.clear();
    return {};
}

Result<void> Policy::set_workspace(const std::string& dir) {
    if (auto r = check_path("set_workspace", dir); !r) return r;
    policy::set_workspace(*p_, dir, api_origin("set_workspace"));
    return {};
}

Result<void> Policy::set_hostname(const std::string& name) {
    if (name.empty()) return invalid("set_hostname", "empty hostname");
    policy::set_hostname(*p_, name, api_origin("set_hostname"));
    return {};
}

Result<void> Policy::set_cwd(const std::string& dir) {
    if (auto r = check_path("set_cwd", dir); !r) return r;
    policy::set_cwd(*p_, dir, api_origin("set_cwd"));
    return {};
}

Result<void> Policy::set_limit(const std::string& key, const std::string& value) {
    // The same parser as the policy file and the CLI flags, so units and messages match.
    return policy::set_limit(*p_, key, value, policy::Origin{"api", 0, 0, "set_limit " + key});
}

Result<void> Policy::set_workspace_mode(const std::string& mode) {
    return policy::set_workspace_mode(*p_, mode, api_origin("set_workspace_mode"));
}

Result<void> Policy::set_workspace_view(const std::string& view) {
    return policy::set_workspace_view(*p_, view, api_origin("set_workspace_view"));
}

Result<void> Policy::add_protect(const std::string& pattern) {
    return policy::add_protect(*p_, pattern, api_origin("add_protect"));
}

Result<void> Policy::remove_protect(const std::string& pattern) {
    return policy::remove_protect(*p_, pattern, api_origin("remove_protect"));
}

Result<void> Policy::set_net_mode(const std::string& mode) {
    return policy::set_net_mode(*p_, mode, api_origin("set_net_mode"));
}

Result<void> Policy::allow_host(const std::string& pattern) {
    return policy::add_allow_host(*p_, pattern, api_origin("allow_host"));
}

Result<void> Policy::deny_host(const std::string& pattern) {
    return policy::add_deny_host(*p_, pattern, api_origin("deny_host"));
}

Result<void> Policy::net_preset(const std::string& name) {
    return policy::apply_net_preset(*p_, name, api_origin("net_preset"));
}

Result<void> Policy::add_secret(const std::string& spec) {
    return policy::add_secret(*p_, spec, api_origin("add_secret"));
}

Result<void> Policy::set_net_log(const std::string& path) {
    if (auto r = check_path("set_net_log", path); !r) return r;
    policy::set_net_log(*p_, path, api_origin("set_net_log"));
    return {};
}

Result<void> Policy::set_seccomp_log(const std::string& path) {
    if (auto r = check_path("set_seccomp_log", path); !r) return r;
    policy::set_seccomp_log(*p_, path, api_origin("set_seccomp_log"));
    return {};
}

// ---- Sandbox: thin over run::Run ----

Sandbox::Sandbox(std::unique_ptr<run::Run> r) : r_(std::move(r)) {}
Sandbox::Sandbox(Sandbox&&) noexcept = default;
Sandbox& Sandbox::operator=(Sandbox&&) noexcept = default;
// The run owns the launch::Process, whose destructor kills a sandbox still running.
Sandbox::~Sandbox() = default;

Result<Sandbox> Sandbox::spawn(const Policy& policy, const std::vector<std::string>& argv,
                               const SpawnOptions& options) {
    auto r = run::Run::start(policy.raw(), argv, options);
    if (!r) return std::move(r).error();
    return Sandbox(std::move(*r));
}

pid_t Sandbox::pid() const noexcept { return r_ ? r_->pid() : -1; }
int Sandbox::pidfd() const noexcept { return r_ ? r_->pidfd() : -1; }

Result<void> Sandbox::kill(int sig) {
    if (!r_) return moved_from();
    return r_->kill(sig);
}

Result<void> Sandbox::stop(int sig) {
    if (!r_) return moved_from();
    return r_->stop(sig);
}

Result<RunResult> Sandbox::wait() {
    if (!r_) return moved_from();
    return r_->wait();
}

int Sandbox::job_fd() const noexcept { return r_ ? r_->job_fd() : -1; }
std::optional<JobChange> Sandbox::next_job_change() { return r_ ? r_->next_job_change() : std::nullopt; }
bool Sandbox::has_terminal() const noexcept { return r_ && r_->has_terminal(); }
void Sandbox::terminal_resized() {
    if (r_) r_->terminal_resized();
}
bool Sandbox::suspend() { return r_ && r_->suspend(); }
void Sandbox::resume() {
    if (r_) r_->resume();
}
void Sandbox::suspend_terminal() {
    if (r_) r_->suspend_terminal();
}
void Sandbox::resume_terminal() {
    if (r_) r_->resume_terminal();
}

}  // namespace agentjail
