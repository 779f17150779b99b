// SPDX-License-Identifier: Apache-2.0
// WebSocket handshake checks for the proxy: the request it lets upgrade and the
// origin's 101 that must answer exactly that request.
#include "netrules/websocket.hpp"
#include "netrules/ascii.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace agentjail::net {

namespace {

int count_headers(const std::vector<std::pair<std::string, std::string>>& headers,
                  std::string_view name) {
    int n = 0;
    for (const auto& h : headers)
        if (iequals(h.first, name)) ++n;
    return n;
}

std::string base64(const unsigned char* data, size_t n) {
    std::string out(4 * ((n + 2) / 3) + 1, '\0');
    int len =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(n));
    out.resize(len > 0 ? static_cast<size_t>(len) : 0);
    return out;
}

// A key is 16 random bytes in base64: 22 characters of the alphabet and "==".
bool valid_key(std::string_view k) {
    if (k.size() != 24 || k.substr(22) != "==") return false;
    return std::all_of(k.begin(), k.begin() + 22, [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/';
    });
}

}  // namespace

bool websocket_upgrade(const Request& r) {
    if (r.method != "GET" || r.version != "HTTP/1.1") return false;
    if (count_headers(r.headers, "upgrade") != 1) return false;
    const std::string* up = find_header(r.headers, "upgrade");
    if (up == nullptr || !iequals(*up, "websocket")) return false;
    if (!header_has_token(r.headers, "connection", "upgrade")) return false;
    if (count_headers(r.headers, "sec-websocket-key") != 1) return false;
    const std::string* key = find_header(r.headers, "sec-websocket-key");
    if (key == nullptr || !valid_key(*key)) return false;
    if (find_header(r.headers, "sec-websocket-version") == nullptr) return false;
    // A handshake has no body: bytes after its head are the client's frames, which it
    // may send only after the 101 (RFC 6455 4.1).
    if (find_header(r.headers, "transfer-encoding") != nullptr) return false;
    const std::string* cl = find_header(r.headers, "content-length");
    return cl == nullptr || *cl == "0";
}

std::string websocket_accept(std::string_view key) {
    std::string in(key);
    in += "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    std::array<unsigned char, SHA_DIGEST_LENGTH> md{};
    unsigned int len = 0;
    if (EVP_Digest(in.data(), in.size(), md.data(), &len, EVP_sha1(), nullptr) != 1) return {};
    return base64(md.data(), len);
}

bool websocket_switched(const Request& r, const Response& resp, std::string& why) {
    const std::string* up = find_header(resp.headers, "upgrade");
    if (resp.status != 101) {
        why = "not a protocol switch";
        return false;
    }
    if (up == nullptr || !iequals(*up, "websocket")) {
        why = "the switch is to " +
              (up == nullptr ? std::string("no named protocol") : "'" + *up + "'") +
              ", not websocket";
        return false;
    }
    if (!header_has_token(resp.headers, "connection", "upgrade")) {
        why = "the switch lacks Connection: upgrade";
        return false;
    }
    const std::string* key = find_header(r.headers, "sec-websocket-key");
    const std::string* accept = find_header(resp.headers, "sec-websocket-accept");
    if (key == nullptr || accept == nullptr ||
        count_headers(resp.headers, "sec-websocket-accept") != 1 ||
        *accept != websocket_accept(*key)) {
        why = "its Sec-WebSocket-Accept does not answer the request's key";
        return false;
    }
    return true;
}

}  // namespace agentjail::net
