// SPDX-License-Identifier: Apache-2.0
// The command's environment (an allowlist; secret patterns never pass unless
// named exactly) and the PATH search for argv[0], both decided before clone.
#include "plan/internal.hpp"

#include "base/text.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cerrno>
#include <map>

namespace agentjail::plan::detail {

namespace {

bool matches_any(const std::vector<policy::Located<std::string>>& patterns,
                 const std::string& name) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const auto& p) { return util::glob_match(p.value, name); });
}

// Deny patterns ignore case: variable names are case-sensitive, but the secrets in
// them are not spelled in one case (LC_github_token passes the LC_* allow, npm reads
// npm_config__authToken), and a deny list must not depend on the spelling.
bool denied(const std::vector<policy::Located<std::string>>& patterns, const std::string& name) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const auto& p) { return util::glob_match_icase(p.value, name); });
}

bool named_exactly(const std::vector<policy::Located<std::string>>& patterns,
                   const std::string& name) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const auto& p) { return p.value == name; });
}

// Allowed by a pattern, and not denied unless allowed by its exact name: a
// "*_TOKEN" deny beats an "*" allow (and "*_token", "*_Token"), but
// `-e GITHUB_TOKEN` beats the deny.
bool passes(const policy::Policy& policy, const std::string& name) {
    if (!matches_any(policy.env_allow, name)) return false;
    return !denied(policy.env_deny, name) || named_exactly(policy.env_allow, name);
}

}  // namespace

Result<void> build_env(const policy::Policy& policy, const HostFacts& host, Plan& plan) {
    std::map<std::string, std::string> env;
    for (const auto& kv : host.environ) {
        auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) continue;
        std::string name = kv.substr(0, eq);
        // The first of duplicate names wins, as with getenv(3).
        if (passes(policy, name)) env.emplace(name, kv.substr(eq + 1));
    }
    std::map<std::string, bool> set_by_policy;
    for (const auto& s : policy.env_set) {
        if (s.name.empty() || s.name.find('=') != std::string::npos)
            return Error(ErrorKind::invalid_input, EINVAL,
                         with_origin(describe(s.origin), "bad environment name '" + s.name + "'"));
        // "{state}" in a value is the agent's state directory (CLAUDE_CONFIG_DIR =
        // "{state}"), "{home}" the home path (PATH = "{home}/.local/bin:...").
        std::string value = s.value;
        for (const auto& [token, with] : {std::pair<std::string, std::string>{"{state}", plan.state_dir},
                                          std::pair<std::string, std::string>{"{home}", plan.home}}) {
            for (size_t at = value.find(token); at != std::string::npos; at = value.find(token, at)) {
                if (with.empty())
                    return Error(ErrorKind::invalid_input, EINVAL,
                                 with_origin(describe(s.origin),
                                             s.name + " uses " + token + ", but " +
                                                 (token == "{state}" ? "the policy has no [agent] state"
                                                                     : "the home directory is unknown")));
                value.replace(at, token.size(), with);
                at += with.size();
            }
        }
        env[s.name] = value;
        set_by_policy[s.name] = true;
    }
    // HOME is always the sandbox's home path: tools that write ~/.cache must
    // land in the private tmpfs, never be pointed at a host path.
    env["HOME"] = plan.home.empty() ? "/" : plan.home;
    if (!host.user.empty()) {
        for (const char* name : {"USER", "LOGNAME"}) {
            if (!set_by_policy.count(name) && passes(policy, name)) env[name] = host.user;
        }
    }
    plan.env.clear();
    for (const auto& [name, value] : env) plan.env.push_back(name + "=" + value);
    return {};
}

Result<void> build_exec(const std::vector<std::string>& argv, Plan& plan) {
    if (argv.empty())
        return Error(ErrorKind::invalid_input, EINVAL,
                     "no command given (usage: agentjail [OPTIONS] -- COMMAND [ARGS...])");
    const std::string& cmd = argv[0];
    if (cmd.empty()) return Error(ErrorKind::invalid_input, EINVAL, "the command name is empty");
    plan.argv = argv;
    plan.exec_candidates.clear();
    if (cmd.find('/') != std::string::npos) {
        std::string path = cmd[0] == '/' ? cmd : plan.cwd + "/" + cmd;
        plan.exec_candidates.push_back(util::normalize_path(path));
        return {};
    }
    for (const std::string& dir : base::absolute_path_dirs(env_lookup(plan.env, "PATH").value_or(""))) {
        std::string candidate = util::normalize_path(dir + "/" + cmd);
        if (std::find(plan.exec_candidates.begin(), plan.exec_candidates.end(), candidate) ==
            plan.exec_candidates.end())
            plan.exec_candidates.push_back(std::move(candidate));
    }
    return {};
}

}  // namespace agentjail::plan::detail
