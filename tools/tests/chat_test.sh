#!/bin/sh
# chat_test.sh — `plumb chat` as a user sees it, one behaviour per CASE (ctest runs each): the
# per-turn cache path on stderr, the replies on stdout, the commands, the files, the exit codes.
# Not a test of the prefix cache's invariants (conformance and fuzz pin those).
#
# usage: chat_test.sh CASE PLUMB JSON_CHECK
set -u
LC_ALL=C
export LC_ALL

case_name=$1 plumb=$2 json_check=$3

tag=chat
. "$(dirname "$0")/testlib.sh"

expect_not_in() { # expect_not_in FILE FIXED-STRING
    if grep -qF -- "$2" "$1"; then
        fail "$(basename "$1") should not contain: $2"
        sed 's/^/  | /' "$1" | head -n 60 >&2
    fi
}

json_ok() { # json_ok FILE
    if ! "$json_check" <"$1" 2>"$tmp/jerr"; then
        fail "$(basename "$1") is not valid JSON: $(cat "$tmp/jerr")"
        sed 's/^/  | /' "$1" | head -n 60 >&2
    fi
}

mkmodel() { # mkmodel PATH [MKMODEL OPTIONS...]
    out=$1
    shift
    "$plumb" mkmodel --preset tiny --type Q8_0 "$@" "$out" >/dev/null 2>"$tmp/mkerr" ||
        { fail "mkmodel $* failed"; cat "$tmp/mkerr" >&2; exit 1; }
}

# chat INPUT ARGS...: plumb chat with INPUT (printf %b) on stdin; out/err/rc as run sets them.
chat() {
    input=$1
    shift
    printf '%b' "$input" | "$plumb" chat "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

# turn N: "PATH REUSED PREFILLED GENERATED" of turn N's stderr line (empty when absent).
turn() {
    sed -n "s/^turn $1: path \([a-z]*\), reused \([0-9]*\), prefilled \([0-9]*\), generated \([0-9]*\),.*/\1 \2 \3 \4/p" \
        "$tmp/err" | tail -n 1
}

expect_path() { # expect_path N PATH
    got=$(turn "$1")
    [ "${got%% *}" = "$2" ] || {
        fail "turn $1: path '${got%% *}', want $2 (line: '$got')"
        sed 's/^/  stderr: /' "$tmp/err" | head -n 40 >&2
    }
}

n_turns() { grep -c '^turn [0-9]*: path ' "$tmp/err"; }

three="Hello there, how are you today?\nTell me a story about a cat and a dog.\nWhat happened to them next?\n"
opts="-n 12 --seed 7 -t 1"

case $case_name in
chat_later_turns_take_the_fast_path)
    mkmodel "$tmp/m.gguf"
    chat "$three" -m "$tmp/m.gguf" $opts --system "You are terse."
    expect_rc 0 "chat, 3 lines piped"
    [ "$(n_turns)" -eq 3 ] || fail "$(n_turns) turns, want 3"
    expect_path 1 slow
    expect_path 2 fast
    expect_path 3 fast
    # Turn 3 prefills only its own message: much less than the conversation it sees.
    set -- $(turn 3)
    [ $# -eq 4 ] || fail "no stats line for turn 3"
    total=$(($2 + $3))
    [ $(($3 * 3)) -lt "$total" ] || fail "turn 3 prefilled $3 of $total tokens, want < 1/3"
    [ "$2" -gt 0 ] || fail "turn 3 reused nothing"
    # One reply per turn on stdout; the summary table after the last turn on stderr.
    [ "$(wc -l <"$tmp/out")" -ge 3 ] || fail "stdout has fewer than 3 lines"
    expect_in "$tmp/err" "| turn | path"
    expect_in "$tmp/err" "session: 3 turns (fast 2, partial 0, slow 1)"
    expect_not_in "$tmp/out" "> "
    ;;

chat_spm_vocab_reuses_the_cache)
    mkmodel "$tmp/spm.gguf" --vocab spm
    # The model's own template (llama2) strips replies when it writes them back, so a reply
    # that does not re-render byte for byte takes the partial path; never the slow one.
    chat "$three" -m "$tmp/spm.gguf" $opts --system "You are terse."
    expect_rc 0 "chat, spm vocab, llama2 template"
    expect_in "$tmp/err" "template model's own"
    expect_path 1 slow
    for t in 2 3; do
        set -- $(turn $t)
        [ "${1:-slow}" != slow ] || fail "turn $t took the slow path"
        [ "${2:-0}" -gt 0 ] || fail "turn $t reused nothing"
    done
    set -- $(turn 3)
    [ $(($3 * 2)) -lt $(($2 + $3)) ] || fail "turn 3 prefilled $3 of $(($2 + $3)), want < 1/2"
    # ChatML appends the reply as delivered: SentencePiece text takes the fast path.
    chat "$three" -m "$tmp/spm.gguf" $opts --template chatml
    expect_rc 0 "chat, spm vocab, chatml template"
    expect_path 1 slow
    expect_path 2 fast
    expect_path 3 fast
    ;;

