// SPDX-License-Identifier: Apache-2.0
// [network] in the policy: merging a layer's section, the checks of host
// patterns and pins, and the overrides the CLI and the APIs share (--net,
// --allow-host, --deny-host, --net-preset).
#include "policy/embedded.hpp"
#include "policy/internal.hpp"

#include "netrules/address.hpp"
#include "netrules/rules.hpp"
#include "netrules/secret_spec.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>

namespace agentjail::policy {

namespace detail {

void apply_network(Policy& p, const Layer& l) {
    NetworkPolicy& n = p.network;
    if (l.net_mode) n.mode = *l.net_mode;
    n.allow.insert(n.allow.end(), l.net_allow.begin(), l.net_allow.end());
    n.deny.insert(n.deny.end(), l.net_deny.begin(), l.net_deny.end());
    for (const auto& pin : l.net_hosts) {
        // A later layer re-pinning a name moves it; two addresses for one name
        // would leave it unclear where the proxy connects.
        std::string key = net::normalize_host(pin.host);
        bool replaced = false;
        for (auto& old : n.hosts) {
            if (net::normalize_host(old.host) == key) {
                old = pin;
                replaced = true;
            }
        }
        if (!replaced) n.hosts.push_back(pin);
    }
    if (l.net_log) n.log = *l.net_log;
    if (l.net_max_connections) n.max_connections = *l.net_max_connections;
    n.publish.insert(n.publish.end(), l.net_publish.begin(), l.net_publish.end());
    for (const auto& g : l.net_gateways)
        if (std::none_of(n.gateways.begin(), n.gateways.end(), [&](const GatewayRule& o) { return o.var == g.var; }))
            n.gateways.push_back(g);
    for (const auto& sec : l.secrets) {
        auto same = std::find_if(n.secrets.begin(), n.secrets.end(),
                                 [&](const SecretRule& o) { return o.name == sec.name; });
        if (same != n.secrets.end())
            *same = sec;
        else
            n.secrets.push_back(sec);
    }
}

std::string check_secret_header(std::string_view s) {
    bool token = !s.empty() && s.size() <= 64;
    for (char c : s)
        token = token && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
    if (!token) return "'" + std::string(s) + "' is not a header name (letters, digits, '-')";
    std::string lower(s);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // These are reflected by origins (CORS, redirects, Set-Cookie) or are the proxy's
    // own: a secret there would come back into the sandbox or go where it must not.
    for (const char* never : {"origin", "referer", "cookie", "host", "proxy-authorization",
                              "content-length", "transfer-encoding", "connection"})
        if (lower == never)
            return "a secret cannot go in " + std::string(s) +
                   " (it is echoed or not a credential)";
    return {};
}

std::string check_secret_source(std::string_view s) {
    std::string why;
    auto spec = net::parse_source(s, &why);
    if (!spec) return why;
    // file: and json: in a policy are absolute (or ~, {workspace}, {tmp}), like every
    // other path there; dotenv:.env means the .env of the directory agentjail runs in.
    if (spec->kind == net::SourceSpec::Kind::file || spec->kind == net::SourceSpec::Kind::json) {
        std::string problem = check_path(spec->where);
        if (!problem.empty()) return "'" + std::string(s) + "': " + problem;
    }
    return {};
}

std::string check_host_pattern(std::string_view s) {
    std::string why;
    if (!net::parse_host_pattern(s, &why)) return why;
    return {};
}

std::string check_method(std::string_view s) { return net::check_method_name(s); }

std::string check_path_glob(std::string_view s) { return net::check_path_pattern(s); }

std::string check_pin_name(std::string_view s) {
    std::string why;
    auto p = net::parse_host_pattern(s, &why);
    if (!p) return why;
    if (p->kind != net::HostPattern::Kind::exact || p->port || p->numeric)
        return "'" + std::string(s) + "': a pinned host is one exact name, without '*' or a port";
    return {};
}

std::string check_pin_address(std::string_view s) {
    // Only the plain forms: a pin is written by a person, and "0x7f.1" there would
    // only hide what it means.
    auto a = net::parse_numeric_host(s);
    if (!a || (a->to_string() != s && "[" + a->to_string() + "]" != s))
        return "'" + std::string(s) + "' is not an IP address (write e.g. \"127.0.0.1\" or \"::1\")";
    return {};
}

}  // namespace detail

const char* net_mode_name(NetMode m) {
    switch (m) {
        case NetMode::none: return "none";
        case NetMode::proxy: return "proxy";
        case NetMode::host: return "host";
    }
    return "none";
}

Result<void> set_net_mode(Policy& p, const std::string& mode, Origin origin) {
    NetMode m;
    if (mode == "none")
        m = NetMode::none;
    else if (mode == "proxy")
        m = NetMode::proxy;
    else if (mode == "host")
        m = NetMode::host;
    else
        return detail::error_at(origin, "expected \"none\", \"proxy\" or \"host\", got \"" + mode + "\"");
    p.network.mode = Located<NetMode>{m, std::move(origin)};
    return {};
}

namespace {

Result<void> add_rule(Policy& p, std::vector<HostRule>& to, const std::string& pattern, Origin origin) {
    std::string problem = detail::check_host_pattern(pattern);
    if (!problem.empty()) return detail::error_at(origin, problem);
    // An allow entry is a request for the network: with no mode chosen yet it means
    // the proxy (what else could "allow this host" mean).
    if (&to == &p.network.allow && p.network.mode.value == NetMode::none)
        p.network.mode = Located<NetMode>{NetMode::proxy, origin};
    HostRule rule;
    rule.pattern = pattern;
    rule.origin = std::move(origin);
    to.push_back(std::move(rule));
    return {};
}

}  // namespace

Result<void> add_allow_host(Policy& p, const std::string& pattern, Origin origin) {
    return add_rule(p, p.network.allow, pattern, std::move(origin));
}

Result<void> add_deny_host(Policy& p, const std::string& pattern, Origin origin) {
    return add_rule(p, p.network.deny, pattern, std::move(origin));
}

namespace {

// The API a well-known key is for, and the variable that names a gateway for that
// API: a --secret of that name without hosts goes there (and to the gateway).
struct KnownKey {
    const char* name;
    const char* host;
    const char* base_url;  // "" when the key is never sent to a gateway
};
const KnownKey* known_key(const std::string& name) {
    static const KnownKey known[] = {
        {"ANTHROPIC_API_KEY", "api.anthropic.com", "ANTHROPIC_BASE_URL"},
        {"ANTHROPIC_AUTH_TOKEN", "api.anthropic.com", "ANTHROPIC_BASE_URL"},
        {"CLAUDE_CODE_OAUTH_TOKEN", "api.anthropic.com", ""},
        {"OPENAI_API_KEY", "api.openai.com", "OPENAI_BASE_URL"},
        {"CODEX_API_KEY", "api.openai.com", "OPENAI_BASE_URL"},
        {"GEMINI_API_KEY", "generativelanguage.googleapis.com", "GOOGLE_GEMINI_BASE_URL"},
        {"GOOGLE_API_KEY", "generativelanguage.googleapis.com", "GOOGLE_GEMINI_BASE_URL"},
        {"GITHUB_TOKEN", "api.github.com", ""},
        {"GH_TOKEN", "api.github.com", ""},
    };
    for (const auto& k : known)
        if (name == k.name) return &k;
    return nullptr;
}

}  // namespace

Result<void> add_secret(Policy& p, const std::string& spec, Origin origin) {
    // NAME=SOURCE[@HOST[,HOST...]]; the last '@' separates the hosts (a file path
    // holding one needs the hosts written out).
    size_t eq = spec.find('=');
    size_t at = spec.rfind('@');
    if (eq == std::string::npos)
        return detail::error_at(origin, "'" + spec + "': expected NAME=SOURCE@HOST[,HOST...] (SOURCE: env:VARIABLE, "
                                        "file:PATH, dotenv:FILE[#KEY] or json:FILE#dotted.path)");
    bool has_hosts = at != std::string::npos && at > eq;
    SecretRule rule;
    rule.name = spec.substr(0, eq);
    std::string source = spec.substr(eq + 1, has_hosts ? at - eq - 1 : std::string::npos);
    rule.sources.push_back({source, origin});
    rule.origin = origin;
    std::string problem = detail::check_env_name(rule.name);
    if (problem.empty()) {
        std::string why;
        if (!net::parse_source(source, &why)) problem = why;
    }
    if (problem.empty() && !has_hosts) {
        // Without hosts the flag gives the policy's own entry for NAME another source
        // (an agent preset declares where ANTHROPIC_API_KEY goes; the user says where
        // it is): its hosts and headers stay, and it is no longer optional. What the
        // entry said about its own source's file (expires, help) does not carry over.
        auto same = std::find_if(p.network.secrets.begin(), p.network.secrets.end(),
                                 [&](const SecretRule& o) { return o.name == rule.name; });
        const KnownKey* known = known_key(rule.name);
        if ((same == p.network.secrets.end() || same->hosts.empty()) && known == nullptr)
            return detail::error_at(origin, "'" + spec + "': which hosts is " + rule.name +
                                                " for? The policy does not say; add them: --secret " + spec +
                                                "@HOST[,HOST...]");
        if (same == p.network.secrets.end() || same->hosts.empty()) {
            // A well-known key goes to its API, and to the gateway its base-URL
            // variable names when that is set (`--secret ANTHROPIC_API_KEY=dotenv:.env`).
            rule.hosts = {known->host};
            rule.base_url = known->base_url;
            if (p.network.mode.value == NetMode::none) p.network.mode = Located<NetMode>{NetMode::proxy, origin};
            if (same != p.network.secrets.end())
                *same = std::move(rule);
            else
                p.network.secrets.push_back(std::move(rule));
            return {};
        }
        same->sources = std::move(rule.sources);
        same->optional = false;
        same->expires.clear();
        same->help.clear();
        same->origin = origin;
        if (p.network.mode.value == NetMode::none) p.network.mode = Located<NetMode>{NetMode::proxy, origin};
        return {};
    }
    std::string hosts = has_hosts ? spec.substr(at + 1) : std::string();
    size_t i = 0;
    while (problem.empty() && i <= hosts.size()) {
        size_t comma = hosts.find(',', i);
        if (comma == std::string::npos) comma = hosts.size();
        std::string h = hosts.substr(i, comma - i);
        problem = detail::check_host_pattern(h);
        rule.hosts.push_back(h);
        i = comma + 1;
    }
    if (!problem.empty()) return detail::error_at(origin, problem);
    // A secret is only useful through the proxy, so it asks for it like --allow-host.
    if (p.network.mode.value == NetMode::none) p.network.mode = Located<NetMode>{NetMode::proxy, origin};
    auto same = std::find_if(p.network.secrets.begin(), p.network.secrets.end(),
                             [&](const SecretRule& o) { return o.name == rule.name; });
    if (same != p.network.secrets.end())
        *same = std::move(rule);
    else
        p.network.secrets.push_back(std::move(rule));
    return {};
}

std::string parse_publish(const std::string& spec, std::uint16_t& port, std::uint16_t& host_port) {
    auto number = [](const std::string& s, std::uint16_t& out) {
        if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos) return false;
        unsigned long v = std::stoul(s);
        if (v == 0 || v > 65535) return false;
        out = static_cast<std::uint16_t>(v);
        return true;
    };
    size_t colon = spec.find(':');
    std::string inside = spec.substr(0, colon);
    std::string outside = colon == std::string::npos ? inside : spec.substr(colon + 1);
    if (!number(inside, port) || !number(outside, host_port))
        return "'" + spec + "': expected PORT or PORT:HOSTPORT (the port inside, then the host's), 1 to 65535";
    return {};
}

