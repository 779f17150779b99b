// SPDX-License-Identifier: Apache-2.0
// Host patterns, host names and address spellings: the input is "PATTERN\nHOST".
// Invariants: normalising is idempotent; a numeric host's canonical text reads
// back as the same address; every spelling of an address is classified alike;
// a pattern matches the host it was written for.
#include "fuzz.hpp"

#include "netrules/address.hpp"
#include "netrules/rules.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace agentjail::net;
    if (size > 4096) return 0;
    std::string_view in = ajfuzz::as_text(data, size);
    size_t nl = in.find('\n');
    std::string_view pattern = in.substr(0, nl);
    std::string_view host = nl == std::string_view::npos ? in : in.substr(nl + 1);

    std::string norm = normalize_host(host);
    // One trailing dot goes ("a.com." is the name a.com); a name still ending in a
    // dot after that ("a.com..") is no host name, and no pattern matches it.
    if (norm.empty() || norm.back() != '.') AJ_FUZZ_CHECK(normalize_host(norm) == norm);
    if (auto a = parse_numeric_host(host)) {
        std::string text = a->to_string();
        auto back = parse_numeric_host(text);
        AJ_FUZZ_CHECK(back.has_value() && *back == *a);
        AJ_FUZZ_CHECK(classify(*back) == classify(*a));
        (void)embedded_ipv4(*a);
        (void)describe(classify(*a));
        (void)check_address(norm, *a);
    }
    std::string why;
    auto p = parse_host_pattern(pattern, &why);
    if (!p) {
        AJ_FUZZ_CHECK(!why.empty());
        return 0;
    }
    for (std::uint16_t port : {std::uint16_t{80}, std::uint16_t{443}, std::uint16_t{22}}) {
        (void)matches(*p, norm, port, false);
        (void)matches(*p, norm, port, true);
    }
    if (p->kind == HostPattern::Kind::exact) {
        std::uint16_t port = p->port && *p->port != 0 ? *p->port : 443;
        AJ_FUZZ_CHECK(matches(*p, p->host, port, false));
    }
    return 0;
}
