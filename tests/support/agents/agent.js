#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// A small code agent written against the Anthropic SDK, as a project would write one:
// its key in .env beside it, a REPL on stdin/stdout. Each line typed goes to the model
// with one tool, Bash; a tool call the model asks for runs in /bin/sh, its output goes
// back, and the model's answer is printed. tests/integration/test_agents_tui.cc runs it
// inside agentjail against the stand-in model API (tests/support/model_standin.hpp).
//
//   node agent.js            ANTHROPIC_BASE_URL, ANTHROPIC_MODEL from the environment
'use strict';

const fs = require('fs');
const http = require('http');
const readline = require('readline');
const { spawnSync } = require('child_process');
const { Readable } = require('stream');
const Anthropic = require('@anthropic-ai/sdk');

// .env as dotenv reads it: NAME=VALUE lines, '#' comments, matching quotes dropped,
// and a variable already in the environment wins. Inside agentjail .env shows its keys
// with placeholders, and the environment's placeholder (the same) wins.
function loadDotenv(path) {
    let text;
    try {
        text = fs.readFileSync(path, 'utf8');
    } catch (e) {
        process.stderr.write(`agent: ${path}: ${e.code || e.message}; using the environment\n`);
        return;
    }
    let found = 0;
    for (const line of text.split('\n')) {
        const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
        if (!m || line.trimStart().startsWith('#')) continue;
        let v = m[2];
        if (v.length >= 2 && (v[0] === '"' || v[0] === "'") && v[v.length - 1] === v[0]) v = v.slice(1, -1);
        if (process.env[m[1]] === undefined) process.env[m[1]] = v;
        ++found;
    }
    if (found === 0) process.stderr.write(`agent: ${path}: no variables; using the environment\n`);
    else process.stderr.write(`agent: ${path}: ${found} variable(s)\n`);
}

// Node's fetch ignores HTTP_PROXY; a program that wants its requests to go where the
// environment says (as curl and Python's requests do) sends plain-HTTP ones to the
// proxy itself, in absolute form, and leaves NO_PROXY's hosts direct.
function proxyFor(url) {
    if (url.protocol !== 'http:') return null;
    const noProxy = (process.env.NO_PROXY || process.env.no_proxy || '').split(',').map((s) => s.trim());
    const host = url.hostname.replace(/^\[|\]$/g, '');
    for (const n of noProxy) {
        if (n === '') continue;
        if (n === '*' || host === n || host.endsWith('.' + n.replace(/^\./, ''))) return null;
    }
    const p = process.env.HTTP_PROXY || process.env.http_proxy;
    return p ? new URL(p) : null;
}

function proxyFetch(input, init = {}) {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const proxy = proxyFor(url);
    if (!proxy) return fetch(input, init);
    return new Promise((resolve, reject) => {
        const headers = {};
        new Headers(init.headers).forEach((v, k) => {
            headers[k] = v;
        });
        headers.host = url.host;
        const req = http.request(
            // One connection per request (agent: false): simple, and nothing depends on
            // how long the proxy keeps an idle connection open.
            { host: proxy.hostname, port: proxy.port || 80, method: init.method || 'GET', path: url.href, headers,
              signal: init.signal, agent: false },
            (res) => {
                const h = new Headers();
                for (const [k, v] of Object.entries(res.headers)) h.set(k, Array.isArray(v) ? v.join(', ') : v);
                const body = res.statusCode === 204 || res.statusCode === 304 ? null : Readable.toWeb(res);
                resolve(new Response(body, { status: res.statusCode, statusText: res.statusMessage, headers: h }));
            });
        req.on('error', reject);
        req.end(init.body === undefined || init.body === null ? undefined : init.body);
    });
}

const tools = [{
    name: 'Bash',
    description: 'Run a shell command in the project directory and return what it printed.',
    input_schema: {
        type: 'object',
        properties: {
            command: { type: 'string', description: 'the command' },
            description: { type: 'string', description: 'what it does, in a few words' },
        },
        required: ['command'],
    },
}];

function runTool(command) {
    const r = spawnSync('/bin/sh', ['-c', command], { encoding: 'utf8', timeout: 120000, maxBuffer: 1 << 20 });
    let out = (r.stdout || '') + (r.stderr || '');
    if (r.error) out += `\n[${r.error.message}]`;
    else if (r.status !== 0) out += `\n[exit ${r.status === null ? r.signal : r.status}]`;
    return out;
}

async function main() {
    loadDotenv('.env');
    if (!process.env.ANTHROPIC_API_KEY) {
        process.stderr.write('agent: no ANTHROPIC_API_KEY in .env or the environment\n');
        process.exit(2);
    }
    const client = new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY, fetch: proxyFetch, maxRetries: 0 });
    const model = process.env.ANTHROPIC_MODEL || 'claude-sonnet-4-5';
    const messages = [];

    async function turn(text) {
        messages.push({ role: 'user', content: text });
        for (let step = 0; step < 8; ++step) {
            const reply = await client.messages.create({ model, max_tokens: 1024, tools, messages });
            messages.push({ role: 'assistant', content: reply.content });
            const calls = reply.content.filter((b) => b.type === 'tool_use');
            for (const b of reply.content) if (b.type === 'text') console.log(`agent> ${b.text}`);
            if (reply.stop_reason !== 'tool_use' || calls.length === 0) return;
            const results = [];
            for (const c of calls) {
                const command = c.name === 'Bash' && c.input ? String(c.input.command || '') : '';
                console.log(`agent: running ${JSON.stringify(command)}`);
                const out = command ? runTool(command) : `unknown tool ${c.name}`;
                results.push({ type: 'tool_result', tool_use_id: c.id, content: out });
            }
            messages.push({ role: 'user', content: results });
        }
        console.log('agent: too many tool calls in one turn');
    }

    const rl = readline.createInterface({ input: process.stdin, output: process.stdout, prompt: 'you> ' });
    rl.prompt();
    for await (const line of rl) {
        if (line.trim() !== '') {
            try {
                await turn(line);
            } catch (e) {
                console.log(`agent: ${e.message}`);
            }
        }
        rl.prompt();
    }
    console.log('agent: bye');
}

main();
