// SPDX-License-Identifier: Apache-2.0
// Value checks shared by the parser, validate() and the overrides: path forms,
// environment names, hostnames, sizes, and the wording of located errors.
#include "policy/internal.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <limits>

namespace agentjail::policy {

namespace detail {

namespace {

// A prefix that must be the whole string or be followed by '/': "{workspace}x"
// is a typo, not a path.
bool has_root(std::string_view s, std::string_view root) {
    return s.substr(0, root.size()) == root && (s.size() == root.size() || s[root.size()] == '/');
}

bool is_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

std::string check_path(std::string_view s) {
    if (s.empty()) return "expected a path, got an empty string";
    if (s.find('\0') != std::string_view::npos) return "a path may not contain a NUL character";
    // Relative paths would depend on where agentjail happens to be started, which
    // makes a policy mean different things in different directories.
    if (s[0] == '/' || has_root(s, "~") || has_root(s, "{workspace}") || has_root(s, "{tmp}") ||
        has_root(s, "{state}"))
        return {};
    return "expected an absolute path or one starting with ~, {workspace}, {tmp} or {state}, got '" +
           std::string(s) + "'";
}

std::string check_protect_pattern(std::string_view s) {
    if (s.empty()) return "expected a path under the workspace, got an empty string";
    if (s.find('\0') != std::string_view::npos) return "a path may not contain a NUL character";
    std::string_view rel = s;
    if (has_root(s, "{workspace}")) rel = s.substr(std::string_view("{workspace}").size());
    else if (s[0] == '/' || s[0] == '~' || has_root(s, "{tmp}"))
        return "expected a path relative to the workspace (\".git/hooks\", \"**/.envrc\") or "
               "starting with {workspace}/, got '" + std::string(s) + "'";
    while (!rel.empty() && rel[0] == '/') rel.remove_prefix(1);
    if (rel.empty()) return "'" + std::string(s) + "' names the workspace itself; protect a path inside it";
    size_t start = 0;
    while (start <= rel.size()) {
        size_t end = rel.find('/', start);
        if (end == std::string_view::npos) end = rel.size();
        if (rel.substr(start, end - start) == "..")
            return "'" + std::string(s) + "' leaves the workspace (..)";
        start = end + 1;
    }
    return {};
}

std::string check_env_name(std::string_view s) {
    if (s.empty()) return "expected an environment variable name, got an empty string";
    bool ok = !(s[0] >= '0' && s[0] <= '9');
    for (char c : s) ok = ok && (is_alnum(c) || c == '_');
    if (ok) return {};
    return "'" + std::string(s) +
           "' is not a valid environment variable name (letters, digits and _, not starting "
           "with a digit)";
}

std::string check_env_pattern(std::string_view s) {
    if (s.empty()) return "expected an environment variable name or pattern, got an empty string";
    bool ok = !(s[0] >= '0' && s[0] <= '9');
    for (char c : s) ok = ok && (is_alnum(c) || c == '_' || c == '*' || c == '?');
    if (ok) return {};
    return "'" + std::string(s) +
           "' is not a valid environment variable name or pattern (letters, digits, _ and the "
           "globs * and ?, not starting with a digit)";
}

std::string check_hostname(std::string_view s) {
    if (s.empty()) return "expected a hostname, got an empty string";
    // The kernel keeps at most 64 bytes of nodename (HOST_NAME_MAX).
    if (s.size() > 64)
        return "hostname '" + std::string(s) + "' is longer than 64 characters";
    bool ok = true;
    size_t start = 0;
    while (ok && start <= s.size()) {
        size_t end = s.find('.', start);
        if (end == std::string_view::npos) end = s.size();
        std::string_view label = s.substr(start, end - start);
        ok = !label.empty() && label.size() <= 63 && label.front() != '-' && label.back() != '-';
        for (char c : label) ok = ok && (is_alnum(c) || c == '-');
        start = end + 1;
    }
    if (ok) return {};
    return "'" + std::string(s) +
           "' is not a valid hostname (RFC 1123: dot-separated labels of letters, digits and "
           "'-', 1 to 63 characters each, not starting or ending with '-')";
}

std::string check_state_name(std::string_view s) {
    // One directory name under $XDG_STATE_HOME/agentjail: no separator, no dot-only
    // name, and not the directory clone and overlay runs keep their state in.
    bool ok = !s.empty() && s.size() <= 64 && s != "." && s != ".." && s != "runs";
    for (char c : s) ok = ok && (is_alnum(c) || c == '.' || c == '_' || c == '-');
    if (ok) return {};
    return "expected a state directory name of letters, digits, '.', '_' and '-' (\"claude\"), "
           "not 'runs', got '" + std::string(s) + "'";
}

std::string closest_key(std::string_view word, const std::vector<std::string_view>& known) {
    return base::closest(word, known);
}

}  // namespace detail
}  // namespace agentjail::policy
