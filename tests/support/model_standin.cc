// SPDX-License-Identifier: Apache-2.0
// The stand-in model API: a loopback HTTP/1.1 (optionally TLS) server that speaks the
// parts of Anthropic's Messages API and OpenAI's Responses API that Claude Code and
// Codex use, with a scripted shell-tool call. What each client sends was found by
// running it against this server with its debug log on (see tests/integration/
// test_agents.cc and bench/README.md).
#include "model_standin.hpp"
#include "thread_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ajmodel {

using nlohmann::json;

namespace {

// Ids the stand-in gives its calls: a result is recognised as ours by its prefix.
constexpr const char* kAnthropicCallPrefix = "toolu_standin_";
constexpr const char* kOpenAiCallPrefix = "call_standin_";
constexpr std::size_t kMaxHead = 64 * 1024;
constexpr std::size_t kMaxBody =
    64 * 1024 * 1024;  // Claude Code's requests are ~50 KB, Codex's ~75 KB
constexpr const char* kModel = "standin-model";

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// One connection, plain or TLS; blocking I/O with a receive timeout, so that an idle
// keep-alive connection ends by itself and stop() need only shut the sockets down.
struct Conn {
    int fd = -1;
    SSL* ssl = nullptr;
    std::string buf;  // read but not yet consumed

    ssize_t read_some(char* p, std::size_t n) {
        if (ssl == nullptr) {
            ssize_t r;
            do {
                r = ::recv(fd, p, n, 0);
            } while (r < 0 && errno == EINTR);
            return r;
        }
        int r = SSL_read(ssl, p, static_cast<int>(n));
        return r > 0 ? r : (SSL_get_error(ssl, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1);
    }
    bool fill() {
        char tmp[16384];
        ssize_t r = read_some(tmp, sizeof tmp);
        if (r <= 0) return false;
        buf.append(tmp, static_cast<std::size_t>(r));
        return true;
    }
    bool write_all(const std::string& s) {
        const char* p = s.data();
        std::size_t n = s.size();
        while (n > 0) {
            ssize_t w;
            if (ssl == nullptr) {
                do {
                    w = ::send(fd, p, n, MSG_NOSIGNAL);
                } while (w < 0 && errno == EINTR);
            } else {
                w = SSL_write(ssl, p, static_cast<int>(n > (1u << 20) ? (1u << 20) : n));
            }
            if (w <= 0) return false;
            p += w;
            n -= static_cast<std::size_t>(w);
        }
        return true;
    }
    // Reads up to and including delim; false at EOF or past max bytes.
    bool read_until(const std::string& delim, std::size_t max, std::string* out) {
        for (;;) {
            auto pos = buf.find(delim);
            if (pos != std::string::npos) {
                *out = buf.substr(0, pos + delim.size());
                buf.erase(0, pos + delim.size());
                return true;
            }
            if (buf.size() > max || !fill()) return false;
        }
    }
    bool read_exact(std::size_t n, std::string* out) {
        while (buf.size() < n)
            if (!fill()) return false;
        *out = buf.substr(0, n);
        buf.erase(0, n);
        return true;
    }
};

// Reads one request: false at EOF or on a malformed one (the connection then ends).
bool read_request(Conn& c, Exchange* ex) {
    std::string head;
    if (!c.read_until("\r\n\r\n", kMaxHead, &head)) return false;
    std::istringstream in(head);
    std::string line;
    std::getline(in, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream rl(line);
    std::string version;
    rl >> ex->method >> ex->target >> version;
    if (ex->method.empty() || ex->target.empty()) return false;
    ex->path = ex->target.substr(0, ex->target.find('?'));
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        ex->headers[lower(line.substr(0, colon))] = value;
    }
    if (lower(ex->header("transfer-encoding")).find("chunked") != std::string::npos) {
        for (;;) {
            std::string size_line;
            if (!c.read_until("\r\n", 1024, &size_line)) return false;
            std::size_t n = std::strtoul(size_line.c_str(), nullptr, 16);
            if (n == 0) {
                std::string trailer;
                return c.read_until("\r\n", kMaxHead,
                                    &trailer);  // the empty line after the last chunk
            }
            if (ex->body.size() + n > kMaxBody) return false;
            std::string chunk, crlf;
            if (!c.read_exact(n, &chunk) || !c.read_exact(2, &crlf)) return false;
            ex->body += chunk;
        }
    }
    std::string cl = ex->header("content-length");
    if (!cl.empty()) {
        std::size_t n = std::strtoul(cl.c_str(), nullptr, 10);
        if (n > kMaxBody) return false;
        if (!c.read_exact(n, &ex->body)) return false;
    }
    return true;
}

std::string reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 415: return "Unsupported Media Type";
    case 426: return "Upgrade Required";
    default: return "Status";
    }
}