chat_save_writes_valid_json)
    mkmodel "$tmp/m.gguf"
    # Control bytes, quotes, a backslash, a tab, invalid UTF-8 and a multi-byte character.
    chat "say \"hi\" \\\\ back\tslash \001\002\033 bad \377\376 ok \303\251\n/save $tmp/c.json\n/save $tmp/no/such/dir.json\nsecond line\n/save $tmp/c2.json\n" \
        -m "$tmp/m.gguf" $opts --system "sys \"quoted\""
    expect_rc 0 "chat with /save"
    expect_in "$tmp/err" "saved 3 messages to $tmp/c.json"
    expect_in "$tmp/err" "cannot save to '$tmp/no/such/dir.json'"
    expect_in "$tmp/err" "saved 5 messages to $tmp/c2.json"
    json_ok "$tmp/c.json"
    json_ok "$tmp/c2.json"
    expect_in "$tmp/c.json" '{"template": "model'"'"'s own (333 bytes of Jinja)", "messages": ['
    expect_in "$tmp/c.json" '{"role": "system", "content": "sys \"quoted\""}'
    expect_in "$tmp/c.json" '"content": "say \"hi\" \\ back\tslash \u0001\u0002\u001b bad \ufffd\ufffd ok '
    expect_in "$tmp/c2.json" '{"role": "user", "content": "second line"}'
    [ "$(grep -c '"role": "assistant"' "$tmp/c2.json")" -eq 2 ] || fail "c2.json: want 2 replies"
    ;;

chat_reset_makes_the_next_turn_slow)
    mkmodel "$tmp/m.gguf"
    chat "first message\nsecond message\n/reset\nthird message\nfourth message\n/save $tmp/c.json\n" \
        -m "$tmp/m.gguf" $opts --system "You are terse."
    expect_rc 0 "chat with /reset"
    expect_in "$tmp/err" "conversation reset (the system message is kept)"
    expect_path 2 fast
    expect_path 3 slow
    expect_path 4 fast
    set -- $(turn 3)
    [ "$2" -eq 0 ] || fail "turn 3 after /reset reused $2 tokens"
    json_ok "$tmp/c.json"
    expect_in "$tmp/c.json" '"role": "system"'
    expect_not_in "$tmp/c.json" '"content": "first message"'
    expect_in "$tmp/c.json" '"content": "third message"'
    ;;

