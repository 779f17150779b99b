// SPDX-License-Identifier: Apache-2.0
// The WebSocket opening handshake (RFC 6455 4) as the proxy judges it: which
// upgrade requests it lets through to an intercepted origin, and whether the
// origin's 101 really completes that handshake (pure code, no system calls).
#pragma once

#include "netrules/http.hpp"

#include <string>
#include <string_view>

namespace agentjail::net {

// Whether request r is a WebSocket opening handshake the proxy passes on: GET over
// HTTP/1.1, exactly one Upgrade header whose only token is "websocket", Connection
// listing "upgrade", one Sec-WebSocket-Key (16 bytes in base64), a
// Sec-WebSocket-Version, and no body. Anything else with an Upgrade header (h2c,
// "websocket, h2c", a body) is not one: its Upgrade is dropped and it goes on as a
// plain HTTP request (http.hpp exchange_head).
bool websocket_upgrade(const Request& r);

// The Sec-WebSocket-Accept an origin answers for `key`:
// base64(SHA-1(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")).
std::string websocket_accept(std::string_view key);

// Whether a 101 response completes the handshake of request r: Upgrade names
// websocket, Connection lists upgrade, and Sec-WebSocket-Accept answers r's key
// (so the origin itself switched to WebSocket; a 101 from anything else, or for
// another protocol, would make the proxy relay a stream it no longer checks).
// false with `why` otherwise.
bool websocket_switched(const Request& r, const Response& resp, std::string& why);

}  // namespace agentjail::net
