// SPDX-License-Identifier: Apache-2.0
// The network part of the plan: the mode (none, proxy, host) turned into clone
// flags, the proxy's settings (compiled host rules, pins, log path), the proxy
// variables of the command's environment, and explain's network section.
#include "plan/internal.hpp"

#include "netrules/address.hpp"
#include "netrules/http.hpp"
#include "netrules/rules.hpp"
#include "plan/host_view.hpp"

#include <nlohmann/json.hpp>

#include "util/strings.hpp"

#include <sched.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <map>
#include <optional>

namespace agentjail::plan::detail {

namespace {

Error invalid_at(const policy::Origin& o, const std::string& message) {
    return Error(ErrorKind::invalid_input, EINVAL, with_origin(describe(o), message));
}

Result<net::Rule> compile_rule(const policy::HostRule& r) {
    std::string why;
    auto p = net::parse_host_pattern(r.pattern, &why);
    if (!p) return invalid_at(r.origin, why);
    net::Rule out;
    out.pattern = *p;
    out.text = r.pattern;
    // The log's "rule": file:line:col for a policy entry, the flag for a command-line one.
    out.origin = r.origin.line > 0 ? r.origin.file + ":" + std::to_string(r.origin.line) + ":" +
                                         std::to_string(r.origin.column)
                                   : describe(r.origin);
    out.methods = r.methods;
    out.paths = r.paths;
    return out;
}

// Sets NAME=VALUE in plan.env (sorted, as build_env leaves it), replacing a value
// the caller or the policy gave: a proxy variable pointing elsewhere would only
// make programs fail in a confusing way.
void set_env(Plan& plan, const std::string& name, const std::string& value) {
    std::string prefix = name + "=";
    plan.env.erase(std::remove_if(plan.env.begin(), plan.env.end(),
                                  [&](const std::string& kv) { return kv.compare(0, prefix.size(), prefix) == 0; }),
                   plan.env.end());
    plan.env.push_back(prefix + value);
    std::sort(plan.env.begin(), plan.env.end(), [](const std::string& a, const std::string& b) {
        return a.substr(0, a.find('=')) < b.substr(0, b.find('='));
    });
}

std::string random_hex(size_t bytes);


std::string random_hex(size_t bytes) {
    unsigned char raw[32] = {};
    if (bytes > sizeof raw) bytes = sizeof raw;
    size_t got = 0;
    while (got < bytes) {
        ssize_t n = ::getrandom(raw + got, bytes - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    return util::hex(raw, bytes);
}

// Where the sandbox finds the run's CA bundle, and the variables that point the
// common TLS stacks and package managers at it: OpenSSL (and so Python's ssl, uv,
// Ruby's gem and bundler, Go), curl, Python requests (poetry), Node's own requests
// (added to its roots), npm and pnpm (npm's `cafile`: npm's registry client ignores
// NODE_EXTRA_CA_CERTS), yarn 1 and 2+, bun, git, pip, cargo, Composer, Deno, the
// AWS CLI, Hex and Nix. Java keeps its own trust store (docs/network.md).
constexpr const char* ca_bundle_inside = "/run/agentjail/ca-bundle.pem";
constexpr const char* ca_bundle_vars[] = {
    "SSL_CERT_FILE",     "CURL_CA_BUNDLE",          "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "npm_config_cafile", "YARN_CAFILE",             "YARN_HTTPS_CA_FILE_PATH", "BUN_CA_BUNDLE_PATH",
    "GIT_SSL_CAINFO",    "PIP_CERT",                "CARGO_HTTP_CAINFO",  "COMPOSER_CAFILE",
    "DENO_CERT",         "AWS_CA_BUNDLE",           "HEX_CACERTS_PATH",   "NIX_SSL_CERT_FILE"};

std::string utc_time(double t) {
    std::time_t secs = static_cast<std::time_t>(t);
    std::tm tm {};
    ::gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
    return buf;
}

// The file a source names, for messages ("~/.claude/.credentials.json" stays as
// the user knows it when it is under the home directory).
std::string shown_path(const std::string& path, const std::string& home) {
    if (!home.empty() && util::path_within(path, home) && path != home) return "~" + path.substr(home.size());
    return path;
}

// A gateway variable's value: http:// or https://, a host (a name, an IPv4
// address or a bracketed IPv6 one), an optional port, an optional path. "" when it
// is one, else what is wrong with it.
std::string parse_gateway_url(const std::string& url, net::Gateway& g) {
    std::string rest;
    if (url.rfind("http://", 0) == 0) {
        rest = url.substr(7);
    } else if (url.rfind("https://", 0) == 0) {
        g.https = true;
        rest = url.substr(8);
    } else {
        return "expected an http:// or https:// URL";
    }
    for (char c : url)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return "a space or control character in the URL";
    std::string authority = rest.substr(0, rest.find_first_of("/?#"));
    if (authority.empty()) return "no host in the URL";
    if (authority.find('@') != std::string::npos) return "user info (user:password@) in the URL is not supported";
    std::string host;
    std::uint16_t port = 0;
    if (!net::split_authority(authority, g.https ? 443 : 80, host, port)) return "a malformed host or port";
    if (host.find(':') != std::string::npos && !net::parse_numeric_host(host)) return "a malformed IPv6 address";
    g.host = net::normalize_host(host);
    if (g.host.empty()) return "no host in the URL";
    g.port = port;
    auto numeric = net::parse_numeric_host(g.host);
    if (numeric && net::classify(*numeric) == net::AddressKind::loopback) {
        g.loopback = true;
        g.address = *numeric;
    } else if (g.host == "localhost") {
        // Inside, localhost is 127.0.0.1 (the sandbox's /etc/hosts): the listener is
        // there, and the proxy connects to the same address on the host.
        g.loopback = true;
        g.address = *net::parse_numeric_host("127.0.0.1");
    }
    return {};
}

// The gateway variables: [network] gateways, then the variables secrets name as
// base_url (which makes them gateways too), each once.
std::vector<policy::GatewayRule> gateway_vars(const policy::NetworkPolicy& n) {
    std::vector<policy::GatewayRule> out = n.gateways;
    for (const auto& sec : n.secrets) {
        if (sec.base_url.empty()) continue;
        if (std::none_of(out.begin(), out.end(), [&](const policy::GatewayRule& g) { return g.var == sec.base_url; }))
            out.push_back({sec.base_url, sec.origin});
    }
    return out;
}

// The gateways whose variables are set in agentjail's environment, each variable
// passed into the sandbox unchanged (it names a URL, not a credential, so even an
// environment deny rule does not hold it back). A malformed URL is an error.
Result<std::vector<net::Gateway>> plan_gateways(const policy::NetworkPolicy& n, const HostFacts& host, Plan& plan) {
    std::vector<net::Gateway> out;
    for (const auto& rule : gateway_vars(n)) {
        auto v = env_lookup(host.environ, rule.var);
        if (!v || v->empty()) continue;
        net::Gateway g;
        g.var = rule.var;
        g.url = *v;
        std::string why = parse_gateway_url(*v, g);
        if (!why.empty())
            return invalid_at(rule.origin, "gateway $" + rule.var + " = '" + util::printable(*v) + "': " + why);
        set_env(plan, rule.var, *v);
        out.push_back(std::move(g));
    }
    return out;
}

// A host a secret goes to, as a rule: the pattern parsed (an error at the secret's
// place in the policy), its text and the origin the log shows.
Result<net::Rule> secret_host_rule(const std::string& text, const std::string& origin, const policy::Origin& at) {
    std::string why;
    auto p = net::parse_host_pattern(text, &why);
    if (!p) return invalid_at(at, why);
    net::Rule rule;
    rule.pattern = *p;
    rule.text = text;
    rule.origin = origin;
    return rule;
}

Result<void> plan_secret(const policy::SecretRule& sec, const HostFacts& host, const ExpandContext& ctx,
                         const PlaceholderKey& key, Plan& plan, net::Settings& s) {
    net::Secret out;
    out.name = sec.name;
    out.headers = sec.headers;
    // Every alternative resolved (paths absolute) and checked now, so that a missing
    // source fails before anything runs; the value itself is read by the proxy once
    // the sandbox exists (proxy.cc), and what is read here to check it is wiped.
    std::vector<net::SourceSpec> specs;
    std::vector<std::string> resolved;
    for (const auto& src : sec.sources) {
        std::string why;
        auto spec = net::parse_source(src.value, &why);
        if (!spec) return invalid_at(src.origin, why);
        if (spec->kind != net::SourceSpec::Kind::env) {
            std::string raw = spec->where;
            // A relative path means what it means in the caller's shell.
            if (!raw.empty() && raw[0] != '/' && raw[0] != '~' && raw[0] != '{') raw = host.cwd + "/" + raw;
            auto path = expand(raw, ctx, src.origin);
            if (!path) return std::move(path).error();
            spec->where = *path;
        }
        // The key written out, so that the text the proxy parses again means the
        // same even when the path holds a '#'.
        if (spec->kind == net::SourceSpec::Kind::dotenv && spec->key.empty()) spec->key = sec.name;
        resolved.push_back(net::source_text(*spec));
        specs.push_back(std::move(*spec));
    }
    std::vector<std::string> misses;
    std::optional<size_t> chosen;
    net::SourceProbe probe;  // netrules/secret_value.hpp
    for (size_t i = 0; i < specs.size() && !chosen; ++i) {
        bool json = specs[i].kind == net::SourceSpec::Kind::json;
        probe = ctx.view->probe_secret(specs[i], sec.name, host.environ, json ? sec.expires : std::string());
        if (probe.available)
            chosen = i;
        else
            misses.push_back(probe.why);
    }
    std::string missed;
    for (const auto& m : misses) missed += (missed.empty() ? "" : "; ") + m;
    if (!chosen) {
        if (sec.optional) {
            s.secrets_not_set.push_back(sec.name + " not set (optional: " + missed + ")");
            plan.notes.push_back("secret " + sec.name + ": not set (optional; " + missed + "): $" + sec.name +
                                 " is not set inside and its hosts are not added");
            return {};
        }
        if (specs.size() == 1 && specs[0].kind == net::SourceSpec::Kind::env)
            return invalid_at(sec.origin, "secret " + sec.name + ": $" + specs[0].where +
                                              " is not set in agentjail's environment");
        return invalid_at(sec.origin, "secret " + sec.name + ": " +
                                          (specs.size() == 1 ? missed : "none of its sources is available (" + missed + ")"));
    }
    out.source = resolved[*chosen];
    if (*chosen > 0) out.detail = "the first available of " + std::to_string(specs.size()) + " sources; " + missed;
    if (probe.expires_at && *probe.expires_at < static_cast<double>(std::time(nullptr))) {
        // Still run: the agent may refresh it, or the user may only need a part that
        // works without it; but a 401 from deep inside an agent is a poor way to learn it.
        std::string w = "secret " + sec.name + ": the token in " + shown_path(specs[*chosen].where, host.home) +
                        " expired at " + utc_time(*probe.expires_at);
        if (!sec.help.empty()) w += ": " + sec.help;
        plan.warnings.push_back(w);
        out.detail += (out.detail.empty() ? "" : "; ") + std::string("expired at ") + utc_time(*probe.expires_at);
    }
    std::string rule_origin = describe(sec.origin);
    for (const auto& h : sec.hosts) {
        auto rule = secret_host_rule(h, rule_origin, sec.origin);
        if (!rule) return std::move(rule).error();
        out.hosts.push_back(*rule);
        // The hosts a secret is for are allowed: the secret is meaningless otherwise.
        // (Implied: method and path rules written for the host still decide.) A
        // stored secret's are allowed already: it is only put in where they are.
        rule->implied = true;
        if (!sec.stored) s.rules.allow.push_back(std::move(*rule));
    }
    if (!sec.base_url.empty()) {
        // The gateway's origin gets the value too: over TLS, or over plain HTTP when
        // it is on loopback (then it never leaves the machine). A plain-HTTP gateway
        // elsewhere would carry it in clear: it gets the placeholder.
        for (const auto& g : s.gateways) {
            if (g.var != sec.base_url) continue;
            if (!g.https && !g.loopback) {
                plan.notes.push_back("secret " + sec.name + ": not put in at $" + g.var + " (" + g.url +
                                     "): plain HTTP to another machine would carry it in clear");
                continue;
            }
            std::string hp = (g.host.find(':') != std::string::npos ? "[" + g.host + "]" : g.host) + ":" +
                             std::to_string(g.port);
            auto rule = secret_host_rule(hp, "gateway $" + g.var + " (" + describe(sec.origin) + ")", sec.origin);
            if (!rule) return std::move(rule).error();
            out.hosts.push_back(std::move(*rule));
        }
    }
    // Stable across runs for one secret, source and agent state directory, so an
    // agent that remembers the key it was told to use asks once (placeholder.cc).
    out.placeholder = key.key.empty() ? std::string() : stable_placeholder(key.key, plan.state_dir, sec.name, resolved);
    if (out.placeholder.empty()) {
        out.placeholder = make_placeholder(sec.name);
        out.detail += (out.detail.empty() ? "" : "; ") + std::string("placeholder random for this run");
        plan.notes.push_back("secret " + sec.name + ": the placeholder is random for this run (" +
                             (key.why_not.empty() ? "no placeholder key" : key.why_not) +
                             "), so an agent that remembers approved keys asks again");
    }
    set_env(plan, sec.name, out.placeholder);
    s.secrets.push_back(std::move(out));
    return {};
}

}  // namespace

// A placeholder no real credential looks like, unique per run, so the proxy
// replaces exactly it and nothing else.
std::string make_placeholder(const std::string& name) { return "agentjail-secret-placeholder-" + name + "-" + random_hex(16); }

Result<void> build_network(const policy::Policy& policy, const HostFacts& host, const ExpandContext& ctx,
                           const PlaceholderKey& key, Plan& plan) {
    const policy::NetworkPolicy& n = policy.network;
    plan.net_mode = n.mode.value;
    plan.net.reset();
    plan.proxy_port = 0;
    std::string where = describe(n.mode.origin);
    auto gateways = plan_gateways(n, host, plan);
    if (!gateways) return std::move(gateways).error();
    plan.publish.clear();
    for (const auto& pr : n.publish) {
        if (n.mode.value == policy::NetMode::host || !policy.ns_net.value)
            return invalid_at(pr.origin, "publish " + std::to_string(pr.port) +
                                             ": the sandbox shares the host's network, so a server inside is on "
                                             "the host's loopback already (publish needs a network namespace)");
        for (const auto& other : plan.publish)
            if (other.host_port == pr.host_port)
                return invalid_at(pr.origin, "publish " + std::to_string(pr.port) + ":" + std::to_string(pr.host_port) +
                                                 ": host port " + std::to_string(pr.host_port) +
                                                 " is already published");
        plan.publish.push_back({pr.port, pr.host_port});
    }
    if (n.mode.value == policy::NetMode::none)
        for (const auto& g : *gateways)
            plan.notes.push_back("gateway $" + g.var + " (" + g.url + "): not reachable, the network mode is none");

    for (const auto& sec : n.secrets) {
        if (n.mode.value == policy::NetMode::proxy) break;
        // A stored one goes only where the proxy runs (it asks for nothing itself).
        if (sec.stored) continue;
        // An optional secret (an agent preset's) is only left out without the proxy.
        if (sec.optional) {
            plan.notes.push_back("secret " + sec.name + ": not set (optional; the network mode is " +
                                 policy::net_mode_name(n.mode.value) + ")");
            continue;
        }
        return invalid_at(sec.origin, "secret " + sec.name + " needs network mode \"proxy\" (the mode is \"" +
                                          policy::net_mode_name(n.mode.value) + "\" at " + where + ")");
    }
    if (n.mode.value == policy::NetMode::host) {
        // An explicit opt-in: the command sees and reaches everything the host does.
        plan.clone_flags &= ~static_cast<std::uint64_t>(CLONE_NEWNET);
        plan.notes.push_back("network: the sandbox shares the host's network (" + where +
                             "); nothing is filtered or logged");
        if (!n.log.value.empty())
            plan.notes.push_back("network log " + n.log.value + ": not written in host mode (there is no proxy)");
        return {};
    }
    if (n.mode.value == policy::NetMode::none) {
        if (!policy.ns_net.value)
            plan.notes.push_back("network: namespaces.net = false (" + describe(policy.ns_net.origin) +
                                 "): the sandbox shares the host's network");
        if (!n.log.value.empty())
            plan.notes.push_back("network log " + n.log.value +
                                 ": nothing to log, the network mode is none (use --net proxy)");
        return {};
    }

    // Proxy mode: the proxy's socket lives in the sandbox's own network namespace.
    if (!policy.ns_net.value)
        return invalid_at(policy.ns_net.origin,
                          "network mode \"proxy\" (" + where +
                              ") needs a network namespace, but namespaces.net = false");
    auto s = std::make_shared<net::Settings>();
    for (const auto& r : n.allow) {
        auto c = compile_rule(r);
        if (!c) return std::move(c).error();
        s->rules.allow.push_back(std::move(*c));
    }
    for (const auto& r : n.deny) {
        auto c = compile_rule(r);
        if (!c) return std::move(c).error();
        s->rules.deny.push_back(std::move(*c));
    }
    for (const auto& pin : n.hosts) {
        auto a = net::parse_numeric_host(pin.address);
        if (!a) return invalid_at(pin.origin, "'" + pin.address + "' is not an IP address");
        s->rules.pins.push_back({net::normalize_host(pin.host), *a, describe(pin.origin)});
    }
    // Each gateway's exact origin is allowed (loopback and private included: the
    // user named it); a loopback one also gets its listener inside.
    for (auto& g : *gateways) {
        std::string hp = (g.host.find(':') != std::string::npos ? "[" + g.host + "]" : g.host) + ":" +
                         std::to_string(g.port);
        std::string why;
        auto pat = net::parse_host_pattern(hp, &why);
        if (!pat) return invalid_at(n.mode.origin, "gateway $" + g.var + ": " + why);
        net::Rule rule;
        rule.pattern = *pat;
        rule.text = hp;
        rule.origin = "gateway $" + g.var;
        rule.gateway = true;
        // Like a secret's host: it makes the origin reachable, but never widens the
        // method and path rules the policy writes for it.
        rule.implied = true;
        s->rules.allow.push_back(std::move(rule));
        if (!g.loopback) continue;
        if (g.address == *net::parse_numeric_host("127.0.0.1") && g.port == s->port)
            return invalid_at(n.mode.origin, "gateway $" + g.var + " = '" + g.url + "': 127.0.0.1:" +
                                                 std::to_string(s->port) + " is where the proxy listens inside");
        g.listener = std::none_of(s->gateways.begin(), s->gateways.end(), [&](const net::Gateway& o) {
            return o.loopback && o.address == g.address && o.port == g.port;
        });
        s->gateways.push_back(g);
    }
    for (auto& g : *gateways)
        if (!g.loopback) s->gateways.push_back(g);
    for (const auto& sec : n.secrets) {
        if (sec.stored) continue;
        auto r = plan_secret(sec, host, ctx, key, plan, *s);
        if (!r) return r;
    }
    // The secrets kept with `agentjail secret set`: each goes to those of its hosts
    // the run allows by now (the policy's rules, the flags', the other secrets'),
    // and allows none itself.
    for (const auto& sec : n.secrets) {
        if (!sec.stored) continue;
        policy::SecretRule only = sec;
        only.hosts.clear();
        for (const auto& h : sec.hosts) {
            std::string why;
            auto hp = net::parse_host_pattern(h, &why);
            if (!hp) continue;
            // Its port, or (none given) the rule's own: a name kept for every port
            // goes where a rule allows that name on some port.
            auto on = [&](const net::Rule& r, bool deny) {
                return net::matches(r.pattern, hp->host, hp->port.value_or(r.pattern.port.value_or(443)), deny);
            };
            if (std::any_of(s->rules.deny.begin(), s->rules.deny.end(), [&](const net::Rule& r) { return on(r, true); }))
                continue;
            for (const auto& r : s->rules.allow)
                if (on(r, false)) {
                    const bool port_of_rule = !hp->port && r.pattern.port;
                    std::string at = port_of_rule ? h + ":" + std::to_string(*r.pattern.port) : h;
                    if (std::find(only.hosts.begin(), only.hosts.end(), at) == only.hosts.end())
                        only.hosts.push_back(at);
                }
        }
        if (only.hosts.empty()) {
            std::string hosts;
            for (const auto& h : sec.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
            plan.notes.push_back("stored secret " + sec.name + ": not put in (the run allows none of its hosts: " +
                                 hosts + ")");
            continue;
        }
        auto r = plan_secret(only, host, ctx, key, plan, *s);
        if (!r) return r;
    }
    dotenv_views(ctx, key, plan, s.get());
    bool intercepts = !s->secrets.empty();
    // A client of an https gateway on loopback speaks TLS to the listener inside,
    // which answers with the run's CA.
    for (const auto& g : s->gateways) intercepts = intercepts || (g.loopback && g.https);
    for (const auto* list : {&s->rules.allow, &s->rules.deny})
        for (const auto& r : *list) intercepts = intercepts || r.restricted();
    if (intercepts) {
        // Some requests must be seen to be checked: HTTPS to those hosts is
        // intercepted with a per-run CA that the sandbox trusts through a bundle
        // file. The proxy makes the CA and writes the file after clone (so the key
        // is in no memory the sandbox was copied from); the mount's source is in a
        // directory of the host's TMPDIR that only exists for this run.
        s->ca_bundle_host = ctx.tmp + "/agentjail-ca-" + random_hex(8) + "/ca-bundle.pem";
        s->ca_bundle_inside = ca_bundle_inside;
        MountOp m;
        m.kind = MountKind::bind;
        m.src = s->ca_bundle_host;
        m.dst = s->ca_bundle_inside;
        m.read_only = true;
        m.is_dir = false;
        m.why = "network: the run's CA bundle (system CAs and the proxy's per-run CA, for TLS interception)";
        plan.mounts.push_back(std::move(m));
        for (const char* var : ca_bundle_vars) set_env(plan, var, s->ca_bundle_inside);
    }
    // What the proxy holds for the sandbox scales with the sandbox's memory limit.
    s->bounds = net::bounds_for(plan.limits.memory_bytes,
                                static_cast<std::size_t>(n.max_connections.value));
    s->max_connections = s->bounds.max_connections;
    if (!n.log.value.empty()) {
        std::string raw = n.log.value;
        // A relative log path means what it means in the caller's shell.
        if (raw[0] != '/' && raw[0] != '~' && raw[0] != '{') raw = host.cwd + "/" + raw;
        auto log = expand(raw, ctx, n.log.origin);
        if (!log) return std::move(log).error();
        s->log_path = *log;
    }
    plan.proxy_port = s->port;
    std::string url = "http://127.0.0.1:" + std::to_string(s->port);
    // Upper and lower case: curl reads only http_proxy in lower case, most others
    // read either. ALL_PROXY is socks5h (names resolved by the proxy, never inside).
    for (const auto& [name, value] :
         std::vector<std::pair<std::string, std::string>>{{"HTTP_PROXY", url},
                                                          {"HTTPS_PROXY", url},
                                                          {"ALL_PROXY", "socks5h://127.0.0.1:" + std::to_string(s->port)},
                                                          {"NO_PROXY", "localhost,127.0.0.1,::1"}}) {
        set_env(plan, name, value);
        std::string lower = name;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        set_env(plan, lower, value);
    }
    if (s->rules.allow.empty())
        plan.notes.push_back("network: the proxy allows no host yet (" + where +
                             "); add --allow-host NAME or [network] allow");
    s->log_rules = plan.host_files;
    plan.net = std::move(s);
    return {};
}

std::string network_text(const Plan& plan) {
    std::string out = "\nnetwork:\n";
    for (const auto& pp : plan.publish)
        out += "  publish    127.0.0.1:" + std::to_string(pp.host_port) + " on the host -> 127.0.0.1:" +
               std::to_string(pp.port) + " inside (while the command runs)\n";
    switch (plan.net_mode) {
        case policy::NetMode::none:
            out += (plan.clone_flags & CLONE_NEWNET) ? "  mode       none (loopback only)\n"
                                                     : "  mode       none, but no network namespace (the host's network)\n";
            return out;
        case policy::NetMode::host: out += "  mode       host (the host's network, unfiltered)\n"; return out;
        case policy::NetMode::proxy: break;
    }
    if (!plan.net) return out;
    const net::Settings& s = *plan.net;
    out += "  mode       proxy on 127.0.0.1:" + std::to_string(s.port) + " inside (HTTP CONNECT, HTTP, SOCKS5)\n";
    auto restriction = [](const net::Rule& r) {
        std::string text;
        auto list = [](const std::vector<std::string>& v) {
            std::string l;
            for (const auto& x : v) l += (l.empty() ? "" : ",") + x;
            return l;
        };
        if (!r.methods.empty()) text += " methods " + list(r.methods);
        if (!r.paths.empty()) text += " paths " + list(r.paths);
        return text;
    };
    for (const auto& r : s.rules.deny) out += "  deny       " + r.text + restriction(r) + "  (" + r.origin + ")\n";
    for (const auto& r : s.rules.allow) out += "  allow      " + r.text + restriction(r) + "  (" + r.origin + ")\n";
    if (s.rules.allow.empty()) out += "  allow      (nothing)\n";
    for (const auto& p : s.rules.pins) out += "  pin        " + p.host + " -> " + p.address.to_string() + "  (" + p.origin + ")\n";
    out += "  refused    loopback, private, link-local, metadata, multicast and unspecified addresses"
           " (unless pinned)\n";
    out += "  limit      " + std::to_string(s.max_connections) +
           " connections at once (socket buffers " + std::to_string(s.bounds.socket_buffer / 1024) +
           " KiB, at most " + std::to_string(s.bounds.max_pipes) + " splice pipes of " +
           std::to_string(s.bounds.pipe_size / 1024) + " KiB)\n";
    if (!s.log_path.empty()) out += "  log        " + s.log_path + "\n";
    if (!s.ca_bundle_inside.empty())
        out += "  tls        HTTPS to hosts with method/path rules or secrets is intercepted (per-run CA;"
               " bundle " + s.ca_bundle_inside + ", SSL_CERT_FILE and friends)\n";
    for (const auto& g : s.gateways) {
        out += "  gateway    $" + g.var + " = " + g.url + ": " + g.host + ":" + std::to_string(g.port) + " allowed";
        if (g.loopback)
            out += std::string(", listening at ") +
                   (g.address.v6 ? "[" + g.address.to_string() + "]" : g.address.to_string()) + ":" +
                   std::to_string(g.port) + " inside, relayed to the same address on the host's loopback";
        out += "; every request checked and logged\n";
    }
    for (const auto& sec : s.secrets) {
        std::string hosts;
        for (const auto& h : sec.hosts) hosts += (hosts.empty() ? "" : ", ") + h.text;
        std::string headers = "Authorization, x-api-key";
        for (const auto& h : sec.headers) headers += ", " + h;
        out += "  secret     " + sec.name + " from " + sec.source + (sec.detail.empty() ? "" : " (" + sec.detail + ")") +
               " for " + hosts + " (in " + headers +
               " of requests to those hosts, sent on over TLS; masked in what comes back)\n";
    }
    for (const auto& ns : s.secrets_not_set) out += "  secret     " + ns + "\n";
    return out;
}

std::string network_json(const Plan& plan) {
    using json = nlohmann::ordered_json;
    json j;
    j["mode"] = policy::net_mode_name(plan.net_mode);
    j["namespace"] = (plan.clone_flags & CLONE_NEWNET) != 0;
    json pub = json::array();
    for (const auto& pp : plan.publish) pub.push_back({{"port", pp.port}, {"host_port", pp.host_port}});
    j["publish"] = std::move(pub);
    if (plan.net) {
        const net::Settings& s = *plan.net;
        j["proxy"] = "127.0.0.1:" + std::to_string(s.port);
        auto rules = [](const std::vector<net::Rule>& v) {
            json a = json::array();
            for (const auto& r : v) {
                json e = {{"pattern", r.text}, {"origin", r.origin}};
                if (!r.methods.empty()) e["methods"] = r.methods;
                if (!r.paths.empty()) e["paths"] = r.paths;
                a.push_back(std::move(e));
            }
            return a;
        };
        j["allow"] = rules(s.rules.allow);
        j["deny"] = rules(s.rules.deny);
        json pins = json::object();
        for (const auto& p : s.rules.pins) pins[p.host] = p.address.to_string();
        j["hosts"] = std::move(pins);
        j["max_connections"] = s.max_connections;
        j["log"] = s.log_path.empty() ? json(nullptr) : json(s.log_path);
        json secrets = json::array();
        for (const auto& sec : s.secrets) {
            json hosts = json::array();
            for (const auto& h : sec.hosts) hosts.push_back(h.text);
            secrets.push_back({{"name", sec.name},
                               {"source", sec.source},
                               {"hosts", hosts},
                               {"headers", sec.headers},
                               {"detail", sec.detail}});
        }
        j["secrets"] = std::move(secrets);
        j["secrets_not_set"] = s.secrets_not_set;
        json gws = json::array();
        for (const auto& g : s.gateways) {
            json e = {{"variable", g.var}, {"url", g.url}, {"origin", g.host + ":" + std::to_string(g.port)}};
            e["listener"] = g.loopback ? json((g.address.v6 ? "[" + g.address.to_string() + "]" : g.address.to_string()) +
                                              ":" + std::to_string(g.port))
                                       : json(nullptr);
            gws.push_back(std::move(e));
        }
        j["gateways"] = std::move(gws);
        j["ca_bundle"] = s.ca_bundle_inside.empty() ? json(nullptr) : json(s.ca_bundle_inside);
    }
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace agentjail::plan::detail
