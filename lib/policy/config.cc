// SPDX-License-Identifier: Apache-2.0
// The user's config.toml (policy.hpp, UserConfig): its text read with toml++ into
// plain settings, each with its file:line:column; what a key means is the CLI's (a
// setting is the flag of the same name).
#include "policy/policy.hpp"
#include "policy/internal.hpp"

#include <toml++/toml.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

namespace agentjail::policy {

namespace {

Error at(const std::string& file, const toml::source_position& pos, const std::string& message) {
    return Error{ErrorKind::invalid_input, 0,
                 file + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) + ": " + message};
}

// One value as the flag would take it; nullopt for a table, a date or a nested array.
std::optional<std::string> scalar(const toml::node& n) {
    if (auto s = n.value<std::string>(); s && n.is_string()) return *s;
    if (n.is_integer()) return std::to_string(*n.value<std::int64_t>());
    if (n.is_floating_point()) {
        std::string t = std::to_string(*n.value<double>());
        while (t.size() > 1 && t.back() == '0') t.pop_back();
        if (!t.empty() && t.back() == '.') t.pop_back();
        return t;
    }
    return std::nullopt;
}

}  // namespace

std::string user_config_file() {
    const std::string dir = user_config_dir();
    return dir.empty() ? dir : dir + "/config.toml";
}

Result<UserConfig> read_user_config(const std::string& path) {
    UserConfig c;
    c.file = path;
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return c;
    auto f = detail::read_small_file(path);
    if (f.err != 0) return Error{ErrorKind::invalid_input, f.err, "cannot read " + path + ": " + f.why};
    toml::table root;
    try {
        root = toml::parse(f.text, path);
    } catch (const toml::parse_error& e) {
        return at(path, e.source().begin, std::string(e.description()));
    } catch (const std::exception& e) {
        return Error{ErrorKind::internal, 0, path + ": " + e.what()};
    }
    std::vector<std::pair<const toml::key*, const toml::node*>> keys;
    for (auto&& [k, v] : root) keys.emplace_back(&k, &v);
    std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
        const auto& pa = a.first->source().begin;
        const auto& pb = b.first->source().begin;
        return std::pair(pa.line, pa.column) < std::pair(pb.line, pb.column);
    });
    for (const auto& [key, node] : keys) {
        ConfigSetting s;
        s.key = std::string(key->str());
        const auto& pos = key->source().begin;
        s.origin = Origin{path, static_cast<int>(pos.line), static_cast<int>(pos.column), s.key};
        if (node->is_boolean()) {
            s.is_switch = true;
            s.on = *node->value<bool>();
        } else if (const auto* arr = node->as_array()) {
            for (const auto& item : *arr) {
                auto v = scalar(item);
                if (!v) return at(path, item.source().begin, s.key + ": expected strings or numbers in the list");
                s.values.push_back(*v);
            }
        } else if (auto v = scalar(*node)) {
            s.values.push_back(*v);
        } else {
            return at(path, pos, s.key + ": expected a string, a number, a boolean or a list (the flag's value)");
        }
        c.settings.push_back(std::move(s));
    }
    return c;
}

}  // namespace agentjail::policy