chat_context_full_resets_and_goes_on)
    mkmodel "$tmp/m.gguf"
    long=$(printf 'word %.0s' $(seq 1 80))
    chat "Tell me a story.\nAnd what happened to everyone after that?\n$long\nok\n" \
        -m "$tmp/m.gguf" -c 64 -n 6 --seed 7 -t 1 --system "Hi."
    expect_rc 1 "chat -c 64 with more than fits (a message dropped)"
    grep -qE '^plumb chat: the conversation is [0-9]+ tokens; the context \(-c\) is 64$' "$tmp/err" ||
        fail "no 'the conversation is N tokens; the context (-c) is 64' line"
    expect_in "$tmp/err" "plumb chat: resetting the conversation (the system message is kept) and sending the message again"
    expect_in "$tmp/err" "does not fit the context (-c 64) even in a new conversation; it was dropped, the conversation is kept"
    expect_path 1 slow
    expect_path 2 slow
    # The message after the dropped one is answered.
    [ "$(n_turns)" -eq 3 ] || fail "$(n_turns) turns, want 3 (the long line dropped)"
    # Turn 2 and "ok" each needed a reset; the line that cannot fit did not cost one.
    expect_in "$tmp/err" "2 context resets"
    # after the summary: the exit status 1 says why
    tail -n 1 "$tmp/err" | grep -qF "plumb chat: error: 1 message dropped: too long for the context" ||
        fail "the last line does not say a message was dropped: $(tail -n 1 "$tmp/err")"
    # nothing dropped: 0
    chat "Tell me a story.\nAnd what happened to everyone after that?\nok\n" \
        -m "$tmp/m.gguf" -c 64 -n 6 --seed 7 -t 1 --system "Hi."
    expect_rc 0 "chat -c 64 with resets but nothing dropped"
    # A first message that cannot fit: dropped, the next one answered.
    chat "$long\nok\n" -m "$tmp/m.gguf" -c 64 -n 6 --seed 7 -t 1
    expect_rc 1 "chat -c 64, first message too long"
    expect_in "$tmp/err" "even in a new conversation; it was dropped"
    [ "$(n_turns)" -eq 1 ] || fail "$(n_turns) turns, want 1"
    ;;

chat_tty_asks_before_reset)
    command -v script >/dev/null 2>&1 || { echo "SKIP: no script(1)" >&2; exit 77; }
    mkmodel "$tmp/m.gguf"
    printf 'Tell me a story.\nAnd what happened to everyone after that?\ny\n/quit\n' >"$tmp/in"
    script -qec "'$plumb' chat -m '$tmp/m.gguf' -c 64 -n 6 --seed 7 -t 1 --system Hi. 2>&1" \
        /dev/null <"$tmp/in" >"$tmp/err" 2>&1
    rc=$?
    expect_rc 0 "chat on a terminal"
    expect_in "$tmp/err" "> "
    expect_in "$tmp/err" "reset the conversation and continue? [y/N]"
    expect_not_in "$tmp/err" "resetting the conversation"
    tr -d '\r' <"$tmp/err" >"$tmp/err2" && mv "$tmp/err2" "$tmp/err"
    expect_path 2 slow
    ;;

chat_no_cache_makes_every_turn_slow)
    mkmodel "$tmp/m.gguf"
    chat "$three" -m "$tmp/m.gguf" $opts --no-cache
    expect_rc 0 "chat --no-cache"
    for t in 1 2 3; do
        expect_path $t slow
        set -- $(turn $t)
        [ "${2:-1}" -eq 0 ] || fail "turn $t reused ${2:-?} tokens with --no-cache"
    done
    ;;

chat_stats_json_has_every_turn)
    mkmodel "$tmp/m.gguf"
    chat "${three}/stats\n" -m "$tmp/m.gguf" $opts --stats-json "$tmp/s.json"
    expect_rc 0 "chat --stats-json"
    json_ok "$tmp/s.json"
    [ "$(grep -c '"turn": ' "$tmp/s.json")" -eq 3 ] || fail "s.json: want 3 turns"
    for k in '"turn": 1, "path": "slow", "reused": 0, "prefilled": ' '"turn": 3, "path": "fast"' \
        '"generated": 12' '"ttft_ms": ' '"prefill_ms": ' '"decode_tps": ' '"stop": "'; do
        expect_in "$tmp/s.json" "$k"
    done
    # /stats prints the totals so far.
    expect_in "$tmp/err" "session: 3 turns"
    # No turn: an empty array.
    chat "" -m "$tmp/m.gguf" $opts --stats-json "$tmp/e.json"
    expect_rc 0 "chat with no input"
    json_ok "$tmp/e.json"
    run chat -m "$tmp/m.gguf" --stats-json "$tmp/no/such/dir.json" </dev/null
    expect_rc 1 "--stats-json into a missing directory"
    expect_in "$tmp/err" "plumb chat: error: cannot write '$tmp/no/such/dir.json'"
    ;;

