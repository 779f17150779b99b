// SPDX-License-Identifier: Apache-2.0
// Host pattern parsing and matching, and the two checks of every destination:
// the name against the rules, then each resolved address against the ranges the
// host-side proxy must never reach (it runs in the host's network, NET-03).
#include "netrules/rules.hpp"

#include <algorithm>
#include <cctype>

namespace agentjail::net {

namespace {

bool valid_label_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

}  // namespace

// DNS-ish names: dot-separated labels of letters, digits, '-' and '_', 1-63 each,
// 253 in all. Underscores occur in real service names, so they are accepted.
std::string check_name_syntax(std::string_view s) {
    if (s.empty()) return "empty host name";
    if (s.size() > 253) return "host name longer than 253 characters";
    size_t start = 0;
    while (start <= s.size()) {
        size_t dot = s.find('.', start);
        size_t end = dot == std::string_view::npos ? s.size() : dot;
        std::string_view label = s.substr(start, end - start);
        if (label.empty()) return "empty label in host name '" + std::string(s) + "'";
        if (label.size() > 63) return "label longer than 63 characters in '" + std::string(s) + "'";
        for (char c : label)
            if (!valid_label_char(c))
                return "'" + std::string(1, c) + "' is not allowed in a host name ('" + std::string(s) +
                       "'; patterns are NAME, *.DOMAIN or *, with an optional :PORT)";
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return {};
}

std::optional<HostPattern> parse_host_pattern(std::string_view text, std::string* why) {
    auto fail = [&](std::string msg) -> std::optional<HostPattern> {
        if (why) *why = std::move(msg);
        return std::nullopt;
    };
    if (text.empty()) return fail("empty host pattern");
    HostPattern p;
    std::string_view host = text;
    std::string_view port;
    bool has_port = false;
    if (text.front() == '[') {
        size_t close = text.find(']');
        if (close == std::string_view::npos) return fail("'" + std::string(text) + "': missing ']'");
        host = text.substr(0, close + 1);
        std::string_view rest = text.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return fail("'" + std::string(text) + "': expected ':PORT' after ']'");
            port = rest.substr(1);
            has_port = true;
        }
    } else {
        size_t colon = text.find(':');
        if (colon != std::string_view::npos) {
            if (text.find(':', colon + 1) != std::string_view::npos)
                return fail("'" + std::string(text) + "': write an IPv6 address in brackets, as [::1]:443");
            host = text.substr(0, colon);
            port = text.substr(colon + 1);
            has_port = true;
        }
    }
    if (has_port) {
        if (port == "*") {
            p.port = 0;
        } else {
            if (port.empty() || port.size() > 5 ||
                !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
                return fail("'" + std::string(text) + "': the port must be a number from 1 to 65535 or *");
            unsigned long v = std::stoul(std::string(port));
            if (v == 0 || v > 65535)
                return fail("'" + std::string(text) + "': the port must be a number from 1 to 65535 or *");
            p.port = static_cast<std::uint16_t>(v);
        }
    }
    if (host.empty()) return fail("'" + std::string(text) + "': no host before the port");
    if (host == "*") {
        p.kind = HostPattern::Kind::any;
        return p;
    }
    if (host.size() > 2 && host.substr(0, 2) == "*.") {
        std::string domain = normalize_host(host.substr(2));
        if (parse_numeric_host(host.substr(2)))
            return fail("'" + std::string(text) + "': *. goes with a domain name, not an address");
        std::string problem = check_name_syntax(domain);
        if (!problem.empty()) return fail(problem);
        p.kind = HostPattern::Kind::subdomains;
        p.host = domain;
        return p;
    }
    if (host.find('*') != std::string_view::npos)
        return fail("'" + std::string(text) +
                    "': '*' is allowed only as the whole host or as a leading '*.' (*.example.com)");
    if (auto a = parse_numeric_host(host)) {
        p.numeric = true;
        p.host = a->to_string();
        return p;
    }
    if (host.front() == '[') return fail("'" + std::string(text) + "': not an IPv6 address");
    std::string name = normalize_host(host);
    std::string problem = check_name_syntax(name);
    if (!problem.empty()) return fail(problem);
    p.host = name;
    return p;
}

bool matches(const HostPattern& p, std::string_view host, std::uint16_t port, bool deny_rule) {
    if (p.port) {
        if (*p.port != 0 && *p.port != port) return false;
    } else if (!deny_rule && port != 80 && port != 443) {
        return false;
    }
    switch (p.kind) {
        case HostPattern::Kind::any: return true;
        case HostPattern::Kind::exact: return host == p.host;
        case HostPattern::Kind::subdomains:
            // "*.example.com" matches a.example.com and a.b.example.com, not
            // example.com itself nor badexample.com; never an address.
            if (parse_numeric_host(host)) return false;
            return host.size() > p.host.size() + 1 && host.substr(host.size() - p.host.size()) == p.host &&
                   host[host.size() - p.host.size() - 1] == '.';
    }
    return false;
}

std::string allow_hint(std::string_view host, std::uint16_t port) {
    std::string exact = std::string(host);
    if (exact.find(':') != std::string::npos) exact = "[" + exact + "]";
    exact += ":" + std::to_string(port);
    // Never "allow 127.0.0.0/8" or "*": what is suggested is the one destination
    // asked for, and for the host's own or internal addresses a warning with it,
    // since such an entry opens a service of the host or the LAN to the sandbox.
    auto a = parse_numeric_host(host);
    bool internal_name =
        host == "localhost" || (host.size() > 10 && host.substr(host.size() - 10) == ".localhost");
    if ((a && classify(*a) != AddressKind::global) || internal_name)
        return "it is " + std::string(a ? describe(classify(*a)) : "a name of this host") +
               ": only an allow entry naming exactly \"" + exact +
               "\" reaches it, and that gives the sandbox the service listening there";
    if (port == 80 || port == 443)
        return "add --allow-host " + std::string(host) + " or [network] allow";
    return "add --allow-host " + exact + " or [network] allow";
}

NameDecision check_name(const Rules& rules, std::string_view host, std::uint16_t port) {
    NameDecision d;
    std::string hp = std::string(host) + ":" + std::to_string(port);
    for (const auto& r : rules.deny) {
        if (r.restricted()) continue;  // it refuses requests, checked once they are seen
        if (matches(r.pattern, host, port, true)) {
            d.rule = r.origin;
            d.reason = hp + " is denied by the rule \"" + r.text + "\" (" + r.origin + ")";
            return d;
        }
    }
    const Rule* allow = nullptr;
    const Rule* other_port = nullptr;
    for (const auto& r : rules.allow) {
        if (matches(r.pattern, host, port, false)) {
            // An entry naming this exact address decides over a broader one ("*:*"
            // first, "127.0.0.1:8080" later): only it lifts the address check.
            bool names_address = (r.pattern.kind == HostPattern::Kind::exact && r.pattern.numeric) || r.gateway;
            if (!allow || names_address) allow = &r;
            if (names_address) break;
            continue;
        }
        if (!other_port) {
            HostPattern any = r.pattern;
            any.port = 0;
            if (matches(any, host, port, false)) other_port = &r;
        }
    }
    if (!allow) {
        d.rule = "default";
        std::string hint = allow_hint(host, port);
        if (other_port)
            d.reason = hp + " is not in the allowlist: \"" + other_port->text + "\" (" +
                       other_port->origin +
                       ") allows other ports only (an entry without a port allows 80 and 443; " +
                       hint + ")";
        else
            d.reason = std::string(host) +
                       " is not in the allowlist (default: nothing is allowed; " + hint + ")";
        return d;
    }
    d.allowed = true;
    d.rule = allow->origin;
    d.reason = "allowed by \"" + allow->text + "\"";
    for (const auto& pin : rules.pins) {
        if (pin.host == host) {
            d.named_address = pin.address;
            d.reason += ", pinned to " + pin.address.to_string() + " (" + pin.origin + ")";
            return d;
        }
    }
    if (allow->pattern.kind == HostPattern::Kind::exact && allow->pattern.numeric)
        d.named_address = parse_numeric_host(allow->pattern.host);
    d.gateway = allow->gateway;
    return d;
}

namespace {

constexpr std::string_view rule_methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"};

char fold(char c, bool icase) {
    return icase ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
}

bool admits(const Rule& r, std::string_view method, std::string_view path, bool deny_rule) {
    if (!r.methods.empty() && std::find(r.methods.begin(), r.methods.end(), method) == r.methods.end())
        return false;
    if (r.paths.empty()) return true;
    // A deny entry matches generously: case does not matter, and an encoded slash
    // (%2F) counts as a slash, since a server may decode either before routing.
    // And ";params" are cut from every segment, as Tomcat and Jetty do before routing
    // (/admin;x/y is /admin/y there).
    std::string slashed, bare;
    if (deny_rule) {
        slashed = std::string(path);
        for (size_t at = 0; (at = slashed.find('%', at)) != std::string::npos; ++at)
            if (at + 2 < slashed.size() && slashed[at + 1] == '2' && (slashed[at + 2] == 'F' || slashed[at + 2] == 'f'))
                slashed.replace(at, 3, "/");
        bool in_params = false;
        for (char c : slashed) {
            if (c == '/') in_params = false;
            if (c == ';') in_params = true;
            if (!in_params) bare += c;
        }
    }
    for (const auto& p : r.paths) {
        if (path_matches(p, path, deny_rule)) return true;
        if (deny_rule && (path_matches(p, slashed, true) || path_matches(p, bare, true))) return true;
    }
    return false;
}

// Whether an allow entry the user wrote (not one implied by a secret) matches.
bool has_explicit_allow(const Rules& rules, std::string_view host, std::uint16_t port) {
    for (const auto& r : rules.allow)
        if (!r.implied && matches(r.pattern, host, port, false)) return true;
    return false;
}

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
}

}  // namespace

std::string check_method_name(std::string_view m) {
    if (m == "CONNECT") return "CONNECT cannot be restricted per request (it opens tunnels; restrict the port instead)";
    if (std::find(std::begin(rule_methods), std::end(rule_methods), m) != std::end(rule_methods)) return {};
    return "'" + std::string(m) + "' is not an HTTP method the proxy knows (GET, HEAD, POST, PUT, DELETE, PATCH, " +
           "OPTIONS, TRACE; upper case)";
}

std::string check_path_pattern(std::string_view p) {
    if (p.empty() || p.front() != '/') return "'" + std::string(p) + "': a path pattern starts with '/'";
    if (p.size() > 1024) return "a path pattern longer than 1024 characters";
    for (char c : p)
        if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f || c == '?' || c == '#')
            return "'" + std::string(p) + "': a path pattern holds no spaces, control characters, '?' or '#' " +
                   "(queries are not matched)";
    if (p.find("***") != std::string_view::npos) return "'" + std::string(p) + "': '***' means nothing; use '**'";
    return {};
}

