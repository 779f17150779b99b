// SPDX-License-Identifier: Apache-2.0
// The [limits] section: its keys, and set_limit(), the one place a limit's text
// ("2G", "90s", "max") becomes a value, for policy files, flags and the APIs alike.
#include "policy/internal.hpp"

#include "base/units.hpp"

#include <algorithm>

namespace agentjail::policy {

namespace detail {

const std::vector<std::string_view>& limits_keys() {
    static const std::vector<std::string_view> keys = {
        "memory", "swap",  "cpus",       "pids",       "timeout",       "cpu_time",
        "nofile", "fsize", "tmpfs_size", "kill_grace", "setup_timeout", "allow_degraded"};
    return keys;
}

bool limit_is_boolean(std::string_view key) { return key == "allow_degraded"; }

}  // namespace detail

namespace {

template <class T>
Result<std::optional<T>> lifted_or(const std::string& value, Result<T> (*parse)(const std::string&)) {
    if (units::is_unlimited_word(value)) return std::optional<T>();
    auto v = parse(value);
    if (!v) return std::move(v).error();
    return std::optional<T>(*v);
}

Result<double> positive_duration(const std::string& s) {
    auto d = units::parse_duration(s);
    if (!d) return d;
    if (*d <= 0) return Error(ErrorKind::invalid_input, EINVAL, "bad duration '" + s + "': expected more than 0 s");
    return d;
}

Result<std::uint64_t> positive_size(const std::string& s) {
    auto v = units::parse_size(s);
    if (!v) return v;
    if (*v == 0) return Error(ErrorKind::invalid_input, EINVAL, "bad size '" + s + "': expected more than 0 bytes");
    return v;
}

// Swap may be 0 (the default with a memory limit: none at all).
Result<std::uint64_t> any_size(const std::string& s) { return units::parse_size(s); }

template <class T>
Result<void> store(Located<std::optional<T>>& field, Result<std::optional<T>> v, const Origin& o) {
    if (!v) return detail::error_at(o, v.error().message());
    field = Located<std::optional<T>>{*v, o};
    return {};
}

}  // namespace


Result<void> set_limit(Policy& p, const std::string& key, const std::string& value, Origin origin) {
    if (origin.key.empty()) origin.key = "limits." + key;
    auto& l = p.limits;
    if (value.empty()) return detail::error_at(origin, "expected a value, got an empty string");
    if (key == "memory") return store(l.memory, lifted_or<std::uint64_t>(value, positive_size), origin);
    if (key == "swap") return store(l.swap, lifted_or<std::uint64_t>(value, any_size), origin);
    if (key == "fsize") return store(l.fsize, lifted_or<std::uint64_t>(value, positive_size), origin);
    if (key == "tmpfs_size") return store(l.tmpfs_size, lifted_or<std::uint64_t>(value, positive_size), origin);
    if (key == "cpus") return store(l.cpus, lifted_or<double>(value, units::parse_cpus), origin);
    if (key == "pids") return store(l.pids, lifted_or<std::uint64_t>(value, units::parse_count), origin);
    if (key == "nofile") return store(l.nofile, lifted_or<std::uint64_t>(value, units::parse_count), origin);
    if (key == "timeout") return store(l.timeout, lifted_or<double>(value, positive_duration), origin);
    if (key == "cpu_time") return store(l.cpu_time, lifted_or<double>(value, positive_duration), origin);
    if (key == "kill_grace") {
        auto d = units::parse_duration(value);
        if (!d) return detail::error_at(origin, d.error().message());
        // A grace longer than ten minutes would defeat the wall clock.
        if (*d > 600) return detail::error_at(origin, "a grace period of at most 10m, got '" + value + "'");
        l.kill_grace = Located<double>{*d, origin};
        return {};
    }
    if (key == "setup_timeout") {
        auto d = positive_duration(value);
        if (!d) return detail::error_at(origin, d.error().message());
        if (*d > 3600) return detail::error_at(origin, "a setup timeout of at most 1h, got '" + value + "'");
        l.setup_timeout = Located<double>{*d, origin};
        return {};
    }
    if (key == "allow_degraded") {
        if (value != "true" && value != "false")
            return detail::error_at(origin, "expected true or false, got '" + value + "'");
        l.allow_degraded = Located<bool>{value == "true", origin};
        return {};
    }
    std::string msg = "unknown limit";
    std::string near = detail::closest_key(key, detail::limits_keys());
    if (!near.empty()) msg += "; did you mean '" + near + "'?";
    return detail::error_at(origin, msg);
}

}  // namespace agentjail::policy
