// SPDX-License-Identifier: Apache-2.0
// Host rules: the allow/deny patterns of [network] ("api.example.com",
// "*.npmjs.org", "github.com:22", "*"), the [network.hosts] pins, and the
// decision for one destination (deny wins; nothing is allowed by default).
#pragma once

#include "netrules/address.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentjail::net {

// One parsed host pattern.
struct HostPattern {
    enum class Kind { exact, subdomains, any };
    Kind kind = Kind::exact;
    std::string host;  // normalised; for subdomains the domain without "*."
    // nullopt: the default ports, 80 and 443, for allow entries; every port for deny
    // entries. 0 ("host:*"): any port.
    std::optional<std::uint16_t> port;
    bool numeric = false;  // host is an IP address literal
};

// Parses a pattern; on error returns nullopt and sets `why` (no location).
// Grammar: "*" | "*." DOMAIN | NAME | IPV4 | "[" IPV6 "]", then optionally ":" PORT or ":*".
std::optional<HostPattern> parse_host_pattern(std::string_view text, std::string* why);

// Why `name` (a host name, not an address) is no DNS name, or "" when it is one:
// dot-separated labels of letters, digits, '-' and '_', 1 to 63 each, 253 in all.
// The proxy checks every name it is asked for with it after normalize_host(), so a
// name with an empty label ("a..", which a resolver reads as "a.", ".a", "a..b")
// never meets the rules or a resolver under a spelling the rules do not know.
std::string check_name_syntax(std::string_view name);

// True when `host` (already normalize_host()d) and port match the pattern.
bool matches(const HostPattern& p, std::string_view host, std::uint16_t port, bool deny_rule);

// A rule and where it was written ("net-balanced.toml:12:5", "command line (--allow-host)").
// methods/paths restrict it to some requests ({ host = ..., methods = [...], paths = [...] }):
// then the proxy has to see the requests, so HTTPS to the host is intercepted.
struct Rule {
    HostPattern pattern;
    std::string text;    // as written (the host pattern)
    std::string origin;  // file:line:col, or "command line (--allow-host)"
    std::vector<std::string> methods;  // "GET", "HEAD", ...; empty: every method
    std::vector<std::string> paths;    // path globs ("/simple/**"); empty: every path
    // Added for a secret's host: it lets the host be reached, but never widens
    // the method and path rules written for that host.
    bool implied = false;
    // A model gateway's origin (proxy.hpp Gateway): the addresses it resolves to are
    // reached even when loopback or private, since the user named this origin.
    bool gateway = false;
    bool restricted() const { return !methods.empty() || !paths.empty(); }
};

// "" when `m` may appear in a rule's methods, else why not.
std::string check_method_name(std::string_view m);
// "" when `p` is a path glob: starts with '/', visible ASCII without '?', '#' or
// spaces; '*' matches within one segment, '**' across segments (a trailing "/**"
// also matches the bare prefix).
std::string check_path_pattern(std::string_view p);
// The glob match of a request path (no query) against a path pattern.
bool path_matches(std::string_view pattern, std::string_view path, bool ignore_case = false);

struct Pin {
    std::string host;  // normalised name
    Address address;
    std::string origin;
};

struct Rules {
    std::vector<Rule> allow;
    std::vector<Rule> deny;
    std::vector<Pin> pins;
};

// The name check (before any resolution): allowed or not, why, and which rule.
struct NameDecision {
    bool allowed = false;
    std::string reason;  // for a refusal, the sentence for the 403 body and the log
    std::string rule;    // the origin of the deciding rule, or "default"
    // The policy named this exact destination address (an exact numeric allow rule
    // or a pin): the private-range check does not apply to it.
    std::optional<Address> named_address;
    // Allowed as a model gateway's origin: no range check of its resolved addresses.
    bool gateway = false;
};

// Deny entries with methods or paths do not refuse a name: they refuse requests.
NameDecision check_name(const Rules& rules, std::string_view host, std::uint16_t port);

// Whether the proxy must see the requests to this destination to enforce the rules:
// a matching deny entry with methods/paths, or matching allow entries that are all
// restricted. (Secrets bound to the host need it too; the proxy adds that.)
bool needs_requests(const Rules& rules, std::string_view host, std::uint16_t port);

// One request on an allowed destination: deny entries first (deny wins), then the
// allow entries for the host; allowed when any of them admits method and path.
struct RequestDecision {
    bool allowed = false;
    std::string reason;  // for a refusal, the 403 body's sentence
    std::string rule;    // the origin of the deciding rule
};
// `path` is the request's normalised path without the query (normalize_path()).
RequestDecision check_request(const Rules& rules, std::string_view host, std::uint16_t port, std::string_view method,
                              std::string_view path);

// The address check after resolution: "" when the address may be reached,
// else why not (names the host and the kind of address). `own`: the addresses of
// the host's interfaces (any range), refused like loopback: they reach its services.
std::string check_address(std::string_view host, const Address& a,
                          const std::vector<Address>& own = {});

// The hint of a refusal for host:port not in the allowlist: the exact entry that
// would allow it, never a range or a wildcard, and for an internal address (loopback,
// private, the host's names) a warning instead of an invitation.
std::string allow_hint(std::string_view host, std::uint16_t port);

}  // namespace agentjail::net