bool path_matches(std::string_view pattern, std::string_view path, bool icase) {
    // A trailing "/**" also matches the prefix itself ("/simple/**" matches "/simple").
    if (pattern.size() >= 3 && pattern.substr(pattern.size() - 3) == "/**" &&
        path_matches(pattern.substr(0, pattern.size() - 3), path, icase))
        return true;
    // Dynamic programming over pattern positions: reach[j] says whether the pattern's
    // first i tokens match the path's first j characters. Linear in the path per
    // token, so no pattern makes matching blow up.
    const size_t n = path.size();
    std::vector<char> reach(n + 1, 0), next(n + 1, 0);
    reach[0] = 1;
    size_t i = 0;
    while (i < pattern.size()) {
        std::fill(next.begin(), next.end(), 0);
        if (pattern[i] == '*') {
            bool across = i + 1 < pattern.size() && pattern[i + 1] == '*';
            i += across ? 2 : 1;
            bool on = false;
            for (size_t j = 0; j <= n; ++j) {
                if (reach[j]) on = true;
                if (on) next[j] = 1;
                if (j < n && !across && path[j] == '/') on = false;
            }
        } else {
            char c = fold(pattern[i], icase);
            ++i;
            for (size_t j = 0; j < n; ++j)
                if (reach[j] && fold(path[j], icase) == c) next[j + 1] = 1;
        }
        reach.swap(next);
    }
    return reach[n] != 0;
}

