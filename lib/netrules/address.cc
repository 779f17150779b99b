// SPDX-License-Identifier: Apache-2.0
// Numeric host parsing (inet_aton's forms, written out here because glibc's
// inet_aton accepts trailing garbage after a space) and address classification.
#include "netrules/address.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <cstring>
#include <vector>

namespace agentjail::net {

namespace {

// One part of an inet_aton address: 0x.. hex, 0.. octal, else decimal. No sign,
// no empty part, at most 2^32-1 (longer spellings are refused, not wrapped:
// wrapping is how "4294967297" would sneak in as 0.0.0.1).
std::optional<std::uint64_t> aton_part(std::string_view s) {
    if (s.empty()) return std::nullopt;
    int base = 10;
    if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
        // "0x" alone is 0 for inet_aton; no resolver writes it, so refused.
        if (s.empty()) return std::nullopt;
    } else if (s.size() >= 2 && s[0] == '0') {
        base = 8;
        s.remove_prefix(1);
    }
    std::uint64_t v = 0;
    for (char c : s) {
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (base == 16 && c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (base == 16 && c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return std::nullopt;
        if (d >= base) return std::nullopt;
        v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
        if (v > 0xffffffffULL) return std::nullopt;
    }
    return v;
}

std::optional<Address> parse_aton(std::string_view s) {
    std::vector<std::uint64_t> parts;
    size_t i = 0;
    while (true) {
        size_t dot = s.find('.', i);
        auto part = aton_part(s.substr(i, dot == std::string_view::npos ? std::string_view::npos : dot - i));
        if (!part) return std::nullopt;
        parts.push_back(*part);
        if (dot == std::string_view::npos) break;
        if (parts.size() == 4) return std::nullopt;
        i = dot + 1;
    }
    // a, a.b (b: 24 bits), a.b.c (c: 16 bits), a.b.c.d: the leading parts are bytes.
    std::uint64_t last_max = 0xffffffffULL >> (8 * (parts.size() - 1));
    for (size_t k = 0; k + 1 < parts.size(); ++k)
        if (parts[k] > 0xff) return std::nullopt;
    if (parts.back() > last_max) return std::nullopt;
    std::uint32_t v = 0;
    for (size_t k = 0; k + 1 < parts.size(); ++k) v |= static_cast<std::uint32_t>(parts[k]) << (24 - 8 * k);
    v |= static_cast<std::uint32_t>(parts.back());
    Address a;
    a.bytes[0] = static_cast<std::uint8_t>(v >> 24);
    a.bytes[1] = static_cast<std::uint8_t>(v >> 16);
    a.bytes[2] = static_cast<std::uint8_t>(v >> 8);
    a.bytes[3] = static_cast<std::uint8_t>(v);
    return a;
}

Address v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    Address r;
    r.bytes[0] = a;
    r.bytes[1] = b;
    r.bytes[2] = c;
    r.bytes[3] = d;
    return r;
}

AddressKind classify_v4(const Address& a) {
    const auto* b = a.bytes.data();
    if (b[0] == 0) return AddressKind::unspecified;  // 0/8: "this network", reaches the host
    if (b[0] == 127) return AddressKind::loopback;
    if (b[0] == 10) return AddressKind::private_net;
    if (b[0] == 172 && (b[1] & 0xf0) == 16) return AddressKind::private_net;
    if (b[0] == 192 && b[1] == 168) return AddressKind::private_net;
    if (b[0] == 100 && (b[1] & 0xc0) == 64) return AddressKind::shared;
    if (b[0] == 169 && b[1] == 254)
        return (b[2] == 169 && b[3] == 254) ? AddressKind::metadata : AddressKind::link_local;
    if (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255) return AddressKind::broadcast;
    if ((b[0] & 0xf0) == 224) return AddressKind::multicast;
    if ((b[0] & 0xf0) == 240) return AddressKind::reserved;
    // 192.0.0/24: IETF assignments (192.0.0.192 is Oracle Cloud's metadata service).
    if (b[0] == 192 && b[1] == 0 && b[2] == 0) return AddressKind::reserved;
    if (b[0] == 198 && (b[1] & 0xfe) == 18) return AddressKind::reserved;  // benchmarking
    return AddressKind::global;
}

}  // namespace

std::string Address::to_string() const {
    char buf[INET6_ADDRSTRLEN] = {};
    ::inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), buf, sizeof buf);
    return buf;
}

bool Address::operator==(const Address& o) const {
    if (v6 != o.v6) return false;
    return std::memcmp(bytes.data(), o.bytes.data(), v6 ? 16 : 4) == 0;
}

