#!/bin/sh
# gen_test.sh — the command line of `plumb run` and `plumb chat` as a llama.cpp user expects
# it: exit codes and messages of bad values, the seed, -n -1, --stop, the stop reason, the
# context messages, control tokens only with --special. One behaviour per CASE.
#
# usage: gen_test.sh CASE PLUMB SOURCE_DIR
set -u
LC_ALL=C
export LC_ALL

case_name=$1 plumb=$2 src=$3

tag=gen
. "$(dirname "$0")/testlib.sh"

expect_not_in() { # expect_not_in FILE FIXED-STRING
    if grep -qF -- "$2" "$1"; then
        fail "$(basename "$1") should not contain: $2"
        sed 's/^/  | /' "$1" | head -n 40 >&2
    fi
}

mkmodel() { # mkmodel PATH [MKMODEL OPTIONS...]
    "$plumb" mkmodel --preset tiny --type Q8_0 "$@" >/dev/null 2>"$tmp/mkerr" ||
        { fail "mkmodel $* failed"; cat "$tmp/mkerr" >&2; exit 1; }
}

m=$tmp/m.gguf
demo=$src/models/plumb-en-8m-Q8_0.gguf

case $case_name in
gen_bad_values_exit_2_with_one_line)
    mkmodel "$m"
    for cmd in run chat; do
        for bad in "--temp -1" "--temp abc" "--top-p 2" "--min-p -0.5" "--repeat-penalty 0" \
            "--presence-penalty nan" "--frequency-penalty x" "--repeat-last-n -2" "-s -2" \
            "-n -2" "--top-k -1" "--stop="; do
            # shellcheck disable=SC2086 # word splitting is the point
            run $cmd -m "$m" -p hi $bad </dev/null
            [ "$cmd" = chat ] && run $cmd -m "$m" $bad </dev/null
            expect_rc 2 "plumb $cmd $bad"
            expect_in "$tmp/err" "plumb $cmd: error: ${bad%% *}"
            expect_in "$tmp/err" "see \`plumb $cmd --help\`"
            [ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "plumb $cmd $bad: $(wc -l <"$tmp/err") lines, want 2"
            expect_not_in "$tmp/err" "[-inf, inf]"
        done
    done
    run run -m "$m" -p hi --temp abc
    expect_in "$tmp/err" "--temp: 'abc' is not a number"
    run run -m "$m" -p hi --top-p 2
    expect_in "$tmp/err" "--top-p: 2 is out of range: it must be in [0, 1]"
    # A failure at run time is 1, with the same prefix and words, not an enum name.
    run run -m "$tmp/missing.gguf" -p hi
    expect_rc 1 "plumb run -m missing.gguf"
    expect_in "$tmp/err" "plumb run: error: "
    expect_in "$tmp/err" "missing.gguf"
    if grep -q 'PL_ERR' "$tmp/err"; then fail "the message names an enum: $(cat "$tmp/err")"; fi
    ;;

gen_seed_is_random_printed_and_repeats)
    mkmodel "$m"
    run run -m "$m" -p "Hello world" -n 12
    expect_rc 0 "plumb run (default seed)"
    seed=$(sed -n 's/^seed: \([0-9]*\) .*/\1/p' "$tmp/err")
    [ -n "$seed" ] || { fail "no 'seed: N' line"; sed 's/^/  | /' "$tmp/err" >&2; }
    cp "$tmp/out" "$tmp/first"
    run run -m "$m" -p "Hello world" -n 12 -s -1
    seed2=$(sed -n 's/^seed: \([0-9]*\) .*/\1/p' "$tmp/err")
    [ "$seed2" != "$seed" ] || fail "two random seeds are both $seed"
    run run -m "$m" -p "Hello world" -n 12 -s "$seed"
    expect_in "$tmp/err" "seed: $seed "
    cmp -s "$tmp/out" "$tmp/first" || fail "-s $seed does not repeat the run that printed it"
    printf 'hi\n' | "$plumb" chat -m "$m" -n 4 >"$tmp/out" 2>"$tmp/err"
    grep -q '^seed: [0-9]* ' "$tmp/err" || fail "plumb chat prints no seed"
    ;;

