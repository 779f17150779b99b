// SPDX-License-Identifier: Apache-2.0
// Unit tests of lib/netrules/websocket: which upgrade requests the proxy passes on, the
// head it sends upstream for them (and for h2c, which it strips), and the 101 it
// accepts as the answer.
#include "netrules/websocket.hpp"

#include <gtest/gtest.h>

#include <string>

namespace agentjail::net {
namespace {

const std::string kKey = "dGhlIHNhbXBsZSBub25jZQ==";  // RFC 6455 1.3's example

Request origin(const std::string& head) {
    auto r = parse_request_head(head, TargetForm::origin);
    EXPECT_EQ(r.status, ParseStatus::ok) << r.error;
    return r.request;
}

std::string handshake(const std::string& extra = "") {
    return "GET /ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\nConnection: keep-alive, "
           "Upgrade\r\n"
           "Sec-WebSocket-Key: " +
           kKey + "\r\nSec-WebSocket-Version: 13\r\n" + extra + "\r\n";
}

TEST(NetWebSocket, AcceptFollowsTheRfcExample) {
    EXPECT_EQ(websocket_accept(kKey), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(NetWebSocket, OnlyAWellFormedHandshakeIsAnUpgrade) {
    EXPECT_TRUE(websocket_upgrade(origin(handshake())));
    EXPECT_TRUE(websocket_upgrade(origin(handshake("Content-Length: 0\r\n"))));
    // h2c (RFC 7540 3.2, gone from RFC 9113), or websocket next to another protocol.
    EXPECT_FALSE(
        websocket_upgrade(origin("GET / HTTP/1.1\r\nHost: api.test\r\nUpgrade: h2c\r\nConnection: "
                                 "Upgrade, HTTP2-Settings\r\n"
                                 "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")));
    std::string h = handshake();
    auto swap = [&](const std::string& from, const std::string& to) {
        std::string s = h;
        s.replace(s.find(from), from.size(), to);
        return s;
    };
    EXPECT_FALSE(websocket_upgrade(origin(swap("Upgrade: websocket", "Upgrade: websocket, h2c"))));
    EXPECT_FALSE(websocket_upgrade(origin(handshake("Upgrade: h2c\r\n"))));  // two Upgrade headers
    EXPECT_FALSE(websocket_upgrade(origin(swap("GET", "POST"))));
    EXPECT_FALSE(websocket_upgrade(origin(swap("HTTP/1.1", "HTTP/1.0"))));
    EXPECT_FALSE(websocket_upgrade(origin(swap("keep-alive, Upgrade", "keep-alive"))));
    EXPECT_FALSE(websocket_upgrade(origin(swap(kKey, "short=="))));
    EXPECT_FALSE(websocket_upgrade(origin(swap("Sec-WebSocket-Version: 13\r\n", ""))));
    EXPECT_FALSE(websocket_upgrade(origin(handshake("Content-Length: 5\r\n"))));
    EXPECT_FALSE(websocket_upgrade(origin(handshake("Transfer-Encoding: chunked\r\n"))));
}

TEST(NetWebSocket, ExchangeHeadKeepsTheUpgradeAndPutsTheSecretIn) {
    Request r = origin(
        handshake("Authorization: Bearer PH\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"));
    std::string head =
        exchange_head(r, "/ws", "api.test", 443, 443, true, {{"PH", "sk-1", {}}}, true);
    EXPECT_EQ(head, "GET /ws HTTP/1.1\r\nSec-WebSocket-Key: " + kKey +
                        "\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer sk-1\r\n"
                        "Accept-Encoding: identity\r\nHost: api.test\r\nUpgrade: "
                        "websocket\r\nConnection: Upgrade\r\n\r\n");
    // Without a secret the extensions offer stays (nothing to find in the frames).
    head = exchange_head(r, "/ws", "api.test", 443, 443, true, {}, true);
    EXPECT_NE(head.find("Sec-WebSocket-Extensions: permessage-deflate\r\n"), std::string::npos)
        << head;
    // An h2c upgrade is stripped: the request goes on as HTTP/1.1.
    Request h2c = origin(
        "GET / HTTP/1.1\r\nHost: api.test\r\nUpgrade: h2c\r\nConnection: Upgrade, "
        "HTTP2-Settings\r\n"
        "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n");
    EXPECT_EQ(exchange_head(h2c, "/", "api.test", 443, 443, true, {}, websocket_upgrade(h2c)),
              "GET / HTTP/1.1\r\nHost: api.test\r\nConnection: keep-alive\r\n\r\n");
    // Plain HTTP without rules (origin_form_head): a handshake keeps its Upgrade, h2c does not.
    auto abs = parse_request_head(
        "GET http://api.test/ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: " +
        kKey + "\r\nSec-WebSocket-Version: 13\r\n\r\n");
    ASSERT_EQ(abs.status, ParseStatus::ok) << abs.error;
    EXPECT_NE(
        origin_form_head(abs.request).find("Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n"),
        std::string::npos);
    auto abs2 = parse_request_head(
        "GET http://api.test/ HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n");
    ASSERT_EQ(abs2.status, ParseStatus::ok) << abs2.error;
    std::string o2 = origin_form_head(abs2.request);
    EXPECT_EQ(o2.find("Upgrade"), std::string::npos) << o2;
    EXPECT_NE(o2.find("Connection: close\r\n"), std::string::npos) << o2;
}

TEST(NetWebSocket, A101MustAnswerTheHandshake) {
    Request r = origin(handshake());
    auto resp = [](const std::string& head) {
        auto p = parse_response_head(head);
        EXPECT_EQ(p.status, ParseStatus::ok) << p.error;
        return p.response;
    };
    std::string why;
    EXPECT_TRUE(websocket_switched(
        r,
        resp("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"),
        why))
        << why;
    EXPECT_FALSE(websocket_switched(
        r,
        resp("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n"),
        why));
    EXPECT_NE(why.find("Sec-WebSocket-Accept"), std::string::npos) << why;
    EXPECT_FALSE(websocket_switched(
        r, resp("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"),
        why));
    EXPECT_NE(why.find("h2c"), std::string::npos) << why;
    EXPECT_FALSE(
        websocket_switched(r,
                           resp("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"),
                           why));
    EXPECT_FALSE(websocket_switched(r, resp("HTTP/1.1 200 OK\r\nUpgrade: websocket\r\n\r\n"), why));
}

}  // namespace
}  // namespace agentjail::net