std::string sse(const std::string& event, const json& data) {
    return "event: " + event + "\ndata: " + data.dump() + "\n\n";
}

std::string mask(const std::string& v) { return v.size() <= 12 ? v : v.substr(0, 12) + "..."; }

// The names of the tools a Responses request offers, with their kind ("function",
// "custom", ...): from "tools" and, as Codex 0.171 sends them, from input items of
// type "additional_tools"; namespaces are flattened.
void collect_tools(const json& tools, std::map<std::string, std::string>* out) {
    if (!tools.is_array()) return;
    for (const auto& t : tools) {
        if (!t.is_object()) continue;
        std::string type = t.value("type", "");
        if (type == "namespace") {
            collect_tools(t.value("tools", json::array()), out);
        } else if (t.contains("name") && t["name"].is_string()) {
            (*out)[t["name"].get<std::string>()] = type;
        } else if (t.contains("function") && t["function"].is_object()) {
            (*out)[t["function"].value("name", "")] = "function";
        } else if (!type.empty()) {
            (*out)[type] = type;  // built-in tools: {"type": "local_shell"}
        }
    }
}

}  // namespace

std::string Exchange::header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
}

std::string content_text(const json& content) {
    if (content.is_string()) return content.get<std::string>();
    std::string out;
    if (!content.is_array()) return out;
    for (const auto& part : content) {
        std::string t;
        if (part.is_string())
            t = part.get<std::string>();
        else if (part.is_object() && part.contains("text") && part["text"].is_string())
            t = part["text"].get<std::string>();
        else if (part.is_object() && part.contains("content"))
            t = content_text(part["content"]);
        if (t.empty()) continue;
        if (!out.empty() && out.back() != '\n') out += '\n';
        out += t;
    }
    return out;
}

struct ModelStandin::Impl {
    Options opts;
    mutable std::mutex mu;
    std::vector<Exchange> requests;
    std::vector<ToolResult> results;
    std::set<std::string> seen_results;  // call ids already recorded
    std::string shell_command;           // empty: no scripted call
    int next_id = 1;

    // The answer to one request: status, extra headers, body; streamed bodies are
    // sent with Connection: close (the clients read an SSE stream to its end).
    struct Answer {
        int status = 200;
        std::string content_type = "application/json";
        std::string body;
        bool stream = false;
    };

    std::string new_id(const char* prefix) {
        std::lock_guard<std::mutex> l(mu);
        return prefix + std::to_string(next_id++);
    }
    std::string command() {
        std::lock_guard<std::mutex> l(mu);
        return shell_command;
    }
    // Records a tool result once (the clients send the whole history each turn).
    void record_result(const std::string& api, const std::string& id, const std::string& output,
                       const Exchange& ex) {
        std::lock_guard<std::mutex> l(mu);
        if (!seen_results.insert(id).second) return;
        results.push_back({api, id, output, ex.headers});
    }

    Answer anthropic(const Exchange& ex, std::atomic<int>& calls);
    Answer openai(const Exchange& ex, std::atomic<int>& calls);
    Answer route(Exchange& ex, std::atomic<int>& calls);

    std::unique_ptr<ajtest::ThreadServer> server;  // last: its threads use the rest
};