gen_run_says_why_it_stopped)
    mkmodel "$m" --ctx 64
    run run -m "$m" -p "Hello world" -n 5 -s 1 --ignore-eos
    expect_rc 0 "run -n 5"
    expect_in "$tmp/err" "stopped: 5 tokens generated (-n 5)"
    # -n -1: until the context is full (no end of generation with --ignore-eos).
    run run -m "$m" -p "Hello world" -n -1 -c 32 -s 1 --ignore-eos
    expect_rc 0 "run -n -1 -c 32"
    expect_in "$tmp/err" "stopped: the context is full (-c 32)"
    n_prompt=$(sed -n 's/^prefill: \([0-9]*\) token.*/\1/p' "$tmp/err")
    n_gen=$(sed -n 's/^stopped: the context is full (-c 32) after \([0-9]*\) token.*/\1/p' "$tmp/err")
    [ -n "$n_prompt" ] && [ -n "$n_gen" ] && [ $((n_prompt + n_gen)) -eq 33 ] ||
        fail "prompt $n_prompt + generated $n_gen tokens, want 33 (32 held, one drawn past them)"
    # A stop string: the text before it is printed, it is not, and stderr says so.
    run run -m "$m" -p "Hello world" -n 64 -s 1 --ignore-eos
    gen=$(sed -n '1s/^Hello world//p' "$tmp/out")
    stop=$(printf '%s' "$gen" | cut -c 5-6)
    [ ${#stop} -eq 2 ] || { echo "generation too short to test --stop" >&2; exit 77; }
    run run -m "$m" -p "Hello world" -n 64 -s 1 --ignore-eos --stop "$stop"
    expect_rc 0 "run --stop"
    expect_in "$tmp/err" "stopped: a stop string (--stop)"
    want=${gen%%"$stop"*}
    got=$(sed -n '1s/^Hello world//p' "$tmp/out")
    [ "$got" = "$want" ] || fail "--stop '$stop': printed '$got', want '$want'"
    run run -m "$m" -p "Hello world" -n 64 -s 1 --ignore-eos -r "$stop"
    got=$(sed -n '1s/^Hello world//p' "$tmp/out")
    [ "$got" = "$want" ] || fail "-r '$stop': printed '$got', want '$want'"
    ;;

gen_context_messages_say_what_to_change)
    mkmodel "$m" --ctx 64
    long=$(printf 'word %.0s' $(seq 1 100))
    run run -m "$m" -p "$long" -c 32
    expect_rc 1 "run with a prompt over -c"
    n=$("$plumb" tokenize -m "$m" --ids-only "$long" 2>/dev/null | tr "," "\n" | grep -c "[0-9]")
    expect_in "$tmp/err" "plumb run: error: the prompt is $n tokens; the context (-c) is 32"
    run logits -m "$m" -p "$long" -c 32 -o "$tmp/x.logits"
    expect_rc 1 "logits with a text over -c"
    expect_in "$tmp/err" "plumb logits: error: the text is $n tokens; the context (-c) is 32"
    run logits -m "$m" -p hi --all --last -o "$tmp/x.logits"
    expect_rc 2 "logits --all --last"
    expect_in "$tmp/err" "plumb logits: error: give --all or --last, not both"
    # -c beyond the training context: a warning naming both numbers.
    run run -m "$m" -p hi -n 1 -c 100
    expect_rc 0 "run -c 100 (trained on 64)"
    expect_in "$tmp/err" "plumb run: warning: -c 100 is beyond the model's training context of 64 tokens"
    run run -m "$m" -p hi -n 1 -c 64
    expect_not_in "$tmp/err" "warning"
    printf 'hi\n' | "$plumb" chat -m "$m" -n 1 -c 100 >"$tmp/out" 2>"$tmp/err"
    expect_in "$tmp/err" "plumb chat: warning: -c 100 is beyond the model's training context of 64 tokens"
    ;;

gen_penalties_change_the_draw)
    # The demo model repeats itself when greedy, so the penalties have something to change.
    [ -f "$demo" ] || { echo "no demo model at $demo" >&2; exit 77; }
    g="-m $demo -p Once -n 40 --temp 0 --ignore-eos"
    # shellcheck disable=SC2086 # word splitting is the point
    run run $g
    cp "$tmp/out" "$tmp/plain"
    for opt in "--presence-penalty 5" "--frequency-penalty 5" "--repeat-penalty 2"; do
        # shellcheck disable=SC2086
        run run $g $opt
        expect_rc 0 "run $opt"
        cmp -s "$tmp/out" "$tmp/plain" && fail "$opt did not change the greedy text"
        # shellcheck disable=SC2086
        run run $g $opt --repeat-last-n 0
        cmp -s "$tmp/out" "$tmp/plain" || fail "$opt with --repeat-last-n 0 changed the greedy text"
    done
    ;;

