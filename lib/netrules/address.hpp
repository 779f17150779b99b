// SPDX-License-Identifier: Apache-2.0
// IP addresses as the proxy sees them: numeric host spellings normalised
// (inet_aton forms, bracketed and IPv4-mapped IPv6) and the classification that
// decides which destinations the host-side proxy must never reach (NET-03).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace agentjail::net {

// An IPv4 address (v6 false: bytes 0-3) or an IPv6 address (16 bytes).
struct Address {
    bool v6 = false;
    std::array<std::uint8_t, 16> bytes{};

    // "127.0.0.1", "::1" (RFC 5952 form, as inet_ntop writes it).
    std::string to_string() const;
    bool operator==(const Address& o) const;
};

// The classes of addresses the proxy refuses unless the policy names them.
enum class AddressKind {
    global,       // a public address: allowed once the name passed the policy
    loopback,     // 127/8, ::1
    private_net,  // 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10
    shared,       // 100.64/10 (carrier-grade NAT)
    link_local,   // 169.254/16, fe80::/10
    metadata,     // 169.254.169.254, fd00:ec2::254: cloud instance metadata
    unspecified,  // 0/8, ::
    multicast,    // 224/4, ff00::/8
    broadcast,    // 255.255.255.255
    reserved,     // 240/4, 192.0.0/24, 198.18/15, 100::/64 ...
};

// The address a host string spells, when it is numeric: IPv4 in any inet_aton(3)
// form ("127.1", "0x7f.0.0.1", "2130706433", "017700000001"), IPv6 with or without
// brackets ("[::1]", "::ffff:127.0.0.1"). nullopt for names (and for malformed
// numbers such as "1.2.3.256", "08" or "[::1" which no resolver accepts either).
// IPv6 zone ids ("fe80::1%eth0") are not accepted.
std::optional<Address> parse_numeric_host(std::string_view host);

// The IPv4 address an IPv6 address carries (IPv4-mapped ::ffff:a.b.c.d,
// IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002:AABB:CCDD::/48), if any.
std::optional<Address> embedded_ipv4(const Address& a);

// The class of an address; an IPv6 address that embeds an IPv4 address takes
// the embedded address's class when that one is not global.
AddressKind classify(const Address& a);

// "a loopback address", "a private address", "the cloud metadata address", ...
const char* describe(AddressKind k);

// Lower-case, one trailing dot removed, brackets kept: the form host patterns are
// matched against. Numeric hosts become their canonical address text ("127.0.0.1",
// "::1") so that every spelling of one address matches the same rule.
std::string normalize_host(std::string_view host);

}  // namespace agentjail::net
