#!/usr/bin/env bash
# serve_curl.sh — `plumb serve` driven with curl, checked with jq, against /work/serve-contract.md:
# every endpoint, streaming framing, stop strings, seeds, each error status, /metrics, SIGTERM.
# Not a load or fault test (serve_load.mjs, serve_fault.mjs). Usage: serve_curl.sh PLUMB MODEL
set -uo pipefail

PLUMB=${1:?usage: serve_curl.sh PLUMB MODEL}
MODEL=${2:?usage: serve_curl.sh PLUMB MODEL}
SKIP=77
for tool in curl jq; do
  if ! command -v "$tool" >/dev/null; then
    if [ "${PLUMB_NO_SKIP:-}" = 1 ]; then echo "FAIL: $tool not found (PLUMB_NO_SKIP=1)"; exit 1; fi
    echo "SKIP: $tool not found"; exit $SKIP
  fi
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/serve_curl.XXXXXX")
SERVER_PID=""
LONG_PID=""
cleanup() {
  [ -n "$LONG_PID" ] && kill "$LONG_PID" 2>/dev/null
  [ -n "$SERVER_PID" ] && kill -KILL "$SERVER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

FAILS=0
pass() { echo "ok   $1"; }
FAILED=""
fail() { echo "FAIL $1${2:+: $2}"; FAILS=$((FAILS + 1)); FAILED="$FAILED
  $1"; }
# expect DESCRIPTION JQ-FILTER [FILE]: the filter must be true on the JSON body (default $WORK/body).
expect() {
  local file=${3:-$WORK/body}
  if jq -e "$2" "$file" >/dev/null 2>&1; then pass "$1"; else fail "$1" "$(head -c 600 "$file")"; fi
}

KEY="sk-test-$$"
AUTH=(-H "Authorization: Bearer $KEY")
ALIAS=plumb-test
CTX=2048

# A server: --slots 1 --queue 0 (one long request makes the next one 503), a key, a small body
# limit, and a context of 2048 tokens so the long request below fits.
"$PLUMB" serve -m "$MODEL" --port 0 -t 1 --slots 1 --queue 0 -c $CTX --api-key "$KEY" \
  --max-body 65536 --alias $ALIAS --timeout 10 >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER_PID=$!
for _ in $(seq 1 300); do
  grep -q '^plumb serve: listening on http://' "$WORK/stdout" && break
  kill -0 $SERVER_PID 2>/dev/null || break
  sleep 0.1
done
BASE=$(sed -n 's|^plumb serve: listening on \(http://[^ ]*\)$|\1|p' "$WORK/stdout" | head -1)
if [ -z "$BASE" ]; then
  echo "FAIL: no listening line on stdout"; cat "$WORK/stdout" "$WORK/stderr"; exit 1
fi
pass "listening line on stdout: $BASE"

# call METHOD PATH [curl args…]: the status in $STATUS, the body in $WORK/body, headers in $WORK/headers.
call() {
  local method=$1 path=$2
  shift 2
  STATUS=$(curl -s -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' -X "$method" "$@" "$BASE$path")
}
# chat JSON [curl args…] / completion JSON: POST with the key.
chat() { local b=$1; shift; call POST /v1/chat/completions "${AUTH[@]}" -H 'Content-Type: application/json' --data-binary "$b" "$@"; }
completion() { local b=$1; shift; call POST /v1/completions "${AUTH[@]}" -H 'Content-Type: application/json' --data-binary "$b" "$@"; }
status_is() { if [ "$STATUS" = "$1" ]; then pass "$2 → $1"; else fail "$2 → $1" "got $STATUS: $(head -c 400 "$WORK/body")"; fi; }
header_has() { if grep -qi "^$1" "$WORK/headers"; then pass "$2"; else fail "$2" "$(tr -d '\r' <"$WORK/headers")"; fi; }
# An OpenAI error body: error.type, .code (or null), .param (or null; "any": not checked), a
# message naming param.
error_is() { # STATUS TYPE CODE PARAM WHAT
  status_is "$1" "$5"
  local code_f='.error.code == null' param_f='.error.param == null'
  [ "$3" != null ] && code_f=".error.code == \"$3\""
  [ "$4" = any ] && param_f='true'
  [ "$4" != null ] && [ "$4" != any ] && param_f=".error.param == \"$4\" and (.error.message | contains(\"$4\"))"
  expect "$5: error type $2, code $3, param $4 (named in the message)" \
    ".error.type == \"$2\" and $code_f and $param_f and (.error.message | type == \"string\" and length > 0)"
}
# SSE in $WORK/body → $WORK/events.json: {ok: framing holds, events: [parsed chunks], done, after}.
sse_parse() {
  jq -Rs '
    split("\n\n") as $b
    | ($b[:-1]) as $blocks
    | { ok: (($b[-1] == "") and ($blocks | all(startswith("data: ") and (index("\n") == null)))),
        raw: [$blocks[] | ltrimstr("data: ")] }
    | .done = (.raw | index(["[DONE]"]))
    | .events = [.raw[] | select(. != "[DONE]") | fromjson]
    | .last_is_done = (.raw[-1] == "[DONE]")' "$WORK/body" >"$WORK/events.json"
}

# ---- /health, /v1/models, auth ------------------------------------------------------
call GET /health
status_is 200 "GET /health without a key"
expect "/health: status ok, 1 slot, 1 idle, queue 0" \
  '.status == "ok" and .slots_total == 1 and .slots_idle == 1 and .queue == 0'
call GET /v1/models "${AUTH[@]}"
status_is 200 "GET /v1/models"
expect "/v1/models: a list with the alias, object model, owned_by plumb" \
  ".object == \"list\" and (.data | length) == 1 and .data[0].id == \"$ALIAS\" and .data[0].object == \"model\"
   and .data[0].owned_by == \"plumb\" and (.data[0].created | type) == \"number\""
for p in "GET /v1/models" "GET /slots" "POST /v1/chat/completions" "POST /v1/completions"; do
  set -- $p
  call "$1" "$2" -H 'Content-Type: application/json' --data-binary '{"messages":[{"role":"user","content":"hi"}],"prompt":"hi"}'
  error_is 401 authentication_error "$(jq -r '.error.code // "null"' "$WORK/body")" null "$p without a key"
  call "$1" "$2" -H "Authorization: Bearer wrong-$KEY" -H 'Content-Type: application/json' \
    --data-binary '{"messages":[{"role":"user","content":"hi"}],"prompt":"hi"}'
  status_is 401 "$p with a wrong key"
done

call GET /metrics
status_is 200 "GET /metrics without a key (--api-key does not cover /metrics)"
call GET /v1/models -H 'Origin: https://app.example'
if grep -qi '^Access-Control-' "$WORK/headers"; then fail "no CORS headers without --cors" "$(tr -d '\r' <"$WORK/headers")"
else pass "no CORS headers without --cors"; fi

# ---- chat, non-streaming ------------------------------------------------------------
GREEDY='{"model":"x","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Tell me a story about a small cat."}],"temperature":0,"max_tokens":24}'
chat "$GREEDY"
status_is 200 "chat (greedy)"
header_has 'Content-Type: application/json' "chat: Content-Type application/json"
expect "chat: the chat.completion shape, usage and plumb fields" "
  (.id | startswith(\"chatcmpl-\")) and .object == \"chat.completion\" and (.created | type) == \"number\"
  and .model == \"$ALIAS\" and (.choices | length) == 1 and .choices[0].index == 0
  and .choices[0].message.role == \"assistant\" and (.choices[0].message.content | type) == \"string\"
  and (.choices[0].finish_reason == \"stop\" or .choices[0].finish_reason == \"length\")
  and .usage.total_tokens == .usage.prompt_tokens + .usage.completion_tokens
  and .usage.prompt_tokens > 0 and .usage.completion_tokens <= 24
  and (.usage.prompt_tokens_details.cached_tokens | type) == \"number\"
  and .plumb.slot == 0 and (.plumb.cache_path | IN(\"fast\",\"partial\",\"slow\"))
  and .plumb.reused_tokens == .usage.prompt_tokens_details.cached_tokens
  and .plumb.reused_tokens + .plumb.prefilled_tokens == .usage.prompt_tokens
  and (.plumb.ttft_ms | type) == \"number\" and (.plumb.total_ms | type) == \"number\"
  and (.choices[0].finish_reason != \"length\" or .usage.completion_tokens == 24)"
GREEDY_TEXT=$(jq -r '.choices[0].message.content' "$WORK/body")
GREEDY_FINISH=$(jq -r '.choices[0].finish_reason' "$WORK/body")
echo "     greedy reply: $GREEDY_TEXT"
chat "$GREEDY"
expect "chat: greedy (temperature 0) twice → the same text" \
  ".choices[0].message.content == $(jq -n --arg t "$GREEDY_TEXT" '$t')"
# The same messages with content as an array of text parts.
chat '{"messages":[{"role":"system","content":[{"type":"text","text":"You are a helpful "},{"type":"text","text":"assistant."}]},{"role":"user","content":[{"type":"text","text":"Tell me a story about a small cat."}]}],"temperature":0,"max_tokens":24}'
expect "chat: content as text parts → the same text as the string form" \
  ".choices[0].message.content == $(jq -n --arg t "$GREEDY_TEXT" '$t')"
# finish_reason "length" at max_tokens: a prompt the model continues without end.
completion '{"prompt":"1, 2, 3, 4,","temperature":0,"max_tokens":5}'
expect "completions: max_tokens 5 on an endless continuation → finish length, 5 tokens" \
  '.choices[0].finish_reason == "length" and .usage.completion_tokens == 5'

# ---- seeds ---------------------------------------------------------------------------
SEEDED='{"messages":[{"role":"user","content":"What is a good breakfast?"}],"temperature":0.9,"top_p":0.95,"top_k":40,"min_p":0.02,"max_tokens":24,"seed":4242}'
chat "$SEEDED"
SEED_TEXT=$(jq -r '.choices[0].message.content' "$WORK/body")
SEED_PATH1=$(jq -r '.plumb.cache_path' "$WORK/body")
chat "$GREEDY" # another conversation in between: the slot's cache changes
chat "$SEEDED"
SEED_PATH2=$(jq -r '.plumb.cache_path' "$WORK/body")
expect "chat: the same seed (temperature 0.9) → the same text (paths $SEED_PATH1, $SEED_PATH2)" \
  ".choices[0].message.content == $(jq -n --arg t "$SEED_TEXT" '$t')"
completion '{"prompt":"Once upon a time","temperature":1.0,"max_tokens":24,"seed":99}'
CSEED=$(jq -r '.choices[0].text' "$WORK/body")
completion '{"prompt":"Once upon a time","temperature":1.0,"max_tokens":24,"seed":99}'
expect "completions: the same seed → the same text" ".choices[0].text == $(jq -n --arg t "$CSEED" '$t')"

# ---- chat, streaming -----------------------------------------------------------------
STREAM=$(jq -c '. + {stream: true, stream_options: {include_usage: true}}' <<<"$GREEDY")
chat "$STREAM" -N
status_is 200 "chat stream"
header_has 'Content-Type: text/event-stream' "chat stream: Content-Type text/event-stream"
sse_parse
expect "chat stream: only 'data: …' events each ended by a blank line, last 'data: [DONE]'" \
  '.ok and .last_is_done and (.raw | map(select(. == "[DONE]")) | length) == 1' "$WORK/events.json"
expect "chat stream: every chunk chat.completion.chunk with one id, created, model" "
  (.events | length) >= 3 and (.events | all(.object == \"chat.completion.chunk\" and .model == \"$ALIAS\"))
  and ([.events[].id] | unique | length) == 1 and (.events[0].id | startswith(\"chatcmpl-\"))
  and ([.events[].created] | unique | length) == 1" "$WORK/events.json"
expect "chat stream: first chunk delta {role: assistant, content: \"\"}" \
  '.events[0].choices[0].delta == {"role":"assistant","content":""}' "$WORK/events.json"
expect "chat stream: the pieces reassemble to the non-streaming text; finish_reason the same" "
  ([.events[] | .choices[0]? | .delta.content? // empty] | join(\"\")) == $(jq -n --arg t "$GREEDY_TEXT" '$t')
  and ([.events[] | select((.choices | length) > 0 and .choices[0].finish_reason != null)] | length) == 1
  and ([.events[] | select((.choices | length) > 0 and .choices[0].finish_reason != null)][0]
       | .choices[0].finish_reason == \"$GREEDY_FINISH\" and .choices[0].delta == {}
         and (.plumb.cache_path | IN(\"fast\",\"partial\",\"slow\")))" "$WORK/events.json"
expect "chat stream: include_usage → usage exactly once, in the last chunk (choices []), then [DONE]" "
  (.events[-1].choices == [] and (.events[-1].usage.total_tokens | type) == \"number\")
  and .events[-1].usage.total_tokens == .events[-1].usage.prompt_tokens + .events[-1].usage.completion_tokens
  and (.events[-1].usage.prompt_tokens_details.cached_tokens | type) == \"number\"
  and ([.events[] | select(.usage != null)] | length) == 1
  and ([.events[] | select(.choices == [])] | length) == 1
  and (.events[-2].choices[0].finish_reason != null)" "$WORK/events.json"
for opts in '{stream: true}' '{stream: true, stream_options: {include_usage: false}}'; do
  chat "$(jq -c ". + $opts" <<<"$GREEDY")" -N
  sse_parse
  expect "chat stream $opts: no usage anywhere, no choices-[] chunk, the finish chunk last" \
    '.ok and .last_is_done and ([.events[] | select(.choices == [])] | length) == 0
     and ([.events[] | select(.usage != null)] | length) == 0
     and .events[-1].choices[0].finish_reason != null' "$WORK/events.json"
done

# ---- /v1/completions -----------------------------------------------------------------
COMP='{"prompt":"The history of the city","temperature":0,"max_tokens":20}'
completion "$COMP"
status_is 200 "completions"
expect "completions: the text_completion shape" "
  (.id | type) == \"string\" and .object == \"text_completion\" and .model == \"$ALIAS\"
  and .choices[0].index == 0 and (.choices[0].text | type) == \"string\" and .choices[0].logprobs == null
  and (.choices[0].finish_reason | IN(\"stop\",\"length\"))
  and .usage.total_tokens == .usage.prompt_tokens + .usage.completion_tokens
  and (.plumb.cache_path | IN(\"fast\",\"partial\",\"slow\"))"
COMP_TEXT=$(jq -r '.choices[0].text' "$WORK/body")
completion "$(jq -c '. + {stream: true}' <<<"$COMP")" -N
sse_parse
expect "completions stream: data: framing, text_completion chunks, text equals the non-streaming one" "
  .ok and .last_is_done and (.events | all(.object == \"text_completion\"))
  and ([.events[] | .choices[0]? | .text? // empty] | join(\"\")) == $(jq -n --arg t "$COMP_TEXT" '$t')
  and ([.events[] | select((.choices | length) > 0 and .choices[0].finish_reason != null)] | length) == 1" \
  "$WORK/events.json"

# ---- stop strings --------------------------------------------------------------------
# A greedy text T; a stop string S taken from its middle: the reply must be T up to S's first
# occurrence, finish "stop", and never contain S (streamed or not).
STOP_BASE='{"messages":[{"role":"user","content":"Describe a small town."}],"temperature":0,"max_tokens":40}'
chat "$STOP_BASE"
T=$(jq -r '.choices[0].message.content' "$WORK/body")
S=$(jq -rn --arg t "$T" '[range(($t | length / 2 | floor); 0; -1) as $k | $t[$k:$k+3]
      | select(length == 3) | . as $s | select(($t | split($s))[0] | length > 0)] | .[0] // empty')
if [ -z "$S" ]; then
  fail "stop: the greedy text is long enough to cut ($T)"
else
  WANT=$(jq -rn --arg t "$T" --arg s "$S" '$t | split($s)[0]')
  echo "     stop string '$S' in '$T' → want '$WANT'"
  for form in "\"stop\": \$s" "\"stop\": [\"qqqzzz\", \$s]"; do
    chat "$(jq -c --arg s "$S" ". + {$form}" <<<"$STOP_BASE")"
    expect "stop ($form): text is T up to the stop string, finish stop, stop string absent" \
      ".choices[0].finish_reason == \"stop\" and .choices[0].message.content == $(jq -n --arg t "$WANT" '$t')
       and (.choices[0].message.content | contains($(jq -n --arg s "$S" '$s')) | not)"
  done
  chat "$(jq -c --arg s "$S" '. + {stop: $s, stream: true}' <<<"$STOP_BASE")" -N
  sse_parse
  expect "stop, streamed: the pieces reassemble to T up to the stop string; finish stop" "
    .ok and .last_is_done
    and ([.events[] | .choices[0]? | .delta.content? // empty] | join(\"\")) == $(jq -n --arg t "$WANT" '$t')
    and ([.events[] | .choices[0]? | select(.finish_reason != null) | .finish_reason] == [\"stop\"])" \
    "$WORK/events.json"
  completion "$(jq -nc --arg s "$S" --arg p "$T" '{prompt: "Once upon a time", temperature: 0, max_tokens: 40}')"
  CT=$(jq -r '.choices[0].text' "$WORK/body")
  CS=$(jq -rn --arg t "$CT" '[range(($t | length / 2 | floor); 0; -1) as $k | $t[$k:$k+3]
      | select(length == 3) | . as $s | select(($t | split($s))[0] | length > 0)] | .[0] // empty')
  if [ -n "$CS" ]; then
    completion "$(jq -nc --arg s "$CS" '{prompt: "Once upon a time", temperature: 0, max_tokens: 40, stop: [$s]}')"
    expect "completions stop: text up to the stop string, finish stop" \
      ".choices[0].finish_reason == \"stop\" and .choices[0].text == $(jq -rn --arg t "$CT" --arg s "$CS" '$t | split($s)[0] | tojson')"
  fi
fi

# ---- 400: malformed JSON, wrong types, out of range ------------------------------------
chat '{"messages": [{"role": "user", "content": "hi"}'
error_is 400 invalid_request_error invalid_json null "malformed JSON"
chat 'not json at all'
error_is 400 invalid_request_error invalid_json null "a body that is not JSON"
bad() { # PARAM BODY
  chat "$2"
  status_is 400 "wrong $1"
  expect "wrong $1: invalid_request_error, param $1, named in the message" \
    ".error.type == \"invalid_request_error\" and .error.param == \"$1\" and (.error.message | contains(\"$1\"))"
}
U='"messages":[{"role":"user","content":"hi"}]'
bad temperature "{$U,\"temperature\":\"hot\"}"
bad temperature "{$U,\"temperature\":3}"
bad top_p "{$U,\"top_p\":0}"
bad top_k "{$U,\"top_k\":-1}"
bad min_p "{$U,\"min_p\":1.5}"
bad max_tokens "{$U,\"max_tokens\":0}"
bad max_tokens "{$U,\"max_tokens\":\"ten\"}"
bad seed "{$U,\"seed\":\"abc\"}"
bad stream "{$U,\"stream\":\"yes\"}"
bad stop "{$U,\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}"
bad n "{$U,\"n\":2}"
bad messages '{"temperature":0.5}'
bad messages '{"messages":"hello"}'
bad 'messages[1].content' '{"messages":[{"role":"user","content":"hi"},{"role":"user","content":5}]}'
bad 'messages[0].role' '{"messages":[{"role":5,"content":"hi"}]}'
# Roles and tool fields where OpenAI checks them, whatever the template (issue 53).
bad 'messages[0].role' '{"messages":[{"role":"wizard","content":"hi"}]}'
expect "an unknown role's error lists OpenAI's roles" \
  '.error.message | contains("system, developer, user, assistant, tool, function")'
bad 'messages[0].name' '{"messages":[{"role":"user","name":7,"content":"hi"}]}'
bad 'messages[1].tool_call_id' '{"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c1","content":"1"}]}'
bad 'messages[0].tool_calls[0].function.arguments' '{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{}}}]}]}'
bad 'tools[0].function.name' "{$U,\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a b\"}}]}"
bad tool_choice "{$U,\"tool_choice\":\"auto\"}"
chat '{"messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":"hi"}],"max_tokens":2}'
status_is 200 "a developer message is accepted (rendered as the template's system turn)"
# Additions the server side wrote into the contract's Changes.
bad frequency_penalty "{$U,\"frequency_penalty\":3}"
bad presence_penalty "{$U,\"presence_penalty\":\"x\"}"
bad logprobs "{$U,\"logprobs\":true}"
bad tools "{$U,\"tools\":{\"type\":\"function\"}}"
# Tools, tool calls and any role go to the model's own template (issue 29), which decides.
chat "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"1\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"max_tokens\":2}"
status_is 200 "tools, a tool call and a tool result reach the template"
# This model's ChatML template adds content to strings: a null content is its TypeError, a 400
# naming the template's line and column (jinja2 raises the same).
chat '{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"1"}]}'
status_is 400 "the template refuses a null content"
expect "the template's refusal names messages and the template's position" \
  '.error.param == "messages" and (.error.message | contains("template line 1, column"))'
bad response_format "{$U,\"response_format\":{\"type\":\"json_object\"}}"
bad response_format "{$U,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{}}}}"
chat "{$U,\"logprobs\":false,\"tools\":[],\"response_format\":{\"type\":\"text\"},\"frequency_penalty\":0.5,\"presence_penalty\":-0.5,\"max_tokens\":4}"
status_is 200 "logprobs false, tools [], response_format text, penalties in range"
completion '{"prompt":"Hello","max_tokens":50,"ignore_eos":true,"temperature":0.8,"seed":3}'
expect "ignore_eos: the reply runs to max_tokens (50, finish length)" \
  '.usage.completion_tokens == 50 and .choices[0].finish_reason == "length"'
# ignore_eos makes the end tokens impossible to draw (as llama.cpp), not drawn and shown: the
# demo model ends most replies within 64 tokens, and none of these holds <|endoftext|>.
for seed in 1 2 3 4 5; do
  chat "{$U,\"max_tokens\":64,\"ignore_eos\":true,\"temperature\":1,\"seed\":$seed}"
  expect "ignore_eos, seed $seed: 64 tokens, no end token in the content" \
    '.usage.completion_tokens == 64 and (.choices[0].message.content | contains("<|endoftext|>") | not)'
done
completion '{"prompt":7}'
status_is 400 "completions: prompt not a string"
expect "completions: prompt not a string → param prompt" '.error.param == "prompt"'

# ---- 404, 405 ------------------------------------------------------------------------
call GET /v1/nowhere "${AUTH[@]}"
status_is 404 "GET an unknown path"
expect "404: an OpenAI error body" '(.error.message | type) == "string" and (.error.type | type) == "string"'
call GET /v1/chat/completions "${AUTH[@]}"
status_is 405 "GET /v1/chat/completions"
call DELETE /v1/models "${AUTH[@]}"
status_is 405 "DELETE /v1/models"
call POST /health -H 'Content-Type: application/json' --data-binary '{}'
status_is 405 "POST /health"
# curl -I writes the headers where -o points; size_download counts the body bytes.
OUT=$(curl -s -o /dev/null -D "$WORK/headers" -w '%{http_code} %{size_download}' -I "${AUTH[@]}" "$BASE/v1/models")
STATUS=${OUT% *}
status_is 200 "HEAD /v1/models"
curl -s -o "$WORK/body" "${AUTH[@]}" "$BASE/v1/models"
if [ "${OUT#* }" = 0 ] && grep -qi '^Content-Type: application/json' "$WORK/headers" &&
   grep -qi "^Content-Length: $(wc -c <"$WORK/body")"$'\r' "$WORK/headers"; then
  pass "HEAD /v1/models: GET's headers, no body"
else fail "HEAD /v1/models: GET's headers, no body" "$(tr -d '\r' <"$WORK/headers") $(head -c 200 "$WORK/body")"; fi
STATUS=$(curl -s -o /dev/null -w '%{http_code}' -I "$BASE/v1/models")
status_is 401 "HEAD /v1/models without a key"
call HEAD /v1/completions "${AUTH[@]}"
status_is 405 "HEAD /v1/completions"
header_has 'Allow: POST' "405 on /v1/completions names Allow: POST"

# ---- 413: body over --max-body -----------------------------------------------------------
head -c 100000 /dev/zero | tr '\0' 'a' | jq -Rsc '{messages: [{role: "user", content: .}]}' >"$WORK/big.json"
call POST /v1/chat/completions "${AUTH[@]}" -H 'Content-Type: application/json' --data-binary @"$WORK/big.json"
error_is 413 invalid_request_error request_too_large null "a 100 kB body over --max-body 65536"

# ---- 413: a conversation over the context, the slot untouched ----------------------------
CONV='{"messages":[{"role":"user","content":"Tell me about the sea."}],"temperature":0.7,"seed":5,"max_tokens":12}'
chat "$CONV"
REPLY=$(jq -r '.choices[0].message.content' "$WORK/body")
call GET /slots "${AUTH[@]}"
cp "$WORK/body" "$WORK/slots_before.json"
expect "/slots: one idle consistent slot holding the conversation" \
  'length == 1 and .[0].id == 0 and .[0].busy == false and .[0].consistent == true and .[0].n_past > 0
   and .[0].text_bytes > 0' "$WORK/slots_before.json"
LONGTXT=$(for _ in $(seq 1 420); do printf 'the cat sat on the mat. '; done)
jq -nc --arg l "$LONGTXT" '{messages: [{role: "user", content: $l}], max_tokens: 8}' >"$WORK/over1.json"
jq -nc --arg l "$LONGTXT" --arg r "$REPLY" '{messages: [{role: "user", content: "Tell me about the sea."},
  {role: "assistant", content: $r}, {role: "user", content: $l}], temperature: 0.7, seed: 6, max_tokens: 8}' >"$WORK/over2.json"
for f in over1 over2; do
  what="a conversation over the context ($( [ $f = over1 ] && echo unrelated || echo extending the cached one))"
  call POST /v1/chat/completions "${AUTH[@]}" -H 'Content-Type: application/json' --data-binary @"$WORK/$f.json"
  error_is 413 invalid_request_error context_length_exceeded any "$what"
  expect "$what: the message says the prompt's tokens (over $CTX) and the context (-c) $CTX" "
    .error.message | test(\"the prompt is [0-9]+ tokens; the context \\\\(-c\\\\) is $CTX\")
    and (capture(\"the prompt is (?<n>[0-9]+) tokens\").n | tonumber) > $CTX"
  call GET /slots "${AUTH[@]}"
  if jq -e --slurpfile b "$WORK/slots_before.json" \
      '.[0].n_past == $b[0][0].n_past and .[0].text_bytes == $b[0][0].text_bytes and .[0].consistent == true
       and .[0].busy == false' "$WORK/body" >/dev/null; then
    pass "$what: /slots n_past and text_bytes unchanged, consistent"
  else
    fail "$what: /slots n_past and text_bytes unchanged, consistent" "before $(cat "$WORK/slots_before.json") after $(cat "$WORK/body")"
  fi
done
chat "$(jq -nc --arg r "$REPLY" '{messages: [{role: "user", content: "Tell me about the sea."},
  {role: "assistant", content: $r}, {role: "user", content: "What lives in it?"}], temperature: 0.7, seed: 7, max_tokens: 8}')"
expect "after the 413s the conversation's next turn takes the fast path (its cache survived)" \
  '.plumb.cache_path == "fast" and .usage.prompt_tokens_details.cached_tokens > 0'

# ---- the log: the path asked for, and why each error was answered ----------------------
log_has() { if grep -qE -- "$1" "$WORK/stderr"; then pass "log: $2"; else fail "log: $2" "no line matching $1; $(tail -n 8 "$WORK/stderr")"; fi; }
log_has '^GET /v1/nowhere 404 [0-9.]+ ms: ' "a 404 names the path asked for"
log_has '^POST /v1/completions 400 [0-9.]+ ms: [a-z_]+: ' "a 400 says why"
log_has '^POST /v1/chat/completions 413 [0-9.]+ ms: request_too_large: the body is over' \
  "the 413 of a body over --max-body says so"
log_has "^POST /v1/chat/completions 413 [0-9.]+ ms slot 0: context_length_exceeded: the prompt is [0-9]+ tokens; the context \\(-c\\) is $CTX" \
  "the 413 of a prompt over the context says so, with both numbers"
chat "$CONV"
if grep -qE '"ttft_ms":[0-9]+(\.[0-9]{1,3})?[,}]' "$WORK/body" &&
   grep -qE '"total_ms":[0-9]+(\.[0-9]{1,3})?[,}]' "$WORK/body"; then
  pass "ttft_ms and total_ms to the microsecond, not 17 digits"
else
  fail "ttft_ms and total_ms to the microsecond, not 17 digits" "$(grep -oE '"(ttft|total)_ms":[^,}]*' "$WORK/body")"
fi

# ---- 503 + Retry-After: --slots 1 --queue 0 with a long request in flight -----------------
# The long request: greedy on "1, 2, 3, 4," does not end by itself for thousands of tokens; 1500
# run for a second or more. If it ends before the second request arrives, try again (at most 5).
GOT503=""
for attempt in 1 2 3 4 5; do
  curl -s -o "$WORK/long.json" -w '%{http_code}' "${AUTH[@]}" -H 'Content-Type: application/json' \
    --data-binary "{\"prompt\":\"1, 2, 3, 4,\",\"temperature\":0,\"max_tokens\":1500}" \
    "$BASE/v1/completions" >"$WORK/long.status" &
  LONG_PID=$!
  for _ in $(seq 1 1000); do
    [ "$(curl -s "$BASE/health" | jq -r .slots_idle)" = 0 ] && break
    sleep 0.01
  done
  chat '{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}'
  wait $LONG_PID
  LONG_PID=""
  if [ "$STATUS" = 503 ]; then GOT503=1; break; fi
  [ "$STATUS" = 200 ] || { fail "a request while the only slot is busy and the queue is 0 → 503 or (too late) 200" "$STATUS"; break; }
done
if [ -n "$GOT503" ]; then
  error_is 503 overloaded_error overloaded null "a request while the only slot is busy (--queue 0)"
  header_has 'Retry-After: 1' "503 carries Retry-After: 1"
  if [ "$(cat "$WORK/long.status")" = 200 ] && jq -e '.usage.completion_tokens == 1500 and .choices[0].finish_reason == "length"' "$WORK/long.json" >/dev/null; then
    pass "the long request in flight completed (200, 1500 tokens)"
  else
    fail "the long request in flight completed (200, 1500 tokens)" "$(cat "$WORK/long.status") $(head -c 300 "$WORK/long.json")"
  fi
else
  fail "503 while the only slot is busy: 5 attempts, each second request got 200"
fi

# ---- /metrics ------------------------------------------------------------------------
call GET /metrics "${AUTH[@]}"
status_is 200 "GET /metrics"
header_has 'Content-Type: text/plain; version=0.0.4' "metrics: Content-Type text/plain; version=0.0.4"
for name in 'plumb_requests_total{endpoint="/v1/chat/completions",status="200"}' \
    'plumb_requests_total{endpoint="/v1/chat/completions",status="400"}' \
    'plumb_requests_total{endpoint="/v1/completions",status="200"}' \
    plumb_prompt_tokens_total plumb_completion_tokens_total \
    'plumb_cache_path_total{path="fast"}' 'plumb_cache_path_total{path="partial"}' \
    'plumb_cache_path_total{path="slow"}' plumb_cached_tokens_total plumb_queue_length \
    plumb_slots_busy 'plumb_slots_total 1' 'plumb_rejected_total{reason="overload"}' \
    'plumb_rejected_total{reason="context"}' 'plumb_rejected_total{reason="body"}' \
    'plumb_rejected_total{reason="auth"}' 'plumb_rejected_total{reason="timeout"}' plumb_cancelled_total \
    'plumb_request_duration_seconds_bucket{' 'plumb_request_duration_seconds_bucket{le="+Inf"}' \
    plumb_request_duration_seconds_sum plumb_request_duration_seconds_count \
    'plumb_ttft_seconds_bucket{' 'plumb_ttft_seconds_bucket{le="+Inf"}' plumb_ttft_seconds_sum plumb_ttft_seconds_count; do
  if grep -qF -- "$name" "$WORK/body"; then pass "metrics has $name"; else fail "metrics has $name"; fi
done
metric() { awk -v k="$1" 'index($0, k" ") == 1 { print $NF }' "$WORK/body"; }
for r in overload context body auth; do
  v=$(metric "plumb_rejected_total{reason=\"$r\"}")
  if [ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v >= 1) }'; then pass "metrics: rejected{reason=$r} counted ($v)"
  else fail "metrics: rejected{reason=$r} counted" "'$v'"; fi
done
for h in plumb_request_duration_seconds plumb_ttft_seconds; do
  inf=$(metric "${h}_bucket{le=\"+Inf\"}")
  cnt=$(metric "${h}_count")
  if [ -n "$inf" ] && [ "$inf" = "$cnt" ]; then pass "metrics: ${h} +Inf bucket = _count ($cnt)"
  else fail "metrics: ${h} +Inf bucket = _count" "inf '$inf' count '$cnt'"; fi
done

# ---- SIGTERM: exit 0, one line on stdout ------------------------------------------------
kill -TERM $SERVER_PID
wait $SERVER_PID
RC=$?
SERVER_PID=""
if [ $RC = 0 ]; then pass "SIGTERM → exit 0"; else fail "SIGTERM → exit 0" "exit $RC; $(tail -5 "$WORK/stderr")"; fi
if [ "$(wc -l <"$WORK/stdout")" = 1 ]; then pass "stdout: exactly the listening line"; else fail "stdout: exactly the listening line" "$(cat "$WORK/stdout")"; fi

# start_server ARGS…: a second server (stdout/stderr in $WORK/stdout2, stderr2), its URL in BASE.
start_server() {
  "$@" >"$WORK/stdout2" 2>"$WORK/stderr2" &
  SERVER_PID=$!
  for _ in $(seq 1 300); do
    grep -q '^plumb serve: listening on http://' "$WORK/stdout2" && break
    kill -0 $SERVER_PID 2>/dev/null || break
    sleep 0.1
  done
  BASE=$(sed -n 's|^plumb serve: listening on \(http://[^ ]*\)$|\1|p' "$WORK/stdout2" | head -1)
}
stop_server() { kill -TERM $SERVER_PID; wait $SERVER_PID; SERVER_PID=""; }
# threads_each: the "a request gets N threads" of the start line.
threads_each() { sed -n 's/.*: a request gets \([0-9][0-9]*\) threads\{0,1\} (.*/\1/p' "$WORK/stderr2" | head -1; }

# ---- --host localhost, --cors, --metrics-key, threads per slot --------------------------
ORIGIN=https://app.example
MKEY="mk-$$"
start_server env PLUMB_THREADS=4 "$PLUMB" serve -m "$MODEL" --host localhost --port 0 --slots 2 \
  --api-key "$KEY" --metrics-key "$MKEY" --cors "$ORIGIN"
case "$BASE" in
  http://localhost:*) pass "--host localhost: listening on $BASE" ;;
  *) fail "--host localhost: listening" "'$BASE' $(cat "$WORK/stderr2")" ;;
esac
PORT2=${BASE##*:}
STATUS=$(curl -s -o "$WORK/body" -w '%{http_code}' "http://127.0.0.1:$PORT2/health")
status_is 200 "--host localhost answers on 127.0.0.1 (loopback)"
# PLUMB_THREADS=4 shared by 2 slots.
T=$(threads_each)
if [ -n "$T" ] && [ "$T" = $((4 / 2)) ]; then pass "PLUMB_THREADS=4, --slots 2 → $T threads each"
else fail "PLUMB_THREADS=4, --slots 2 → 2 threads each" "'$T': $(head -2 "$WORK/stderr2")"; fi
call OPTIONS /v1/chat/completions -H "Origin: $ORIGIN" -H 'Access-Control-Request-Method: POST' \
  -H 'Access-Control-Request-Headers: authorization, content-type'
status_is 204 "--cors: preflight OPTIONS without a key"
header_has "Access-Control-Allow-Origin: $ORIGIN" "preflight: Access-Control-Allow-Origin $ORIGIN"
header_has 'Access-Control-Allow-Methods: POST' "preflight: Access-Control-Allow-Methods POST"
header_has 'Access-Control-Allow-Headers: .*Authorization' "preflight: Access-Control-Allow-Headers Authorization"
chat '{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}' -H "Origin: $ORIGIN"
status_is 200 "--cors: chat"
header_has "Access-Control-Allow-Origin: $ORIGIN" "--cors: the chat answer carries Allow-Origin"
chat '{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}' -N -H "Origin: $ORIGIN"
header_has "Access-Control-Allow-Origin: $ORIGIN" "--cors: a stream carries Allow-Origin"
call GET /v1/models -H "Origin: $ORIGIN"
status_is 401 "--cors: a 401"
header_has "Access-Control-Allow-Origin: $ORIGIN" "--cors: an error carries Allow-Origin"
call GET /metrics
status_is 401 "--metrics-key: /metrics without a key"
call GET /metrics "${AUTH[@]}"
status_is 401 "--metrics-key: /metrics with the API key"
call GET /metrics -H "Authorization: Bearer $MKEY"
status_is 200 "--metrics-key: /metrics with the metrics key"
call GET /v1/models -H "Authorization: Bearer $MKEY"
status_is 401 "--metrics-key opens nothing else"
stop_server

# Default threads per slot: slots × threads within the cores (the CPUs this process may use
# bound the physical cores from above), at least 1 each.
start_server env -u PLUMB_THREADS "$PLUMB" serve -m "$MODEL" --port 0 --slots 2
T=$(threads_each)
CPUS=$(nproc)
if [ -n "$T" ] && [ "$T" -ge 1 ] && { [ $((2 * T)) -le "$CPUS" ] || [ "$T" = 1 ]; }; then
  pass "default threads per slot: 2 slots × $T ≤ $CPUS CPUs"
else fail "default threads per slot: 2 slots × T ≤ CPUs" "T '$T', CPUs $CPUS: $(head -2 "$WORK/stderr2")"; fi
stop_server

# Default: one slot, and a lone request gets every thread of the pool (PLUMB_THREADS here);
# the start line says so, and /health counts one slot.
start_server env PLUMB_THREADS=2 "$PLUMB" serve -m "$MODEL" --port 0
T=$(threads_each)
if [ "$T" = 2 ] && grep -q ' 1 slot of [0-9]* tokens: a request gets 2 threads (all of PLUMB_THREADS; --slots N serves N at once)' "$WORK/stderr2"; then
  pass "default: 1 slot, a request gets all PLUMB_THREADS=2 threads, and the start line says so"
else fail "default: 1 slot, a request gets all 2 threads" "'$T' (base '$BASE'): $(head -2 "$WORK/stderr2")"; fi
if curl -s "$BASE/health" | jq -e '.slots_total == 1' >/dev/null; then pass "default: /health slots_total 1"
else fail "default: /health slots_total 1" "$(curl -s "$BASE/health")"; fi
stop_server
# -t N is what a request gets, whatever the slots.
start_server env PLUMB_THREADS=4 "$PLUMB" serve -m "$MODEL" --port 0 --slots 3 -t 1
if grep -q ' 3 slots of [0-9]* tokens: a request gets 1 thread (-t)' "$WORK/stderr2"; then
  pass "--slots 3 -t 1: the start line says a request gets 1 thread (-t)"
else fail "--slots 3 -t 1: a request gets 1 thread (-t)" "$(head -2 "$WORK/stderr2")"; fi
stop_server

# ---- SIGTERM drains (issue 51): the stream in flight ends whole, /health says draining, a
# new request is a 503 with Retry-After, then exit 0; --drain-timeout bounds it --------------
# drain_stream N: a stream of N tokens (ignore_eos: exactly N) into $WORK/drain, in the
# background (DRAIN_PID); returns once its first bytes are in.
drain_stream() {
  # emptied here, not only by curl's redirection: that runs in the background job, and the wait
  # below could see the last stream's bytes before it does (and signal before this request runs)
  : >"$WORK/drain"
  curl -sN "$BASE/v1/chat/completions" -H 'Content-Type: application/json' --data-binary \
    "{\"messages\":[{\"role\":\"user\",\"content\":\"go\"}],\"max_tokens\":$1,\"ignore_eos\":true,\"stream\":true}" \
    >"$WORK/drain" &
  DRAIN_PID=$!
  for _ in $(seq 1 1000); do [ -s "$WORK/drain" ] && break; sleep 0.02; done
}
start_server "$PLUMB" serve -m "$MODEL" --port 0 --slots 1 -t 1 --sliding-window 64
# The stream in flight must outlast the checks below on any host: a fast idle one decodes 3000
# tokens of this model in well under a second. So its length is this host's rate times 4 s
# (from a 400-token run just before), at least 3000.
completion '{"prompt":"go","max_tokens":400,"ignore_eos":true}'
DRAIN_N=$(jq -r '[3000, (.usage.completion_tokens / (.plumb.total_ms / 1000) * 4 | floor)] | max' "$WORK/body")
case "$DRAIN_N" in '' | *[!0-9]*) fail "a 400-token run gives this host's decode rate" "$(head -c 300 "$WORK/body")"; DRAIN_N=3000 ;; esac
drain_stream "$DRAIN_N"
kill -TERM $SERVER_PID
for _ in $(seq 1 100); do
  STATUS=$(curl -s -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' "$BASE/health")
  [ "$STATUS" = 503 ] && break; sleep 0.02
done
status_is 503 "SIGTERM with a stream in flight: /health"
expect "draining: /health says why" '.status == "draining" and (.reason | length > 0) and .in_flight == 1'
call POST /v1/chat/completions -H 'Content-Type: application/json' --data-binary '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}'
error_is 503 overloaded_error draining null "draining: a new request"
header_has 'Retry-After: ' "draining: the 503 carries Retry-After"
wait $DRAIN_PID
if tail -c 200 "$WORK/drain" | grep -q 'data: \[DONE\]' && grep -q '"finish_reason":"length"' "$WORK/drain"; then
  pass "draining: the stream in flight ends whole (finish_reason length, [DONE])"
else fail "draining: the stream in flight ends whole" "$(tail -c 300 "$WORK/drain")"; fi
wait $SERVER_PID
RC=$?
SERVER_PID=""
if [ $RC = 0 ] && grep -q '^plumb serve: drained in ' "$WORK/stderr2"; then pass "drained, then exit 0"
else fail "drained, then exit 0" "exit $RC: $(tail -3 "$WORK/stderr2")"; fi
# A generation longer than --drain-timeout 1: cancelled after ~1 s, still exit 0.
start_server "$PLUMB" serve -m "$MODEL" --port 0 --slots 1 -t 1 --sliding-window 64 --drain-timeout 1
drain_stream 100000000
T0=$(date +%s%N)
kill -TERM $SERVER_PID
wait $SERVER_PID
RC=$?
SERVER_PID=""
MS=$((($(date +%s%N) - T0) / 1000000))
wait $DRAIN_PID
if [ $RC = 0 ] && [ $MS -ge 900 ] && [ $MS -lt 6000 ] &&
   grep -q 'drain: 1 request still in flight after 1 s: cancelling' "$WORK/stderr2"; then
  pass "--drain-timeout 1: a longer generation is cancelled after ~1 s ($MS ms), exit 0"
else fail "--drain-timeout 1: cancelled after ~1 s, exit 0" "exit $RC, $MS ms: $(tail -3 "$WORK/stderr2")"; fi

# ---- --chat-template-file: the template from a file sees the request's tools -------------
printf '%s' "{% if tools %}{{ raise_exception('tools: ' ~ tools[0].function.name) }}{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}<|im_start|>assistant
" >"$WORK/t.jinja"
start_server "$PLUMB" serve -m "$MODEL" --port 0 --slots 1 -t 1 --api-key "$KEY" \
  --chat-template-file "$WORK/t.jinja"
if grep -q "chat template file $WORK/t.jinja" "$WORK/stderr2"; then pass "the start line names the template file"
else fail "the start line names the template file" "$(head -3 "$WORK/stderr2")"; fi
chat "{$U,\"max_tokens\":2}"
status_is 200 "--chat-template-file: a chat request"
chat "{$U,\"max_tokens\":2,\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"lookup\"}}]}"
status_is 400 "--chat-template-file: what the template raises"
expect "the request's tools reached the file's template, which raised" \
  '.error.param == "messages" and (.error.message | contains("raised: tools: lookup"))'
completion '{"prompt":"Hello","max_tokens":2}'
status_is 200 "--chat-template-file: completions"
stop_server
printf 'ok {%% for %%}' >"$WORK/bad.jinja"
"$PLUMB" serve -m "$MODEL" --port 0 --chat-template-file "$WORK/bad.jinja" >/dev/null 2>"$WORK/err"
RC=$?
if [ $RC = 1 ] && grep -q "does not compile: template line 1, column" "$WORK/err"; then
  pass "a template file that does not compile → exit 1 naming its position"
else fail "a template file that does not compile → exit 1" "exit $RC: $(head -3 "$WORK/err")"; fi

# ---- the command line: bad values → 2, a model that cannot load → 1 ----------------------
"$PLUMB" serve -m "$MODEL" --port 0 --no-such-option >/dev/null 2>&1
RC=$?
if [ $RC = 2 ]; then pass "a bad option → exit 2"; else fail "a bad option → exit 2" "exit $RC"; fi
for bad in "--cors=" "--cors=a b" "--metrics-key=" "--api-key=" "--host=" "--host=300.1.2.3." \
    "--port=70000" "--port=x" "--slots=0" "--queue=-1" "--threads=0" "--timeout=0" "--temp=0.5" \
    "--drain-timeout=-1" "--drain-timeout=x" \
    "--chat-template=bogus"; do
  "$PLUMB" serve -m "$MODEL" --port 0 "$bad" >/dev/null 2>"$WORK/err"
  RC=$?
  if [ $RC = 2 ] && grep -q '^plumb serve: error: ' "$WORK/err"; then pass "serve $bad → exit 2, 'plumb serve: error:'"
  else fail "serve $bad → exit 2" "exit $RC: $(head -3 "$WORK/err")"; fi
done
"$PLUMB" serve -m "$WORK/missing.gguf" --port 0 >/dev/null 2>&1
RC=$?
if [ $RC = 1 ]; then pass "a model that cannot load → exit 1"; else fail "a model that cannot load → exit 1" "exit $RC"; fi

if [ $FAILS -ne 0 ]; then
  echo "--- server stderr (tail) ---"; tail -40 "$WORK/stderr"
  echo "serve_curl: $FAILS check(s) failed:$FAILED"; exit 1
fi
echo "serve_curl: all checks passed"