chat_commands_and_slash_messages)
    mkmodel "$tmp/m.gguf"
    chat "/bogus\n//slash message\n\nplain\n/save $tmp/c.json\n/quit\nnever sent\n" \
        -m "$tmp/m.gguf" $opts
    expect_rc 0 "chat with commands"
    expect_in "$tmp/err" "plumb chat: unknown command '/bogus'"
    [ "$(n_turns)" -eq 2 ] || fail "$(n_turns) turns, want 2 (empty lines skipped, /quit ends)"
    expect_in "$tmp/c.json" '{"role": "user", "content": "/slash message"}'
    expect_not_in "$tmp/c.json" "never sent"
    ;;

chat_bad_usage_exits_2)
    mkmodel "$tmp/m.gguf"
    m="$tmp/m.gguf"
    for args in "" "-m $m --bogus" "-m $m extra" "-m $m --temp abc" "-m $m -n -2" \
        "-m $m --template bogus" "-m $m -c 64 --sliding-window 32" "-m $m --sinks 2" \
        "-m $m --sliding-window 8 --sinks 8" "-m $m --no-cache=1" "-m $m --kv-type q8" \
        "-m $m -t 0" "-m"; do
        run chat $args </dev/null
        expect_rc 2 "plumb chat $args"
        expect_in "$tmp/err" "plumb chat: error: "
        expect_in "$tmp/err" "see \`plumb chat --help\`"
    done
    run chat -m "$tmp/m.gguf" --template bogus </dev/null
    expect_in "$tmp/err" "known: chatml"
    run chat -m "$tmp/missing.gguf" </dev/null
    expect_rc 1 "plumb chat -m missing.gguf"
    expect_in "$tmp/err" "plumb chat: error: "
    ;;

chat_template_file_renders_the_conversation)
    mkmodel "$tmp/m.gguf"
    # ChatML with a marker in user turns, from a file: the turns render through it, and later
    # turns append to what the cache holds.
    printf '%s' "{% for m in messages %}<|im_start|>{{ m.role }}{{ '\\n' }}{% if m.role == 'user' %}FILE {% endif %}{{ m.content }}<|im_end|>{{ '\\n' }}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{% endif %}" >"$tmp/t.jinja"
    chat "$three" -m "$tmp/m.gguf" $opts --chat-template-file "$tmp/t.jinja" \
        --stats-json "$tmp/s.json"
    expect_rc 0 "chat --chat-template-file"
    expect_in "$tmp/err" "template file $tmp/t.jinja"
    expect_path 1 slow
    expect_path 2 fast
    expect_path 3 fast
    # --chat-template names a built-in; the older --template is the same option
    chat "$three" -m "$tmp/m.gguf" $opts --chat-template chatml
    expect_rc 0 "chat --chat-template chatml"
    expect_in "$tmp/err" "template built-in chatml"
    # A template that does not compile: its line and column, before any turn
    printf 'ok\n{%% for %%}\n' >"$tmp/bad.jinja"
    chat "$three" -m "$tmp/m.gguf" $opts --chat-template-file "$tmp/bad.jinja"
    expect_rc 1 "chat with a template that does not compile"
    expect_in "$tmp/err" "$tmp/bad.jinja: the chat template does not compile: template line 2, column 8"
    # A template that raises: the turn fails with the template's message, the chat goes on
    printf "{{ raise_exception('no way') }}" >"$tmp/raise.jinja"
    chat "hi\n" -m "$tmp/m.gguf" $opts --chat-template-file "$tmp/raise.jinja"
    expect_in "$tmp/err" "raised: no way"
    chat "$three" -m "$tmp/m.gguf" $opts --chat-template-file "$tmp/missing.jinja"
    expect_rc 1 "chat with a missing template file"
    expect_in "$tmp/err" "cannot read '$tmp/missing.jinja'"
    ;;

*)
    echo "chat_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

finish