gen_control_tokens_only_with_special)
    # The tiny preset's <|im_start|> is a control token that does not end generation: a nearly
    # uniform draw with --ignore-eos reaches it; without --special its text is not printed.
    mkmodel "$m"
    u="--temp 50 --top-k 0 --top-p 1 --min-p 0 --ignore-eos"
    for s in 1 2 3 4 5 6 7 8; do
        # shellcheck disable=SC2086 # word splitting is the point
        printf 'Hello! Who are you?\nTell me a story.\n' |
            "$plumb" chat -m "$m" -n 64 $u -s $s --special >"$tmp/special" 2>"$tmp/err"
        grep -q '<|im_start|>' "$tmp/special" && break
    done
    grep -q '<|im_start|>' "$tmp/special" || fail "chat: no control token drawn in 8 seeds"
    # shellcheck disable=SC2086
    printf 'Hello! Who are you?\nTell me a story.\n' |
        "$plumb" chat -m "$m" -n 64 $u -s $s >"$tmp/out" 2>"$tmp/err"
    sed 's/<|im_start|>//g' "$tmp/special" >"$tmp/want"
    cmp -s "$tmp/out" "$tmp/want" || fail "chat without --special is not the --special text without its control tokens"
    expect_not_in "$tmp/out" "<|im_start|>"
    for s in 1 2 3 4 5 6 7 8; do
        # shellcheck disable=SC2086
        run run -m "$m" -p "Once upon a time" -n 64 -s $s $u --special
        grep -q '<|im_start|>' "$tmp/out" && break
    done
    grep -q '<|im_start|>' "$tmp/out" || fail "run: no control token drawn in 8 seeds"
    sed 's/<|im_start|>//g' "$tmp/out" >"$tmp/want"
    # shellcheck disable=SC2086
    run run -m "$m" -p "Once upon a time" -n 64 -s $s $u
    cmp -s "$tmp/out" "$tmp/want" || fail "run without --special is not the --special text without its control tokens"
    ;;

gen_ignore_eos_never_draws_an_end_token)
    # --ignore-eos makes every end-of-generation token impossible to draw (llama.cpp's meaning):
    # the demo model ends these runs early without it; with it each runs to -n and no end token
    # is drawn (--special would print it) in run or chat.
    [ -f "$demo" ] || { echo "no demo model at $demo" >&2; exit 77; }
    for s in 1 2 3 4; do
        run run -m "$demo" -p "Once upon a time" -n 64 -s $s --special
        expect_in "$tmp/err" "stopped: end of generation"
        run run -m "$demo" -p "Once upon a time" -n 64 -s $s --special --ignore-eos
        expect_rc 0 "plumb run --ignore-eos -s $s"
        expect_in "$tmp/err" "stopped: 64 tokens generated (-n 64)"
        sed '1s/^<|endoftext|>Once upon a time//' "$tmp/out" >"$tmp/gen" # the echoed BOS
        expect_not_in "$tmp/gen" "<|endoftext|>"
    done
    # the tiny preset: eos is <|im_end|>, and <|endoftext|> ends generation too
    mkmodel "$m"
    u="--temp 50 --top-k 0 --top-p 1 --min-p 0"
    for s in 1 2 3 4; do
        # shellcheck disable=SC2086
        run run -m "$m" -p "Once upon a time" -n 200 -s $s $u --special --ignore-eos
        expect_in "$tmp/err" "stopped: 200 tokens generated (-n 200)"
        expect_not_in "$tmp/out" "<|endoftext|>"
        # shellcheck disable=SC2086
        printf 'Hello!\nTell me a story.\n' |
            "$plumb" chat -m "$m" -n 100 -s $s $u --special --ignore-eos >"$tmp/out" 2>"$tmp/err"
        expect_not_in "$tmp/out" "<|endoftext|>"
        expect_not_in "$tmp/out" "<|im_end|>"
    done
    ;;

gen_run_ctrl_c_prints_the_stop_line_and_timings)
    # Ctrl-C ends an endless run (a sliding window, -n -1) with the report a finished run has,
    # then exit 130; -k: a run that ignores SIGINT is killed (and fails here).
    command -v timeout >/dev/null || { echo "no timeout(1)" >&2; exit 77; }
    mkmodel "$m"
    timeout --preserve-status -k 20 -s INT 1 "$plumb" run -m "$m" -p "Once upon a time" -n -1 \
        --ignore-eos --sliding-window 64 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    expect_rc 130 "plumb run interrupted by SIGINT"
    grep -qE "^prefill: [0-9]+ tokens? in" "$tmp/err" || fail "no prefill line"
    expect_in "$tmp/err" "decode: "
    grep -qE '^stopped: interrupted \(Ctrl-C\) after [0-9]+ tokens$' "$tmp/err" ||
        fail "no stop line: $(tail -n 3 "$tmp/err")"
    ;;

