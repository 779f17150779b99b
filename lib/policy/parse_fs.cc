// SPDX-License-Identifier: Apache-2.0
// The TOML parser, [filesystem] and [workspace]'s protect lists: binds, tmpfs mounts, hidden paths.
#include "policy/parser.hpp"

#include "base/units.hpp"

namespace agentjail::policy::detail {

bool Parser::protect_list(const toml::node& n, const std::string& key, std::vector<ProtectRule>& out) {
    const toml::array* a = nullptr;
    if (!array_of(n, key, a)) return false;
    const bool tables = key == "workspace.protect";  // unprotect names patterns only
    for (size_t i = 0; i < a->size(); ++i) {
        std::string item_key = key + "[" + std::to_string(i) + "]";
        const toml::node& item = *a->get(i);
        ProtectRule rule;
        rule.origin = origin(item.source(), item_key);
        if (const auto* t = item.as_table(); t != nullptr && tables) {
            // { path = "opencode.json", placeholder = false }
            static const std::vector<std::string_view> known = {"path", "placeholder"};
            bool have_path = false;
            for (const auto& e : entries(*t)) {
                std::string_view k = e.key->str();
                std::string sub = item_key + "." + std::string(k);
                if (k == "path") {
                    if (!checked(*e.node, sub, rule.pattern, check_protect_pattern)) return false;
                    have_path = true;
                } else if (k == "placeholder") {
                    std::optional<Located<bool>> b;
                    if (!boolean(*e.node, sub, b)) return false;
                    rule.placeholder = b->value;
                } else {
                    return unknown_key(e, sub, known);
                }
            }
            if (!have_path) return fail(t->source(), item_key, "expected a table with 'path' (and 'placeholder')");
        } else if (!item.is_string() && tables) {
            return expected(item, item_key, "a pattern string or a table { path, placeholder }");
        } else if (!checked(item, item_key, rule.pattern, check_protect_pattern)) {
            return false;
        }
        out.push_back(std::move(rule));
    }
    return true;
}

// An array of path strings, each with its origin: hide, sockets.
template <class Rule>
bool Parser::path_list(const toml::node& n, const std::string& key, std::vector<Rule>& out) {
    const toml::array* a = nullptr;
    if (!array_of(n, key, a)) return false;
    for (size_t i = 0; i < a->size(); ++i) {
        std::string item_key = key + "[" + std::to_string(i) + "]";
        std::string s;
        if (!checked(*a->get(i), item_key, s, check_path)) return false;
        out.push_back({s, origin(a->get(i)->source(), item_key)});
    }
    return true;
}

// [environment] path reads its list the same way (parse.cc).
template bool Parser::path_list(const toml::node&, const std::string&, std::vector<Located<std::string>>&);

bool Parser::filesystem(const toml::table& t) {
    const auto& known = filesystem_keys;
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "filesystem." + std::string(k);
        const toml::node& n = *e.node;
        size_t which = 0;
        if (k == "ro") {
            if (!mounts(n, key, out_.ro)) return false;
        } else if (k == "rw") {
            if (!mounts(n, key, out_.rw)) return false;
        } else if (k == "tmpfs") {
            if (!tmpfs(n, key)) return false;
        } else if (k == "hide") {
            if (!path_list(n, key, out_.hide)) return false;
        } else if (k == "sockets") {
            if (!path_list(n, key, out_.sockets)) return false;
        } else if (k == "workspace") {
            if (!choice(n, key, {"rw", "ro", "none"}, which)) return false;
            static constexpr WorkspaceAccess modes[] = {WorkspaceAccess::rw, WorkspaceAccess::ro,
                                                        WorkspaceAccess::none};
            out_.workspace = Located<WorkspaceAccess>{modes[which], origin(n.source(), key)};
        } else if (k == "home") {
            if (!choice(n, key, {"tmpfs", "none"}, which)) return false;
            out_.private_home = Located<bool>{which == 0, origin(n.source(), key)};
        } else if (k == "proc") {
            if (!boolean(n, key, out_.proc)) return false;
        } else if (k == "path_tools") {
            if (!boolean(n, key, out_.path_tools)) return false;
        } else if (k == "dev") {
            if (!choice(n, key, {"minimal", "none"}, which)) return false;
            out_.dev = Located<bool>{which == 0, origin(n.source(), key)};
        } else {
            return unknown_key(e, key, known);
        }
    }
    return true;
}

