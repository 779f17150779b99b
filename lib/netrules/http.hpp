// SPDX-License-Identifier: Apache-2.0
// The proxy's HTTP/1.x request heads: CONNECT host:port and absolute-form
// requests (GET http://host/path), parsed strictly (a head the proxy does not
// fully understand is refused, never guessed at), and their origin-form rewrite.
#pragma once

#include "netrules/redact.hpp"

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

// What request targets a head may use: a proxy's absolute form
// ("GET http://host/x"), or the origin form ("GET /x" with a Host header) of a
// request inside a tunnel the proxy intercepts.
enum class TargetForm { absolute, origin };

// Parses the head at the start of buf (it may hold body bytes after it).
ParseResult parse_request_head(std::string_view buf, TargetForm form = TargetForm::absolute);

// The path a request is checked and forwarded with: the target's path with
// percent-encoded unreserved characters decoded (so "/%61pi" is "/api", as every
// server reads it) and hex digits upper-cased; `query` gets "?..." or "". false
// with `why` for a path that servers could read in different ways: dot segments
// ("/a/../b", also encoded), a backslash, an encoded NUL or a malformed escape.
bool normalize_path(std::string_view target_path, std::string& path, std::string& query, std::string& why);

// The value of the first header named `name` (any case); nullptr when absent.
const std::string* find_header(const std::vector<std::pair<std::string, std::string>>& headers,
                               std::string_view name);
// Whether the comma-separated tokens of every `name` header hold `token` (any case).
bool header_has_token(const std::vector<std::pair<std::string, std::string>>& headers, std::string_view name,
                      std::string_view token);

// How a message body is delimited (RFC 9112 6.3).
enum class Framing { none, length, chunked, until_close };
struct Body {
    Framing framing = Framing::none;
    std::uint64_t length = 0;  // for Framing::length
};
// A request's body: Content-Length or chunked; both, a transfer coding other than
// chunked, or disagreeing lengths are refused (request smuggling), with `why`.
bool request_body(const Request& r, Body& body, std::string& why);

struct Response {
    int status = 0;
    std::string version;
    std::vector<std::pair<std::string, std::string>> headers;
};
struct ResponseParse {
    ParseStatus status = ParseStatus::incomplete;
    size_t head_size = 0;
    Response response;
    std::string error;
};
// A response head from an upstream (more lenient than requests: a bare reason
// phrase, any header order; still strict about the framing headers).
ResponseParse parse_response_head(std::string_view buf);
// A response's body, given the request's method: none for HEAD, 1xx, 204 and 304.
bool response_body(const Response& r, std::string_view request_method, Body& body, std::string& why);

// The head to send upstream for a request the proxy checked on its own (a tunnel
// it intercepts, or plain HTTP with per-request rules): origin-form line with the
// normalised path, Host set to the checked authority (port shown unless it is
// default_port), Proxy-*, hop-by-hop, Upgrade and Expect headers dropped,
// Connection as keep_alive says. `websocket` (websocket.hpp websocket_upgrade()):
// "Upgrade: websocket" and "Connection: Upgrade" instead, and with secrets the
// Sec-WebSocket-Extensions offer dropped (compressed frames would hide a value). `secrets`: their placeholders become the real
// values in the credential headers only (carries_credential()), and then the
// response is asked for without content coding (Accept-Encoding: identity), so that
// the proxy can find a value the origin echoes in the body (redact.hpp).
std::string exchange_head(const Request& r, std::string_view path, std::string_view host,
                          std::uint16_t port, std::uint16_t default_port, bool keep_alive,
                          const std::vector<SecretUse>& secrets = {}, bool websocket = false);

// Splits an authority "host:port", "[v6]:port" or (default_port != 0) "host".
// false when malformed.
bool split_authority(std::string_view authority, std::uint16_t default_port, std::string& host,
                     std::uint16_t& port);

// The head to send upstream for a plain-HTTP request: origin-form request line,
// Host kept (or added), hop-by-hop and Proxy-* headers dropped, Connection: close.
// Never carries a secret: requests with secrets go through exchange_head().
std::string origin_form_head(const Request& r);

// A complete response with a short text body. `error`, when given, goes in an
// X-Agentjail-Error header too: "policy" (refused by a rule), "request" (malformed
// or never allowed), "unresolved" (the name did not resolve), "unreachable" (no
// connection upstream), "limit" (too many connections): what happened, for a
// client that shows only the status.
std::string simple_response(int code, std::string_view reason, std::string_view body,
                            std::string_view error = {});

}  // namespace agentjail::net