bool needs_requests(const Rules& rules, std::string_view host, std::uint16_t port) {
    for (const auto& r : rules.deny)
        if (r.restricted() && matches(r.pattern, host, port, true)) return true;
    bool restricted = false;
    bool explicit_rule = has_explicit_allow(rules, host, port);
    for (const auto& r : rules.allow) {
        if (!matches(r.pattern, host, port, false) || (r.implied && explicit_rule)) continue;
        if (!r.restricted()) return false;  // one entry admits every request
        restricted = true;
    }
    return restricted;
}

RequestDecision check_request(const Rules& rules, std::string_view host, std::uint16_t port, std::string_view method,
                              std::string_view path) {
    RequestDecision d;
    std::string what = std::string(method) + " " + std::string(host) + ":" + std::to_string(port) + std::string(path);
    for (const auto& r : rules.deny) {
        if (!matches(r.pattern, host, port, true) || !admits(r, method, path, true)) continue;
        d.rule = r.origin;
        d.reason = what + " is denied by the rule \"" + r.text + "\"" +
                   (r.methods.empty() ? "" : " methods [" + join(r.methods) + "]") +
                   (r.paths.empty() ? "" : " paths [" + join(r.paths) + "]") + " (" + r.origin + ")";
        return d;
    }
    const Rule* first = nullptr;
    bool explicit_rule = has_explicit_allow(rules, host, port);
    for (const auto& r : rules.allow) {
        if (!matches(r.pattern, host, port, false) || (r.implied && explicit_rule)) continue;
        if (admits(r, method, path, false)) {
            d.allowed = true;
            d.rule = r.origin;
            d.reason = "allowed by \"" + r.text + "\"";
            return d;
        }
        if (!first) first = &r;
    }
    if (!first) {
        d.rule = "default";
        d.reason = what + " is not in the allowlist";
        return d;
    }
    d.rule = first->origin;
    d.reason = what + " is refused: the rule \"" + first->text + "\" (" + first->origin + ") allows only" +
               (first->methods.empty() ? "" : " methods " + join(first->methods)) +
               (first->methods.empty() || first->paths.empty() ? "" : " and") +
               (first->paths.empty() ? "" : " paths " + join(first->paths));
    return d;
}

std::string check_address(std::string_view host, const Address& a,
                          const std::vector<Address>& own) {
    AddressKind k = classify(a);
    bool host_own = std::find(own.begin(), own.end(), a) != own.end();
    // An IPv4 address spelt as IPv6 (::ffff:a.b.c.d) reaches the same interface.
    if (!host_own)
        if (auto inner = embedded_ipv4(a))
            host_own = std::find(own.begin(), own.end(), *inner) != own.end();
    if (k == AddressKind::global && !host_own) return {};
    std::string what =
        k == AddressKind::global ? std::string("an address of this host") : describe(k);
    if (host_own && k != AddressKind::global && k != AddressKind::loopback) what += " of this host";
    std::string s = std::string(host);
    std::string text = a.to_string();
    // No hint to open a range: only an entry naming this exact address lifts the check.
    if (s == text)
        return s + " is " + what +
               " (refused unless an allow entry names exactly this address and port)";
    return s + " resolved to " + text + ", " + what + " (DNS rebinding?)";
}

}  // namespace agentjail::net
