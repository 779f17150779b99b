// SPDX-License-Identifier: Apache-2.0
// The proxy's HTTP/1.x request heads: CONNECT host:port and absolute-form
// requests (GET http://host/path), parsed strictly (a head the proxy does not
// fully understand is refused, never guessed at), and their origin-form rewrite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentjail::net {

// Request heads larger than this are refused with 400 (and reading stops there).
inline constexpr size_t max_head_size = 16 * 1024;

struct Request {
    std::string method;   // "CONNECT", "GET", ...
    std::string target;   // as written
    std::string version;  // "HTTP/1.1"
    std::vector<std::pair<std::string, std::string>> headers;  // in order, names as written
    std::string host;     // the authority's host, brackets removed, not yet normalised
    std::uint16_t port = 0;
    std::string path;     // origin-form ("/x?y"); empty for CONNECT
    bool connect = false;
};

enum class ParseStatus { incomplete, ok, bad, too_large };

struct ParseResult {
    ParseStatus status = ParseStatus::incomplete;
    size_t head_size = 0;  // bytes of the head, including the blank line
    Request request;
    std::string error;     // for bad / too_large
};

// Parses the head at the start of buf (it may hold body bytes after it).
ParseResult parse_request_head(std::string_view buf);

// Splits an authority "host:port", "[v6]:port" or (default_port != 0) "host".
// false when malformed.
bool split_authority(std::string_view authority, std::uint16_t default_port, std::string& host,
                     std::uint16_t& port);

// The head to send upstream for a plain-HTTP request: origin-form request line,
// Host kept (or added), hop-by-hop and Proxy-* headers dropped, Connection: close.
// `replace`: (placeholder, value) pairs substituted in header values (secrets).
std::string origin_form_head(const Request& r,
                             const std::vector<std::pair<std::string, std::string>>& replace = {});

// A complete response with a short text body.
std::string simple_response(int code, std::string_view reason, std::string_view body);

}  // namespace agentjail::net