// Anthropic Messages: a tool_use of Bash while the scripted call's result has not come
// back, else the final text; streamed as the API does (message_start, a content block
// with its deltas, message_delta with the stop reason, message_stop).
ModelStandin::Impl::Answer ModelStandin::Impl::anthropic(const Exchange& ex,
                                                         std::atomic<int>& calls) {
    Answer a;
    json req = json::parse(ex.body, nullptr, false);
    if (!req.is_object()) {
        a.status = 400;
        a.body =
            R"({"type":"error","error":{"type":"invalid_request_error","message":"body is not JSON"}})";
        return a;
    }
    bool has_result = false;
    for (const auto& m : req.value("messages", json::array())) {
        if (!m.is_object() || !m.contains("content") || !m["content"].is_array()) continue;
        for (const auto& b : m["content"]) {
            if (!b.is_object() || b.value("type", "") != "tool_result") continue;
            std::string id = b.value("tool_use_id", "");
            if (id.rfind(kAnthropicCallPrefix, 0) != 0) continue;
            has_result = true;
            record_result("anthropic", id, content_text(b.value("content", json())), ex);
        }
    }
    bool offers_bash = false;
    for (const auto& t : req.value("tools", json::array()))
        offers_bash = offers_bash || (t.is_object() && t.value("name", "") == "Bash");
    std::string cmd = command();
    bool call = !has_result && offers_bash && !cmd.empty();

    json block;
    std::string stop_reason = "end_turn";
    std::string partial;
    if (call) {
        ++calls;
        block = {{"type", "tool_use"},
                 {"id", new_id(kAnthropicCallPrefix)},
                 {"name", "Bash"},
                 {"input", {{"command", cmd}, {"description", "stand-in probe"}}}};
        stop_reason = "tool_use";
    } else {
        block = {{"type", "text"}, {"text", opts.final_text}};
    }
    std::string model = req.value("model", kModel);
    json usage = {{"input_tokens", 10}, {"output_tokens", 5}};
    if (!req.value("stream", false)) {
        a.body = json{
            {"id", new_id("msg_standin_")},
            {"type", "message"},
            {"role", "assistant"},
            {"model", model},
            {"content", json::array({block})},
            {"stop_reason", stop_reason},
            {"stop_sequence", nullptr},
            {"usage",
             usage}}.dump();
        return a;
    }
    a.stream = true;
    a.content_type = "text/event-stream";
    a.body += sse("message_start", {{"type", "message_start"},
                                    {"message",
                                     {{"id", new_id("msg_standin_")},
                                      {"type", "message"},
                                      {"role", "assistant"},
                                      {"model", model},
                                      {"content", json::array()},
                                      {"stop_reason", nullptr},
                                      {"stop_sequence", nullptr},
                                      {"usage", {{"input_tokens", 10}, {"output_tokens", 1}}}}}});
    json start = block;
    json delta;
    if (call) {
        start["input"] = json::object();  // the input arrives as JSON deltas
        delta = {{"type", "input_json_delta"}, {"partial_json", block["input"].dump()}};
    } else {
        start["text"] = "";
        delta = {{"type", "text_delta"}, {"text", opts.final_text}};
    }
    a.body += sse("content_block_start",
                  {{"type", "content_block_start"}, {"index", 0}, {"content_block", start}});
    a.body += sse("ping", {{"type", "ping"}});
    a.body += sse("content_block_delta",
                  {{"type", "content_block_delta"}, {"index", 0}, {"delta", delta}});
    a.body += sse("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
    a.body +=
        sse("message_delta", {{"type", "message_delta"},
                              {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", nullptr}}},
                              {"usage", {{"output_tokens", 5}}}});
    a.body += sse("message_stop", {{"type", "message_stop"}});
    return a;
}

// OpenAI Responses: the shell call in the form the offered tools ask for, else the
// final text; streamed as response.created, output_item.added/done (with text deltas),
// response.completed.
ModelStandin::Impl::Answer ModelStandin::Impl::openai(const Exchange& ex, std::atomic<int>& calls) {
    Answer a;
    json req = json::parse(ex.body, nullptr, false);
    if (!req.is_object()) {
        a.status = 400;
        a.body = R"({"error":{"type":"invalid_request_error","message":"body is not JSON"}})";
        return a;
    }
    std::map<std::string, std::string> tools;
    collect_tools(req.value("tools", json::array()), &tools);
    bool has_result = false;
    json input = req.value("input", json::array());
    if (input.is_array()) {
        for (const auto& item : input) {
            if (!item.is_object()) continue;
            std::string type = item.value("type", "");
            if (type == "additional_tools")
                collect_tools(item.value("tools", json::array()), &tools);
            if (type != "function_call_output" && type != "custom_tool_call_output" &&
                type != "local_shell_call_output")
                continue;
            std::string id = item.value("call_id", "");
            if (id.rfind(kOpenAiCallPrefix, 0) != 0) continue;
            has_result = true;
            record_result("openai", id, content_text(item.value("output", json())), ex);
        }
    }
    std::string cmd = command();
    json item;
    bool call = false;
    if (!has_result && !cmd.empty()) {
        std::string id = new_id(kOpenAiCallPrefix);  // unused when no shell tool is offered
        auto kind = [&](const std::string& name) {
            auto it = tools.find(name);
            return it == tools.end() ? std::string() : it->second;
        };
        // Codex 0.171's "code mode": its one direct tool is the custom tool `exec`,
        // raw JavaScript whose nested tools.exec_command runs the shell command. Older
        // versions offer exec_command / shell_command / shell as functions.
        if (kind("exec") == "custom" && kind("exec_command").empty()) {
            std::string js = "const r = await tools.exec_command({cmd: " + json(cmd).dump() +
                             "});\ntext(r.output);";
            item = {{"type", "custom_tool_call"},
                    {"id", "ctc_standin"},
                    {"call_id", id},
                    {"name", "exec"},
                    {"input", js},
                    {"status", "completed"}};
        } else if (!kind("exec_command").empty()) {
            item = {{"type", "function_call"},
                    {"id", "fc_standin"},
                    {"call_id", id},
                    {"name", "exec_command"},
                    {"arguments", json{{"cmd", cmd}}.dump()},
                    {"status", "completed"}};
        } else if (!kind("shell_command").empty()) {
            item = {{"type", "function_call"},
                    {"id", "fc_standin"},
                    {"call_id", id},
                    {"name", "shell_command"},
                    {"arguments", json{{"command", cmd}}.dump()},
                    {"status", "completed"}};
        } else if (!kind("shell").empty()) {
            item = {{"type", "function_call"},
                    {"id", "fc_standin"},
                    {"call_id", id},
                    {"name", "shell"},
                    {"arguments", json{{"command", {"bash", "-lc", cmd}}}.dump()},
                    {"status", "completed"}};
        }
        if (!item.is_null()) {
            call = true;
            ++calls;
        }
    }
    std::string msg_id = new_id("msg_standin_");
    if (!call) {
        item = {{"type", "message"},
                {"id", msg_id},
                {"role", "assistant"},
                {"status", "completed"},
                {"content", json::array({{{"type", "output_text"},
                                          {"text", opts.final_text},
                                          {"annotations", json::array()}}})}};
    }
    std::string resp_id = new_id("resp_standin_");
    std::string model = req.value("model", kModel);
    json usage = {{"input_tokens", 10},
                  {"input_tokens_details", {{"cached_tokens", 0}}},
                  {"output_tokens", 5},
                  {"output_tokens_details", {{"reasoning_tokens", 0}}},
                  {"total_tokens", 15}};
    json done = {{"id", resp_id},         {"object", "response"}, {"created_at", 0},
                 {"status", "completed"}, {"model", model},       {"output", json::array({item})},
                 {"usage", usage}};
    if (!req.value("stream", false)) {
        a.body = done.dump();
        return a;
    }
    a.stream = true;
    a.content_type = "text/event-stream";
    json created = done;
    created["status"] = "in_progress";
    created["output"] = json::array();
    created.erase("usage");
    a.body += sse("response.created", {{"type", "response.created"}, {"response", created}});
    json added = item;
    if (!call) {
        added["content"] = json::array();
        added["status"] = "in_progress";
    }
    a.body += sse("response.output_item.added",
                  {{"type", "response.output_item.added"}, {"output_index", 0}, {"item", added}});
    if (!call) {
        a.body += sse("response.output_text.delta", {{"type", "response.output_text.delta"},
                                                     {"item_id", msg_id},
                                                     {"output_index", 0},
                                                     {"content_index", 0},
                                                     {"delta", opts.final_text}});
    }
    a.body += sse("response.output_item.done",
                  {{"type", "response.output_item.done"}, {"output_index", 0}, {"item", item}});
    a.body += sse("response.completed", {{"type", "response.completed"}, {"response", done}});
    return a;
}

ModelStandin::Impl::Answer ModelStandin::Impl::route(Exchange& ex, std::atomic<int>& calls) {
    Answer a;
    const std::string& p = ex.path;
    auto ends_with = [&](const std::string& s) {
        return p.size() >= s.size() && p.compare(p.size() - s.size(), s.size(), s) == 0;
    };
    std::string encoding = lower(ex.header("content-encoding"));
    if (!ex.header("upgrade").empty()) {
        // No WebSocket here. Codex tries one before HTTP on its built-in provider: 426
        // makes it fall back at once, where 200 makes it retry five times (~6 s).
        ex.kind = "websocket";
        a.status = 426;
        a.body =
            R"({"error":{"type":"invalid_request_error","message":"the stand-in speaks HTTP only"}})";
    } else if (ex.method == "POST" && !encoding.empty() && encoding != "identity") {
        ex.kind = "compressed";
        a.status = 415;
        a.body =
            R"({"error":{"type":"invalid_request_error","message":"send the body uncompressed"}})";
    } else if (ex.method == "POST" && ends_with("/v1/messages/count_tokens")) {
        ex.kind = "count_tokens";
        a.body = R"({"input_tokens":10})";
    } else if (ex.method == "POST" && ends_with("/v1/messages")) {
        ex.kind = "messages";
        a = anthropic(ex, calls);
    } else if (ex.method == "POST" && ends_with("/responses")) {
        ex.kind = "responses";
        a = openai(ex, calls);
    } else if ((ex.method == "GET" || ex.method == "HEAD") && ends_with("/api/hello")) {
        ex.kind = "hello";
        a.body = "{}";
    } else if (ex.method == "GET" &&
               (ends_with("/v1/models") || p.find("/v1/models/") != std::string::npos)) {
        ex.kind = "models";
        json model = {{"id", kModel},
                      {"object", "model"},
                      {"type", "model"},
                      {"display_name", "Stand-in"},
                      {"created_at", "2025-01-01T00:00:00Z"},
                      {"created", 0},
                      {"owned_by", "agentjail-tests"}};
        a.body = ends_with("/v1/models") ? json{{"object", "list"},
                                                {"data", json::array({model})},
                                                {"has_more", false},
                                                {"first_id", kModel},
                                                {"last_id", kModel}}
                                               .dump()
                                         : model.dump();
    } else if (ex.method == "POST") {
        ex.kind = "other";  // telemetry, event logging: accepted and dropped
        a.body = "{}";
    } else {
        ex.kind = "unknown";
        a.status = 404;
        a.body = R"({"error":{"type":"not_found_error","message":"not served by the stand-in"}})";
    }
    return a;
}

ModelStandin::ModelStandin() : ModelStandin(Options{}) {}

ModelStandin::ModelStandin(const Options& opts) : impl_(std::make_unique<Impl>()) {
    impl_->opts = opts;
    ajtest::ThreadServer::Options so;
    so.what = "model stand-in";
    so.port = opts.port;
    so.reuse_addr = true;
    so.tls_cert = opts.tls_cert;
    so.tls_key = opts.tls_key;
    // An idle keep-alive connection ends after 30 s without a request.
    so.recv_timeout_s = 30;
    impl_->server =
        std::make_unique<ajtest::ThreadServer>(so, [this](int fd, SSL* ssl) { serve(fd, ssl); });
    port_ = impl_->server->port();
}

ModelStandin::~ModelStandin() { stop(); }

std::string ModelStandin::origin() const {
    return std::string(impl_->server->tls() ? "https" : "http") +
           "://127.0.0.1:" + std::to_string(port_);
}

void ModelStandin::script_shell(const std::string& command) {
    std::lock_guard<std::mutex> l(impl_->mu);
    impl_->shell_command = command;
}

std::vector<Exchange> ModelStandin::requests() const {
    std::lock_guard<std::mutex> l(impl_->mu);
    return impl_->requests;
}

std::vector<Exchange> ModelStandin::requests(const std::string& kind) const {
    std::vector<Exchange> out;
    for (auto& e : requests())
        if (e.kind == kind) out.push_back(e);
    return out;
}

std::vector<ToolResult> ModelStandin::tool_results() const {
    std::lock_guard<std::mutex> l(impl_->mu);
    return impl_->results;
}

std::string ModelStandin::summary() const {
    std::string s;
    for (const auto& e : requests()) {
        s += "  " + e.method + " " + e.target + " -> " + std::to_string(e.status) + " (" + e.kind +
             ")";
        for (const char* h : {"x-api-key", "authorization", "upgrade", "user-agent"})
            if (!e.header(h).empty()) s += std::string(" ") + h + "=" + mask(e.header(h));
        s += "\n";
    }
    return s.empty() ? "  (no requests)\n" : s;
}

void ModelStandin::serve(int fd, SSL* ssl) {
    Conn c;
    c.fd = fd;
    c.ssl = ssl;
    for (;;) {
        Exchange ex;
        if (!read_request(c, &ex)) break;
        Impl::Answer a = impl_->route(ex, tool_calls_);
        ex.status = a.status;
        if (impl_->opts.verbose)
            std::fprintf(stderr, "model-standin: %s %s -> %d (%s)\n", ex.method.c_str(),
                         ex.target.c_str(), a.status, ex.kind.c_str());
        {
            std::lock_guard<std::mutex> l(impl_->mu);
            impl_->requests.push_back(ex);
        }
        std::string head = "HTTP/1.1 " + std::to_string(a.status) + " " + reason(a.status) +
                           "\r\ncontent-type: " + a.content_type + "\r\n";
        if (a.stream)
            head += "cache-control: no-cache\r\nconnection: close\r\n\r\n";
        else
            head += "content-length: " + std::to_string(a.body.size()) + "\r\n\r\n";
        bool ok = c.write_all(head) && (ex.method == "HEAD" || c.write_all(a.body));
        if (!ok || a.stream) break;
    }
}

void ModelStandin::stop() { impl_->server->stop(); }

}  // namespace ajmodel