std::optional<Address> parse_numeric_host(std::string_view host) {
    if (host.empty() || host.size() > 255) return std::nullopt;
    std::string_view h = host;
    bool bracketed = false;
    if (h.front() == '[') {
        if (h.size() < 3 || h.back() != ']') return std::nullopt;
        h = h.substr(1, h.size() - 2);
        bracketed = true;
    }
    if (h.find(':') != std::string_view::npos) {
        std::string s(h);
        Address a;
        a.v6 = true;
        if (::inet_pton(AF_INET6, s.c_str(), a.bytes.data()) != 1) return std::nullopt;
        return a;
    }
    if (bracketed) return std::nullopt;
    // A name whose last label is all digits (or a 0x number) is numeric for
    // inet_aton and getaddrinfo alike; anything else is a name.
    return parse_aton(h);
}

std::optional<Address> embedded_ipv4(const Address& a) {
    if (!a.v6) return std::nullopt;
    const auto* b = a.bytes.data();
    bool zero80 = true;
    for (int i = 0; i < 10; ++i) zero80 = zero80 && b[i] == 0;
    if (zero80 && b[10] == 0xff && b[11] == 0xff) return v4(b[12], b[13], b[14], b[15]);
    if (zero80 && b[10] == 0 && b[11] == 0) {
        // ::a.b.c.d (deprecated IPv4-compatible); :: and ::1 are not IPv4.
        bool low_zero = b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] <= 1;
        if (!low_zero) return v4(b[12], b[13], b[14], b[15]);
        return std::nullopt;
    }
    // 64:ff9b::/96, the NAT64 well-known prefix: a NAT64 gateway forwards to the IPv4 inside.
    static const std::uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (std::memcmp(b, nat64, 12) == 0) return v4(b[12], b[13], b[14], b[15]);
    if (b[0] == 0x20 && b[1] == 0x02) return v4(b[2], b[3], b[4], b[5]);  // 6to4
    return std::nullopt;
}

AddressKind classify(const Address& a) {
    if (!a.v6) return classify_v4(a);
    if (auto inner = embedded_ipv4(a)) {
        AddressKind k = classify_v4(*inner);
        if (k != AddressKind::global) return k;
    }
    const auto* b = a.bytes.data();
    bool zero120 = true;
    for (int i = 0; i < 15; ++i) zero120 = zero120 && b[i] == 0;
    if (zero120 && b[15] == 0) return AddressKind::unspecified;
    if (zero120 && b[15] == 1) return AddressKind::loopback;
    // IPv4-mapped addresses of public IPv4 hosts are fine, but the rest of ::/96 is not routable.
    bool zero80 = true;
    for (int i = 0; i < 10; ++i) zero80 = zero80 && b[i] == 0;
    if (zero80 && !(b[10] == 0xff && b[11] == 0xff)) return AddressKind::reserved;
    if (b[0] == 0xff) return AddressKind::multicast;
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return AddressKind::link_local;
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return AddressKind::private_net;  // site-local
    // fd00:ec2::254: the AWS instance metadata service over IPv6 (inside fc00::/7 anyway).
    static const std::uint8_t aws[16] = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x54};
    static const std::uint8_t aws2[16] = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54};
    if (std::memcmp(b, aws, 16) == 0 || std::memcmp(b, aws2, 16) == 0) return AddressKind::metadata;
    if ((b[0] & 0xfe) == 0xfc) return AddressKind::private_net;
    if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1)
        return AddressKind::private_net;  // 64:ff9b:1::/48, local-use NAT64
    static const std::uint8_t discard[8] = {0x01, 0, 0, 0, 0, 0, 0, 0};
    if (std::memcmp(b, discard, 8) == 0) return AddressKind::reserved;  // 100::/64
    return AddressKind::global;
}

const char* describe(AddressKind k) {
    switch (k) {
        case AddressKind::global: return "a public address";
        case AddressKind::loopback: return "a loopback address";
        case AddressKind::private_net: return "a private address";
        case AddressKind::shared: return "a shared (carrier-grade NAT) address";
        case AddressKind::link_local: return "a link-local address";
        case AddressKind::metadata: return "the cloud metadata address";
        case AddressKind::unspecified: return "an unspecified address (it reaches the host itself)";
        case AddressKind::multicast: return "a multicast address";
        case AddressKind::broadcast: return "the broadcast address";
        case AddressKind::reserved: return "a reserved address";
    }
    return "an address of unknown kind";
}

std::string normalize_host(std::string_view host) {
    if (auto a = parse_numeric_host(host)) return a->to_string();
    std::string s(host);
    if (!s.empty() && s.back() == '.') s.pop_back();
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // "127.0.0.1." is numeric too once the dot is gone.
    if (auto a = parse_numeric_host(s)) return a->to_string();
    return s;
}

}  // namespace agentjail::net