bool Parser::mounts(const toml::node& n, const std::string& key, std::vector<MountRule>& out) {
    const toml::array* a = nullptr;
    if (!array_of(n, key, a)) return false;
    for (size_t i = 0; i < a->size(); ++i) {
        const toml::node& item = *a->get(i);
        std::string item_key = key + "[" + std::to_string(i) + "]";
        MountRule rule;
        rule.origin = origin(item.source(), item_key);
        if (item.is_string()) {
            if (!checked(item, item_key, rule.src, check_path)) return false;
        } else if (const auto* t = item.as_table()) {
            if (!mount_table(*t, item_key, rule)) return false;
        } else {
            return expected(item, item_key, "a path string or a table");
        }
        out.push_back(std::move(rule));
    }
    return true;
}

bool Parser::mount_table(const toml::table& t, const std::string& key, MountRule& rule) {
    static const std::vector<std::string_view> known = {"path", "src", "dst", "optional"};
    const toml::key* path_key = nullptr;
    const toml::key* src_key = nullptr;
    const toml::key* dst_key = nullptr;
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string sub = key + "." + std::string(k);
        if (k == "path" || k == "src") {
            if (!checked(*e.node, sub, rule.src, check_path)) return false;
            (k == "path" ? path_key : src_key) = e.key;
        } else if (k == "dst") {
            if (!checked(*e.node, sub, rule.dst, check_path)) return false;
            dst_key = e.key;
        } else if (k == "optional") {
            std::optional<Located<bool>> b;
            if (!boolean(*e.node, sub, b)) return false;
            rule.optional = b->value;
        } else {
            return unknown_key(e, sub, known);
        }
    }
    // `path` means "the same path inside"; mixing it with src/dst would leave
    // it unclear which of the two the user meant.
    if (path_key && src_key)
        return fail(src_key->source(), key + ".src", "give either 'path' or 'src', not both");
    if (path_key && dst_key)
        return fail(dst_key->source(), key + ".dst",
                    "'dst' goes with 'src' (use 'src' and 'dst' to bind elsewhere inside)");
    if (!path_key && !src_key)
        return fail(t.source(), key, "expected a table with 'path' or 'src' (and 'dst')");
    return true;
}

bool Parser::tmpfs(const toml::node& n, const std::string& key) {
    const toml::array* a = nullptr;
    if (!array_of(n, key, a)) return false;
    for (size_t i = 0; i < a->size(); ++i) {
        const toml::node& item = *a->get(i);
        std::string item_key = key + "[" + std::to_string(i) + "]";
        TmpfsRule rule;
        rule.origin = origin(item.source(), item_key);
        if (item.is_string()) {
            if (!checked(item, item_key, rule.path, check_path)) return false;
        } else if (const auto* t = item.as_table()) {
            bool have_path = false;
            for (const auto& e : entries(*t)) {
                std::string_view k = e.key->str();
                std::string sub = item_key + "." + std::string(k);
                if (k == "path") {
                    if (!checked(*e.node, sub, rule.path, check_path)) return false;
                    have_path = true;
                } else if (k == "size") {
                    if (const auto* num = e.node->as_integer()) {
                        if (num->get() <= 0)
                            return fail(e.node->source(), sub, "expected a size greater than 0");
                        rule.size_bytes = static_cast<std::uint64_t>(num->get());
                    } else if (const auto* s = e.node->as_string()) {
                        auto size = units::parse_size(s->get());
                        if (!size) return fail(e.node->source(), sub, size.error().message());
                        if (*size == 0)
                            return fail(e.node->source(), sub, "expected a size greater than 0");
                        rule.size_bytes = *size;
                    } else {
                        return expected(*e.node, sub, "a size such as \"256M\" or a number of bytes");
                    }
                } else {
                    return unknown_key(e, sub, {"path", "size"});
                }
            }
            if (!have_path) return fail(t->source(), item_key, "expected a table with 'path'");
        } else {
            return expected(item, item_key, "a path string or a table");
        }
        out_.tmpfs.push_back(std::move(rule));
    }
    return true;
}

}  // namespace agentjail::policy::detail