gen_run_reads_the_prompt_from_stdin_and_names_a_bad_file)
    mkmodel "$m"
    run run -m "$m" -p "Once upon a time" -n 4 -s 1 --temp 0
    cp "$tmp/out" "$tmp/want"
    printf 'Once upon a time' | "$plumb" run -m "$m" -f - -n 4 -s 1 --temp 0 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    expect_rc 0 "plumb run -f -"
    cmp -s "$tmp/out" "$tmp/want" || fail "run -f - differs from -p: $(head -c 200 "$tmp/out")"
    printf 'Once upon a time' | "$plumb" run -m "$m" --chat -f - -n 1 -s 1 --special >"$tmp/out" 2>"$tmp/err"
    rc=$?
    expect_rc 0 "plumb run --chat -f -"
    expect_in "$tmp/out" "user
Once upon a time<|im_end|>"
    # a folder, a missing file: the path and the reason, before the model loads
    for bad in "$tmp" "$tmp/missing.txt"; do
        run run -m "$tmp/no-model.gguf" -f "$bad" -n 1
        expect_rc 1 "plumb run -f $bad"
        expect_in "$tmp/err" "plumb run: error: cannot read '$bad': "
        expect_not_in "$tmp/err" "no-model.gguf"
    done
    expect_in "$tmp/err" "No such file or directory"
    run run -m "$tmp/no-model.gguf" -f "$tmp" -n 1
    expect_in "$tmp/err" "it is a directory"
    ;;

gen_vocab_only_file_is_named_as_a_tokenizer)
    # A vocabulary-only GGUF (convert --vocab-only) given where a model is needed says what it is.
    "$plumb" convert --vocab-only "$src/conformance/data/hf/qwen2-tok" "$tmp/v.gguf" >/dev/null 2>&1 ||
        { fail "convert --vocab-only failed"; finish; }
    run run -m "$tmp/v.gguf" -p hi -n 1
    expect_rc 1 "plumb run on a vocabulary-only file"
    expect_in "$tmp/err" "plumb run: error: $tmp/v.gguf: the file holds only a tokenizer (a vocabulary-only GGUF"
    expect_not_in "$tmp/err" "general.architecture' (string) not found"
    run chat -m "$tmp/v.gguf" </dev/null
    expect_rc 1 "plumb chat on a vocabulary-only file"
    expect_in "$tmp/err" "holds only a tokenizer"
    run tokenize -m "$tmp/v.gguf" "hello"
    expect_rc 0 "plumb tokenize on the same file"
    ;;

gen_run_chat_renders_the_prompt_with_the_template)
    mkmodel "$m"
    # The model's own template (Qwen2's, on the Jinja engine): system, user, assistant opening.
    run run -m "$m" --chat --system "Be brief." -p "Hello" -n 2 -s 1 --special
    expect_rc 0 "plumb run --chat"
    expect_in "$tmp/err" "chat template: model's own"
    printf '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n' >"$tmp/want"
    head -c "$(wc -c <"$tmp/want")" "$tmp/out" >"$tmp/head"
    cmp -s "$tmp/head" "$tmp/want" || fail "run --chat does not echo the rendered prompt: $(head -c 200 "$tmp/out")"
    # the prompt from a file, a template from a file
    printf 'Hi from a file' >"$tmp/p.txt"
    printf '%s' "[{{ messages[0].content }}]{% if add_generation_prompt %}<|im_start|>{% endif %}" >"$tmp/t.jinja"
    run run -m "$m" --chat -f "$tmp/p.txt" --chat-template-file "$tmp/t.jinja" -n 1 -s 1 --special
    expect_rc 0 "plumb run --chat --chat-template-file"
    expect_in "$tmp/out" "[Hi from a file]<|im_start|>"
    run run -m "$m" --chat -p hi --chat-template llama3 -n 1 -s 1 --special
    expect_rc 0 "plumb run --chat --chat-template llama3"
    expect_in "$tmp/out" "<|start_header_id|>user<|end_header_id|>"
    # what the template raises is a clear error
    printf "{{ raise_exception('no') }}" >"$tmp/r.jinja"
    run run -m "$m" --chat -p hi --chat-template-file "$tmp/r.jinja" -n 1
    expect_rc 1 "plumb run --chat with a raising template"
    expect_in "$tmp/err" "raised: no"
    # the chat options need --chat, and --chat needs text
    run run -m "$m" -p hi --system x
    expect_rc 2 "--system without --chat"
    run run -m "$m" --chat --tokens 1,2
    expect_rc 2 "--chat with --tokens"
    ;;

*)
    echo "gen_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

finish
