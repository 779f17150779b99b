// SPDX-License-Identifier: Apache-2.0
// Unit tests of lib/netrules/address: every numeric spelling of an address a client may
// use to reach the host through the proxy (NET-03) and the address classes.
#include "netrules/address.hpp"

#include <gtest/gtest.h>

#include <string>

namespace agentjail::net {
namespace {

std::string canon(const std::string& host) {
    auto a = parse_numeric_host(host);
    return a ? a->to_string() : "(name)";
}

AddressKind kind(const std::string& host) {
    auto a = parse_numeric_host(host);
    EXPECT_TRUE(a) << host;
    return a ? classify(*a) : AddressKind::global;
}

TEST(NetAddress, InetAtonSpellingsOfLoopback) {
    for (const char* s : {"127.0.0.1", "127.1", "127.0.1", "0x7f.0.0.1", "0X7F.1", "2130706433", "017700000001",
                          "0177.0.0.1", "0x7f000001", "127.000.000.001"})
        EXPECT_EQ(canon(s), "127.0.0.1") << s;
}

TEST(NetAddress, IPv6Spellings) {
    EXPECT_EQ(canon("[::1]"), "::1");
    EXPECT_EQ(canon("::1"), "::1");
    EXPECT_EQ(canon("[::ffff:127.0.0.1]"), "::ffff:127.0.0.1");
    EXPECT_EQ(canon("[0:0:0:0:0:ffff:7f00:1]"), "::ffff:127.0.0.1");
    EXPECT_EQ(canon("[::]"), "::");
}

TEST(NetAddress, NamesAndMalformedNumbersAreNotAddresses) {
    for (const char* s : {"example.com", "localhost", "1e100.net", "1.2.3.256", "08", "0x", "1..2", ".1", "1.2.3.4.5",
                          "4294967296", "[::1", "[127.0.0.1]", "fe80::1%eth0", "[fe80::1%25eth0]", "", "1.2.3.4 x",
                          "256.1"})
        EXPECT_EQ(canon(s), "(name)") << s;
}

TEST(NetAddress, Classes) {
    EXPECT_EQ(kind("127.0.0.1"), AddressKind::loopback);
    EXPECT_EQ(kind("127.255.255.254"), AddressKind::loopback);
    EXPECT_EQ(kind("::1"), AddressKind::loopback);
    EXPECT_EQ(kind("10.0.0.1"), AddressKind::private_net);
    EXPECT_EQ(kind("172.16.0.1"), AddressKind::private_net);
    EXPECT_EQ(kind("172.31.255.255"), AddressKind::private_net);
    EXPECT_EQ(kind("172.32.0.1"), AddressKind::global);
    EXPECT_EQ(kind("192.168.1.1"), AddressKind::private_net);
    EXPECT_EQ(kind("100.64.0.1"), AddressKind::shared);
    EXPECT_EQ(kind("100.128.0.1"), AddressKind::global);
    EXPECT_EQ(kind("169.254.169.254"), AddressKind::metadata);
    EXPECT_EQ(kind("169.254.1.1"), AddressKind::link_local);
    EXPECT_EQ(kind("0.0.0.0"), AddressKind::unspecified);
    EXPECT_EQ(kind("0.1.2.3"), AddressKind::unspecified);
    EXPECT_EQ(kind("::"), AddressKind::unspecified);
    EXPECT_EQ(kind("224.0.0.1"), AddressKind::multicast);
    EXPECT_EQ(kind("ff02::1"), AddressKind::multicast);
    EXPECT_EQ(kind("255.255.255.255"), AddressKind::broadcast);
    EXPECT_EQ(kind("240.0.0.1"), AddressKind::reserved);
    EXPECT_EQ(kind("fc00::1"), AddressKind::private_net);
    EXPECT_EQ(kind("fd12:3456::1"), AddressKind::private_net);
    EXPECT_EQ(kind("fe80::1"), AddressKind::link_local);
    EXPECT_EQ(kind("fd00:ec2::254"), AddressKind::metadata);
    EXPECT_EQ(kind("1.1.1.1"), AddressKind::global);
    EXPECT_EQ(kind("8.8.8.8"), AddressKind::global);
    EXPECT_EQ(kind("2606:4700:4700::1111"), AddressKind::global);
}

TEST(NetAddress, EmbeddedIPv4TakesItsClass) {
    EXPECT_EQ(kind("::ffff:127.0.0.1"), AddressKind::loopback);
    EXPECT_EQ(kind("::ffff:169.254.169.254"), AddressKind::metadata);
    EXPECT_EQ(kind("::ffff:10.1.2.3"), AddressKind::private_net);
    EXPECT_EQ(kind("::127.0.0.1"), AddressKind::loopback);          // IPv4-compatible
    EXPECT_EQ(kind("64:ff9b::7f00:1"), AddressKind::loopback);      // NAT64
    EXPECT_EQ(kind("2002:7f00:1::"), AddressKind::loopback);        // 6to4
    EXPECT_EQ(kind("::ffff:1.1.1.1"), AddressKind::global);
    EXPECT_EQ(kind("::1.1.1.1"), AddressKind::reserved);  // deprecated, not routable
}

TEST(NetAddress, NormalizeHost) {
    EXPECT_EQ(normalize_host("Example.COM."), "example.com");
    EXPECT_EQ(normalize_host("0x7f.1"), "127.0.0.1");
    EXPECT_EQ(normalize_host("127.0.0.1."), "127.0.0.1");
    EXPECT_EQ(normalize_host("[::FFFF:127.0.0.1]"), "::ffff:127.0.0.1");
}

TEST(NetAddress, DescribeNamesTheKind) {
    EXPECT_EQ(std::string(describe(AddressKind::loopback)), "a loopback address");
    EXPECT_EQ(std::string(describe(AddressKind::metadata)), "the cloud metadata address");
}

}  // namespace
}  // namespace agentjail::net
