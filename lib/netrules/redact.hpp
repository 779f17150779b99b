// SPDX-License-Identifier: Apache-2.0
// Where a secret may go and where it must not come back: which request headers
// carry a credential (the only place a placeholder becomes the real value), and
// the streaming redactor that turns the real value back into a mask in whatever
// an intercepted upstream sends to the sandbox (pure code, no system calls).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace agentjail::net {

// One secret bound to the destination of a connection.
struct SecretUse {
    std::string placeholder;           // what the sandbox holds
    std::string value;                 // the real credential
    std::vector<std::string> headers;  // headers the policy names besides the defaults
};

// Whether a request header may receive a secret's value: Authorization, x-api-key,
// or one the secret names (any case). Never Proxy-Authorization (the proxy drops
// it), Origin, Referer or Cookie: an origin that reflects those (CORS echoes
// Origin into Access-Control-Allow-Origin) would hand the value back.
bool carries_credential(std::string_view header, const std::vector<std::string>& named);
// The value of request header `name` with each placeholder of `uses` that may go
// into that header replaced by its real value; every other header is unchanged.
std::string put_secrets(std::string_view name, std::string value,
                        const std::vector<SecretUse>& uses);

// The text the sandbox gets in place of a secret's real value in a response body:
// exactly as long as the value (so Content-Length and chunk sizes stay true), made
// of the placeholder repeated and cut to that length.
std::string body_mask(const SecretUse& use);
// A response head with every real value replaced by its placeholder (and each of
// its echo_forms() by a mask as long).
std::string redact_head(std::string head, const std::vector<SecretUse>& uses);

// The forms besides the value itself in which an origin commonly echoes what it was
// sent, each as a fixed string that the masking looks for like the value: base64
// (standard and URL-safe alphabets) at each of the three alignments, only the
// characters that depend on the value alone (the one at either end that mixes in
// the neighbouring bytes is not there, so up to 4 bits of the first and of the
// last byte can come back); percent-encoding of every byte outside ALPHA DIGIT "-._~"
// (upper- and lower-case hex); and a JSON string's escaping (with and without "\/").
// Forms equal to the value, or shorter than 8 characters (a short value's base64
// would mask ordinary text), are left out.
std::vector<std::string> echo_forms(std::string_view value);

// Replaces the real values and their echo_forms() in a stream that arrives in
// pieces (a body read by reads and chunks of any size): a value split across two
// pieces is still found, because the last window() bytes (the longest string looked
// for, less one) are always held back until the next piece or finish(), whatever
// they are; a value that starts before them ends inside what has come, so it is
// found whole. The output is exactly as long as the input (body_mask()), and how
// much of it goes out at each call depends on the lengths fed only, never on the
// bytes: holding back only a tail that could begin a value told the sandbox, by the
// timing of an origin's echo, whether its guess began the secret (issue 26).
class Redactor {
public:
    explicit Redactor(const std::vector<SecretUse>& uses);
    // True when there is nothing to replace (no secret bound): feed() passes through.
    bool idle() const { return values_.empty(); }
    // All the bytes that have come so far but the last window(), masked.
    std::string feed(std::string_view in);
    // Every byte held back, masked: at the end of the body, or when the origin has
    // been quiet for a while (the proxy's quiet period, exchange_body.cc), so that
    // nothing waits for bytes that may never come; feed() goes on afterwards. A
    // value the origin itself cuts with such a pause goes out in two unmasked
    // halves (docs/network.md).
    std::string finish();
    std::size_t held() const { return pending_.size(); }
    std::size_t window() const { return window_; }

private:
    // Masks in place the values that start before `limit`, then lets those bytes go.
    std::string release(std::size_t limit);
    // What it looks for, each value and its echo_forms(), and a mask as long for each.
    std::vector<std::string> values_, masks_;
    std::size_t window_ = 0;
    std::string pending_;
    // pending_[0, scanned_) is decided: masked already, or no value starts there.
    std::size_t scanned_ = 0;
};

}  // namespace agentjail::net
