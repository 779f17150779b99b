// SPDX-License-Identifier: Apache-2.0
// A stand-in for the model APIs the real agent clients talk to (Anthropic's Messages
// API, OpenAI's Responses API), served from a thread of the test process on the host's
// loopback, so that Claude Code and Codex run end to end without the internet. It can
// be told to answer with a call of the client's shell tool, and it records every
// request and every tool result the clients send back, for the test to check.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct ssl_st;  // OpenSSL's SSL

namespace ajmodel {

// One request as the stand-in read it.
struct Exchange {
    std::string method;
    std::string target;  // as on the request line, query included
    std::string path;    // target without the query
    std::map<std::string, std::string>
        headers;  // names lower-cased; a repeated name keeps the last
    std::string body;
    int status = 0;    // what the stand-in answered
    std::string kind;  // "messages", "responses", "count_tokens", "websocket", ... (see route())

    std::string header(const std::string& lower_name) const;
};

// A shell tool's output that came back in a later request.
struct ToolResult {
    std::string api;                             // "anthropic" or "openai"
    std::string call_id;                         // the id the stand-in gave the call
    std::string output;                          // the result's text, the parts joined with '\n'
    std::map<std::string, std::string> headers;  // of the request that carried it
};

// An HTTP/1.1 server on 127.0.0.1 at an ephemeral port (or a given one), one thread per
// connection, keep-alive for plain answers and Connection: close after a stream.
//
//   POST /v1/messages[?...]          Anthropic Messages: SSE when "stream": true, else JSON
//   POST /v1/messages/count_tokens   {"input_tokens": N}
//   POST /v1/responses, /responses   OpenAI Responses: SSE when "stream": true, else JSON
//   GET  /v1/responses + Upgrade     426: no WebSocket here, which Codex takes as "use HTTP"
//   GET  /v1/models[/ID]             a one-model list, or that model
//   HEAD/GET /api/hello              200 (Claude Code's connectivity check)
//   other POST                       200 {} (telemetry and the like), recorded
//   other                            404 with a JSON error, recorded
//
// A model request answers with the scripted shell call when one is set (script_shell),
// the request offers the client's shell tool and it carries no result of that call yet;
// when it carries the result, the stand-in records it (tool_results()) and answers with
// the final text; any other model request gets the final text.
class ModelStandin {
public:
    struct Options {
        std::uint16_t port = 0;  // 0: an ephemeral port
        std::string final_text = "STANDIN-DONE";
        // HTTPS with this certificate and key (PEM files) when set, for a name the test
        // pins to 127.0.0.1 (the proxy verifies the upstream's certificate).
        std::string tls_cert;
        std::string tls_key;
        // Printed to stderr as each request arrives (the standalone executable's -v).
        bool verbose = false;
    };
    ModelStandin();
    explicit ModelStandin(const Options& opts);
    ~ModelStandin();  // stop()
    ModelStandin(const ModelStandin&) = delete;
    ModelStandin& operator=(const ModelStandin&) = delete;

    std::uint16_t port() const { return port_; }
    // http(s)://127.0.0.1:PORT (what ANTHROPIC_BASE_URL takes; OpenAI's base URL adds /v1).
    std::string origin() const;

    // Answers model requests that offer the shell tool with a call running `command`
    // (Claude Code: Bash {"command"}; Codex 0.171: its code-mode `exec` tool running
    // tools.exec_command; older Codex: the exec_command / shell_command / shell function).
    void script_shell(const std::string& command);

    std::vector<Exchange> requests() const;
    std::vector<Exchange> requests(const std::string& kind) const;
    std::vector<ToolResult> tool_results() const;
    // How many shell calls the stand-in has sent.
    int tool_calls() const { return tool_calls_.load(); }
    // Every request, one line each (method, target, status, credential headers masked
    // to their first 12 characters): for failure messages.
    std::string summary() const;

    // Closes the listening socket and every connection, and joins every thread.
    void stop();

private:
    struct Impl;
    void serve(int fd, ssl_st* ssl);
    std::unique_ptr<Impl> impl_;
    std::uint16_t port_ = 0;
    std::atomic<int> tool_calls_{0};
};

// Helpers the tests share with the stand-in: the text of an Anthropic tool_result
// block's content (a string or a list of text blocks), and of an OpenAI tool output
// (a string or a list of input_text/output_text items).
std::string content_text(const nlohmann::json& content);

}  // namespace ajmodel