Result<void> add_publish(Policy& p, const std::string& spec, Origin origin) {
    PublishRule r;
    std::string problem = parse_publish(spec, r.port, r.host_port);
    if (!problem.empty()) return detail::error_at(origin, problem);
    r.origin = std::move(origin);
    p.network.publish.push_back(std::move(r));
    return {};
}

Result<void> apply_net_preset(Policy& p, const std::string& name, Origin origin) {
    std::string text, file;
    bool is_path = name.find('/') != std::string::npos ||
                   (name.size() >= 5 && name.substr(name.size() - 5) == ".toml");
    if (is_path) {
        auto r = detail::read_small_file(name);
        if (r.err != 0) return detail::error_at(origin, "cannot read network preset '" + name + "': " + r.why);
        text = std::move(r.text);
        file = name;
    } else {
        std::string builtin = util::starts_with(name, "net-") ? name : "net-" + name;
        const EmbeddedPolicy* b = nullptr;
        std::string names;
        for (const auto& e : embedded_policies()) {
            std::string_view n = e.name;
            if (n.substr(0, 4) != "net-") continue;
            names += (names.empty() ? "" : ", ") + std::string(n.substr(4));
            if (n == builtin) b = &e;
        }
        if (!b)
            return detail::error_at(origin, "unknown network preset '" + name + "' (built-in presets: " + names +
                                                "; or give a path to a .toml file)");
        text = b->text;
        file = std::string(b->name) + ".toml";
    }
    auto layer = detail::parse_layer(text, file, is_path ? detail::Source::file : detail::Source::embedded);
    if (!layer) return std::move(layer).error();
    const std::string shown = is_path ? file : file.substr(0, file.size() - 5);
    if (layer->net_mode && layer->net_mode->value == NetMode::none) {
        // A preset that turns the network off (locked) drops what the policy's layers
        // allow, but keeps the agent preset's own hosts (its model API and start-up
        // check; its secrets' and gateways' hosts are the plan's) and what the command
        // line allows, before or after it: `locked` under claude is claude's API and
        // nothing else, and `--allow-host X` adds exactly X.
        NetworkPolicy& n = p.network;
        const std::string& agent_file = p.agent.name.origin.file;
        size_t dropped = 0;
        std::erase_if(n.allow, [&](const HostRule& r) {
            // A layer's rule has its file's line; a flag's or the API's has none.
            bool keep = r.origin.line == 0 || (!agent_file.empty() && r.origin.file == agent_file);
            dropped += keep ? 0 : 1;
            return !keep;
        });
        const bool left = !n.allow.empty() || !n.secrets.empty() || !n.gateways.empty();
        n.mode = Located<NetMode>{left ? NetMode::proxy : NetMode::none, origin};
        std::string note = "network preset " + shown + ": dropped " + std::to_string(dropped) +
                           " allowed host rule(s) of the policy";
        if (left)
            note += "; kept " +
                    (agent_file.empty() ? std::string("the command line's")
                                        : "the agent's own (" + agent_file + "), its secrets' hosts and the command line's");
        n.notes.push_back(note);
        p.layers.push_back(shown + " (net preset)");
        return {};
    }
    // Only the preset's [network] is taken: a preset adds network rules on top of
    // whatever policy is in force, it never changes the filesystem or the rest.
    detail::apply_network(p, *layer);
    p.layers.push_back(shown + " (net preset)");
    return {};
}

}  // namespace agentjail::policy
