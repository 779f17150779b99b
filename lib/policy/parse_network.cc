// SPDX-License-Identifier: Apache-2.0
// The TOML parser, [network] (mode, presets, hosts, gateways, publish) and [secrets].
#include "policy/parser.hpp"

#include "base/units.hpp"
#include "netrules/secret_spec.hpp"

namespace agentjail::policy::detail {

// [network]: the mode, host patterns (checked here, so `agentjail check` finds a
// bad one), pins, the log and the connection limit (docs/network.md).
bool Parser::network(const toml::table& t) {
    static const std::vector<std::string_view> known = {"mode", "allow", "deny", "hosts", "log",
                                                        "max_connections", "gateways", "publish"};
    for (const auto& e : entries(t)) {
        std::string_view k = e.key->str();
        std::string key = "network." + std::string(k);
        const toml::node& n = *e.node;
        if (k == "mode") {
            size_t which = 0;
            if (!choice(n, key, {"none", "proxy", "host"}, which)) return false;
            static constexpr NetMode modes[] = {NetMode::none, NetMode::proxy, NetMode::host};
            out_.net_mode = Located<NetMode>{modes[which], origin(n.source(), key)};
        } else if (k == "allow" || k == "deny") {
            const toml::array* a = nullptr;
            if (!array_of(n, key, a)) return false;
            for (size_t i = 0; i < a->size(); ++i) {
                std::string item_key = key + "[" + std::to_string(i) + "]";
                HostRule rule;
                if (!host_rule(*a->get(i), item_key, rule)) return false;
                (k == "allow" ? out_.net_allow : out_.net_deny).push_back(std::move(rule));
            }
        } else if (k == "hosts") {
            const toml::table* hosts = nullptr;
            if (!table_of(n, key, hosts)) return false;
            for (const auto& h : entries(*hosts)) {
                std::string name(h.key->str());
                std::string sub = key + "." + name;
                std::string problem = check_pin_name(name);
                if (!problem.empty()) return fail(h.key->source(), sub, problem);
                std::string address;
                if (!checked(*h.node, sub, address, check_pin_address)) return false;
                out_.net_hosts.push_back({name, address, origin(h.node->source(), sub)});
            }
        } else if (k == "log") {
            if (!log_path(n, key, out_.net_log)) return false;
        } else if (k == "gateways") {
            const toml::array* a = nullptr;
            if (!array_of(n, key, a)) return false;
            for (size_t i = 0; i < a->size(); ++i) {
                GatewayRule g;
                std::string item_key = key + "[" + std::to_string(i) + "]";
                if (!checked(*a->get(i), item_key, g.var, check_env_name)) return false;
                g.origin = origin(a->get(i)->source(), item_key);
                out_.net_gateways.push_back(std::move(g));
            }
        } else if (k == "publish") {
            const toml::array* a = nullptr;
            if (!array_of(n, key, a)) return false;
            for (size_t i = 0; i < a->size(); ++i) {
                std::string item_key = key + "[" + std::to_string(i) + "]";
                std::string spec;
                if (!string(*a->get(i), item_key, spec)) return false;
                PublishRule pr;
                std::string problem = parse_publish(spec, pr.port, pr.host_port);
                if (!problem.empty()) return fail(a->get(i)->source(), item_key, problem);
                pr.origin = origin(a->get(i)->source(), item_key);
                out_.net_publish.push_back(std::move(pr));
            }
        } else if (k == "max_connections") {
            const auto* i = n.as_integer();
            if (!i) return expected(n, key, "a number of connections");
            if (i->get() < 1 || i->get() > 65536)
                return fail(n.source(), key, "expected a number from 1 to 65536");
            out_.net_max_connections = Located<std::uint64_t>{static_cast<std::uint64_t>(i->get()),
                                                              origin(n.source(), key)};
        } else {
            return unknown_key(e, key, known);
        }
    }
    return true;
}

// One allow/deny entry: a host pattern, or { host = PATTERN, methods = [...],
// paths = [...] } for a rule that applies to some requests only.
bool Parser::host_rule(const toml::node& n, const std::string& key, HostRule& rule) {
    rule.origin = origin(n.source(), key);
    if (!n.is_table()) return checked(n, key, rule.pattern, check_host_pattern);
    const toml::table& t = *n.as_table();
    for (const auto& f : entries(t)) {
        std::string_view k = f.key->str();
        std::string sub = key + "." + std::string(k);
        if (k == "host") {
            if (!checked(*f.node, sub, rule.pattern, check_host_pattern)) return false;
        } else if (k == "methods" || k == "paths") {
            const toml::array* a = nullptr;
            if (!array_of(*f.node, sub, a)) return false;
            if (a->empty()) return fail(f.node->source(), sub, "expected at least one entry (leave the key out for all)");
            for (size_t i = 0; i < a->size(); ++i) {
                std::string v;
                if (!checked(*a->get(i), sub + "[" + std::to_string(i) + "]", v,
                             k == "methods" ? check_method : check_path_glob))
                    return false;
                (k == "methods" ? rule.methods : rule.paths).push_back(v);
            }
        } else {
            return unknown_key(f, sub, {"host", "methods", "paths"});
        }
    }
    if (rule.pattern.empty()) return fail(n.source(), key, "expected a table with 'host' (and 'methods' or 'paths')");
    return true;
}

// [secrets]: NAME = { source = SOURCE | [SOURCE, ...], hosts = ["api.example.com"],
// headers = ["X-Goog-Api-Key"], optional = true, expires = "json.path", help = "..." }.
bool Parser::secrets(const toml::table& t) {
    for (const auto& e : entries(t)) {
        std::string name(e.key->str());
        std::string key = "secrets." + name;
        std::string problem = check_env_name(name);
        if (!problem.empty()) return fail(e.key->source(), key, problem);
        const toml::table* st = nullptr;
        if (!table_of(*e.node, key, st)) return false;
        SecretRule rule;
        rule.name = name;
        rule.origin = origin(e.node->source(), key);
        bool have_source = false;
        const toml::node* expires_node = nullptr;
        for (const auto& f : entries(*st)) {
            std::string_view k = f.key->str();
            std::string sub = key + "." + std::string(k);
            if (k == "source") {
                // One source, or alternatives tried in order.
                auto one = [&](const toml::node& n, const std::string& item) {
                    std::string src;
                    if (!checked(n, item, src, check_secret_source)) return false;
                    rule.sources.push_back({src, origin(n.source(), item)});
                    return true;
                };
                if (const auto* a = f.node->as_array()) {
                    if (a->empty()) return fail(f.node->source(), sub, "expected at least one source");
                    for (size_t i = 0; i < a->size(); ++i)
                        if (!one(*a->get(i), sub + "[" + std::to_string(i) + "]")) return false;
                } else if (!one(*f.node, sub)) {
                    return false;
                }
                have_source = true;
            } else if (k == "hosts") {
                const toml::array* a = nullptr;
                if (!array_of(*f.node, sub, a)) return false;
                if (a->empty()) return fail(f.node->source(), sub, "expected at least one host");
                for (size_t i = 0; i < a->size(); ++i) {
                    std::string h;
                    if (!checked(*a->get(i), sub + "[" + std::to_string(i) + "]", h, check_host_pattern))
                        return false;
                    rule.hosts.push_back(h);
                }
            } else if (k == "headers") {
                const toml::array* a = nullptr;
                if (!array_of(*f.node, sub, a)) return false;
                for (size_t i = 0; i < a->size(); ++i) {
                    std::string h;
                    if (!checked(*a->get(i), sub + "[" + std::to_string(i) + "]", h,
                                 check_secret_header))
                        return false;
                    rule.headers.push_back(h);
                }
            } else if (k == "optional") {
                std::optional<Located<bool>> b;
                if (!boolean(*f.node, sub, b)) return false;
                rule.optional = b->value;
            } else if (k == "expires") {
                if (!checked(*f.node, sub, rule.expires, net::check_json_path)) return false;
                expires_node = f.node;
            } else if (k == "help") {
                if (!string(*f.node, sub, rule.help)) return false;
                // Said on stderr in one line: no control characters.
                for (char c : rule.help)
                    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
                        return fail(f.node->source(), sub, "expected one line of text (no control characters)");
            } else if (k == "base_url") {
                if (!checked(*f.node, sub, rule.base_url, check_env_name)) return false;
            } else {
                return unknown_key(f, sub, {"source", "hosts", "headers", "optional", "expires", "help", "base_url"});
            }
        }
        if (!have_source || (rule.hosts.empty() && rule.base_url.empty()))
            return fail(e.node->source(), key, "expected a table with 'source' and 'hosts' (or 'base_url')");
        if (expires_node != nullptr &&
            std::none_of(rule.sources.begin(), rule.sources.end(),
                         [](const Located<std::string>& s) { return s.value.rfind("json:", 0) == 0; }))
            return fail(expires_node->source(), key + ".expires",
                        "expires is a JSON path in the file of a json: source, and this secret has none");
        out_.secrets.push_back(std::move(rule));
    }
    return true;
}

}  // namespace agentjail::policy::detail
