#!/bin/sh
# cli_test.sh — the `plumb` command's tests, one behaviour per CASE (ctest runs each).
# Not a unit test of the library: it checks what a user sees (output, stderr, exit codes).
#
# usage: cli_test.sh CASE PLUMB GGUF_FIXTURE JSON_CHECK VERSION
set -u
LC_ALL=C
export LC_ALL

case_name=$1 plumb=$2 fixture=$3 json_check=$4 version=$5

tag=cli
. "$(dirname "$0")/testlib.sh"

expect_re() { # expect_re FILE EXTENDED-REGEX
    if ! grep -qE -- "$2" "$1"; then
        fail "$(basename "$1") has no line matching: $2"
        sed 's/^/  | /' "$1" | head -n 60 >&2
    fi
}

expect_not_in() { # expect_not_in FILE FIXED-STRING
    if grep -qF -- "$2" "$1"; then
        fail "$(basename "$1") should not contain: $2"
        sed 's/^/  | /' "$1" | head -n 40 >&2
    fi
}

expect_empty() { # expect_empty FILE
    if [ -s "$1" ]; then
        fail "$(basename "$1") should be empty"
        sed 's/^/  | /' "$1" >&2
    fi
}

expect_no_enum() { # expect_no_enum FILE: messages speak words, not the library's enum names
    if grep -qE 'PL_(ERR|OK)' "$1"; then
        fail "$(basename "$1") names a status enum"
        sed 's/^/  | /' "$1" >&2
    fi
}

make_fixture() { # make_fixture KIND PATH
    "$fixture" "$1" "$2" || { echo "FAIL [$case_name]: gguf_fixture $1 failed" >&2; exit 1; }
}

json_ok() { # json_ok FILE
    if ! "$json_check" <"$1" 2>"$tmp/jerr"; then
        fail "invalid JSON: $(cat "$tmp/jerr")"
        sed 's/^/  | /' "$1" | head -n 60 >&2
    fi
}

case $case_name in
cli_help_lists_commands)
    run --help
    expect_rc 0 "plumb --help"
    expect_in "$tmp/out" "usage: plumb"
    for c in inspect kernels version help; do expect_re "$tmp/out" "^  $c +[a-z]"; done
    expect_empty "$tmp/err"
    cp "$tmp/out" "$tmp/help1"
    run help
    expect_rc 0 "plumb help"
    cmp -s "$tmp/out" "$tmp/help1" || fail "'plumb help' differs from 'plumb --help'"
    run help inspect
    expect_rc 0 "plumb help inspect"
    expect_in "$tmp/out" "usage: plumb inspect"
    ;;

cli_every_command_has_help)
    # Every command listed by --help answers --help and -h on stdout with its usage.
    run --help
    cmds=$(sed -n '/^commands:/,/^$/p' "$tmp/out" | awk 'NR > 1 && NF { print $1 }')
    [ -n "$cmds" ] || fail "no commands found in plumb --help"
    for c in $cmds; do
        for h in --help -h; do
            run "$c" "$h"
            expect_rc 0 "plumb $c $h"
            expect_in "$tmp/out" "usage: plumb $c"
            expect_empty "$tmp/err"
        done
    done
    ;;

cli_every_command_refuses_an_unknown_option)
    # Every command listed by --help reads its line through the shared options loop: an unknown
    # option is the two-line usage error, exit 2, nothing on stdout.
    run --help
    cmds=$(sed -n '/^commands:/,/^$/p' "$tmp/out" | awk 'NR > 1 && NF { print $1 }')
    [ -n "$cmds" ] || fail "no commands found in plumb --help"
    for c in $cmds; do
        run "$c" --no-such-option
        expect_rc 2 "plumb $c --no-such-option"
        expect_in "$tmp/err" "plumb $c: error: unknown option '--no-such-option'"
        [ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "plumb $c: a usage error is 2 lines"
        expect_empty "$tmp/out"
    done
    ;;

cli_version_matches_library)
    run --version
    expect_rc 0 "plumb --version"
    first=$(head -n 1 "$tmp/out")
    commit=$(printf '%s\n' "$first" | sed -n "s/^plumb $version (commit \([0-9a-f]*\|unknown\))\$/\1/p")
    [ -n "$commit" ] || fail "first line '$first', want 'plumb $version (commit HASH)'"
    # The commit is one of this repository's (when the sources are a git checkout).
    src=$(cd "$(dirname "$0")/../.." && pwd)
    if [ "$commit" != unknown ] && git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null ||
            fail "commit '$commit' is not a commit of $src"
    fi
    cp "$tmp/out" "$tmp/v1"
    run version
    expect_rc 0 "plumb version"
    cmp -s "$tmp/out" "$tmp/v1" || fail "'plumb version' differs from 'plumb --version'"
    run version extra
    expect_rc 2 "plumb version extra"
    ;;

cli_unknown_command_exits_2)
    run frobnicate
    expect_rc 2 "plumb frobnicate"
    expect_in "$tmp/err" "plumb: error: unknown command 'frobnicate'"
    expect_in "$tmp/err" "see \`plumb --help\`"
    [ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "a usage error is 2 lines, not the whole help"
    expect_empty "$tmp/out"
    run inspec
    expect_rc 2 "plumb inspec"
    expect_in "$tmp/err" "did you mean 'inspect'?"
    run
    expect_rc 2 "plumb (no command)"
    expect_in "$tmp/err" "see \`plumb --help\`"
    run --bogus
    expect_rc 2 "plumb --bogus"
    expect_in "$tmp/err" "unknown option '--bogus'"
    run help frobnicate
    expect_rc 2 "plumb help frobnicate"
    ;;

cli_unknown_last_option_is_unknown_not_missing_a_value)
    # A mistyped option at the end of the line is unknown in every command, as it is in the
    # middle; a known option there is the one that needs a value.
    run --help
    cmds=$(sed -n '/^commands:/,/^$/p' "$tmp/out" | awk 'NR > 1 && NF { print $1 }')
    for c in $cmds "logits compare"; do
        [ "$c" = help ] || [ "$c" = version ] && continue
        # shellcheck disable=SC2086 # "logits compare" is two words
        run $c --ignore-eoss
        expect_rc 2 "plumb $c ... --ignore-eoss"
        expect_in "$tmp/err" "unknown option '--ignore-eoss'"
    done
    for c in run chat serve bench perplexity logits; do
        run "$c" -m x.gguf --threads
        expect_rc 2 "plumb $c ... --threads"
        expect_in "$tmp/err" "plumb $c: error: option '--threads' needs a value"
        [ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "plumb $c --threads: $(wc -l <"$tmp/err") lines, want 2"
        run "$c" -m
        expect_rc 2 "plumb $c -m"
        expect_in "$tmp/err" "option '-m' needs a value"
        run "$c" -m x.gguf --kv-type=
        expect_rc 2 "plumb $c --kv-type="
        expect_in "$tmp/err" "--kv-type"
    done
    ;;

cli_help_lists_every_architecture)
    # The architecture lists of the help texts are the library's table, not a copy: every
    # name that mkmodel's refusal lists (pl_arch_list) is in run, chat and serve --help, and
    # convert --help names every class of the table's gemma3 and phi3 as well as llama's.
    run mkmodel --arch no-such-arch "$tmp/x.gguf"
    archs=$(sed -n "s/.*(known: \(.*\))$/\1/p" "$tmp/err" | tr -d ,)
    [ -n "$archs" ] || fail "no architecture list in: $(cat "$tmp/err")"
    case " $archs " in *" phi3 "*) ;; *) fail "phi3 is not in the list: $archs" ;; esac
    for c in run chat serve; do
        run "$c" --help
        for a in $archs; do
            grep -qE "(^| )$a(,|$)" "$tmp/out" || fail "plumb $c --help does not list $a"
        done
    done
    run convert --help
    for k in LlamaForCausalLM MixtralForCausalLM Qwen3MoeForCausalLM Gemma3ForCausalLM Phi3ForCausalLM; do
        expect_in "$tmp/out" "$k"
    done
    ;;

cli_bad_values_are_usage_errors_and_messages_have_one_prefix)
    # A kernel set no build has is a bad command-line value (2) in every command that takes one,
    # said before any model is read.
    for c in run chat serve perplexity logits; do
        run "$c" -m "$tmp/no-model.gguf" --kernels neon
        expect_rc 2 "plumb $c --kernels neon"
        expect_in "$tmp/err" "plumb $c: error: --kernels: kernel set 'neon': no kernel set has that name (compiled: "
        expect_not_in "$tmp/err" "no-model.gguf"
    done
    # logits compare: every message starts "plumb logits compare: "
    run logits compare "$tmp/a.logits" "$tmp/b.logits"
    expect_rc 1 "plumb logits compare (missing files)"
    expect_in "$tmp/err" "plumb logits compare: error: "
    run logits compare --max-kld x "$tmp/a.logits" "$tmp/b.logits"
    expect_rc 2 "plumb logits compare --max-kld x"
    expect_in "$tmp/err" "plumb logits compare: error: "
    # inspect takes -m like every other model command
    make_fixture good "$tmp/good.gguf"
    run inspect "$tmp/good.gguf"
    cp "$tmp/out" "$tmp/positional"
    run inspect -m "$tmp/good.gguf"
    expect_rc 0 "plumb inspect -m FILE"
    cmp -s "$tmp/out" "$tmp/positional" || fail "inspect -m FILE differs from inspect FILE"
    run inspect -m "$tmp/good.gguf" "$tmp/good.gguf"
    expect_rc 2 "plumb inspect -m FILE FILE"
    ;;

cli_unknown_option_exits_2)
    make_fixture good "$tmp/good.gguf"
    run inspect --bogus "$tmp/good.gguf"
    expect_rc 2 "plumb inspect --bogus"
    expect_in "$tmp/err" "plumb inspect: error: unknown option '--bogus'"
    expect_in "$tmp/err" "see \`plumb inspect --help\`"
    [ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "a usage error is 2 lines, not the whole help"
    expect_empty "$tmp/out"
    run inspect
    expect_rc 2 "plumb inspect (no file)"
    expect_in "$tmp/err" "no file given"
    run inspect "$tmp/good.gguf" "$tmp/good.gguf"
    expect_rc 2 "plumb inspect FILE FILE"
    run inspect --json=yes "$tmp/good.gguf"
    expect_rc 2 "plumb inspect --json=yes"
    expect_in "$tmp/err" "option '--json' takes no value"
    run kernels --bogus
    expect_rc 2 "plumb kernels --bogus"
    run kernels --set
    expect_rc 2 "plumb kernels --set (no value)"
    expect_in "$tmp/err" "needs a value"
    # "--" ends the options: a file named like an option is a file.
    cp "$tmp/good.gguf" "$tmp/--json"
    (cd "$tmp" && "$plumb" inspect -- --json >out2 2>err2)
    rc=$?
    expect_rc 0 "plumb inspect -- --json"
    expect_in "$tmp/out2" "n_tensors:    3"
    ;;

cli_inspect_text_shows_header_metadata_tensors)
    make_fixture good "$tmp/good.gguf"
    run inspect "$tmp/good.gguf"
    expect_rc 0 "plumb inspect"
    expect_empty "$tmp/err"
    o=$tmp/out
    size=$(wc -c <"$tmp/good.gguf" | tr -d ' ')
    expect_in "$o" "file size:    $size bytes"
    expect_in "$o" "gguf version: 3"
    expect_in "$o" "alignment:    32"
    expect_in "$o" "n_kv:         18"
    expect_in "$o" "n_tensors:    3"
    expect_re "$o" '^data offset:  [0-9]+ \(0x[0-9a-f]+\)$'
    expect_in "$o" "metadata: 18 key/value pairs"
    expect_re "$o" '^  +0  string +general\.architecture: +"llama"$'
    # Control characters, quotes and invalid UTF-8 are escaped; valid UTF-8 is kept.
    expect_in "$o" 'general.name:'
    expect_in "$o" '"tiny \"test\"\n\x01 café bad\xff end"'
    expect_re "$o" 'uint32 +tiny\.context_length: +4096$'
    expect_re "$o" 'float32 +tiny\.rope\.freq_base: +10000$'
    expect_re "$o" 'float32 +tiny\.eps: +1e-05$'
    expect_re "$o" 'bool +tiny\.flag: +true$'
    expect_re "$o" 'int8 +tiny\.i8: +-5$'
    expect_re "$o" 'uint8 +tiny\.u8: +200$'
    expect_re "$o" 'int16 +tiny\.i16: +-300$'
    expect_re "$o" 'uint16 +tiny\.u16: +60000$'
    expect_re "$o" 'int64 +tiny\.i64: +-1234567890123$'
    expect_re "$o" 'uint64 +tiny\.u64: +18446744073709551615$'
    expect_re "$o" 'float64 +tiny\.f64: +0\.1$'
    expect_re "$o" 'float32 +tiny\.nan: +nan$'
    # Short arrays inline, long ones summarised with a preview, long strings cut.
    expect_re "$o" '\[int32\] +tiny\.dims: +\[2, 4, 8\]$'
    expect_re "$o" 'tokenizer\.ggml\.tokens: +\[string × 1000\] "<unk>", "<s>", "</s>", "tok3", \.\.\.$'
    expect_re "$o" 'tokenizer\.ggml\.scores: +\[float32 × 1000\] 0, -1, -2, -3, \.\.\.$'
    expect_re "$o" 'tokenizer\.chat_template: +"\{% for m in messages %\}.*"\.\.\. \(500 bytes\)$'
    # Tensor table and totals.
    expect_re "$o" '^tensors: 3$'
    expect_re "$o" '^ +0  token_embd\.weight +F32 +\[8, 4\] +128 +0$'
    expect_re "$o" '^ +1  blk\.0\.attn_q\.weight +Q8_0 +\[32, 2\] +68 +[0-9]+$'
    expect_re "$o" '^ +2  output_norm\.weight +F16 +\[8\] +16 +[0-9]+$'
    expect_re "$o" '^  F32 +1 +32 +128 +128 B +60\.4%$'
    expect_re "$o" '^  Q8_0 +1 +64 +68 +68 B +32\.1%$'
    expect_re "$o" '^  F16 +1 +8 +16 +16 B +7\.5%$'
    expect_re "$o" '^  total +3 +104 +212 +212 B +100\.0%$'
    # --full shows every element; --no-tensors drops the table but keeps the totals.
    run inspect --full "$tmp/good.gguf"
    expect_rc 0 "plumb inspect --full"
    expect_in "$tmp/out" '"tok998", "tok999"]'
    run inspect --no-tensors "$tmp/good.gguf"
    expect_rc 0 "plumb inspect --no-tensors"
    grep -q 'token_embd' "$tmp/out" && fail "--no-tensors still lists tensors"
    expect_re "$tmp/out" '^  total +3 '
    ;;

cli_inspect_json_is_valid)
    make_fixture good "$tmp/good.gguf"
    run inspect --json "$tmp/good.gguf"
    expect_rc 0 "plumb inspect --json"
    expect_empty "$tmp/err"
    json_ok "$tmp/out"
    o=$tmp/out
    expect_in "$o" '"version": 3,'
    expect_in "$o" '"alignment": 32,'
    expect_in "$o" '"n_kv": 18,'
    expect_in "$o" '"n_tensors": 3,'
    expect_in "$o" '{"key": "general.architecture", "type": "string", "value": "llama"}'
    expect_in "$o" '"value": "tiny \"test\"\n\u0001 café bad\ufffd end"'
    expect_in "$o" '{"key": "tiny.nan", "type": "float32", "value": "nan"}'
    expect_in "$o" '{"key": "tiny.flag", "type": "bool", "value": true}'
    expect_in "$o" '"value": {"type": "int32", "count": 3, "values": [2, 4, 8], "truncated": false}'
    expect_in "$o" '"value": {"type": "string", "count": 1000, "values": ["<unk>", "<s>", "</s>", "tok3", "tok4", "tok5", "tok6", "tok7"], "truncated": true}'
    expect_in "$o" '{"name": "blk.0.attn_q.weight", "type": "Q8_0", "type_id": 8, "shape": [32, 2], "elements": 64, "bytes": 68, "offset": '
    expect_in "$o" '"totals": {"tensors": 3, "elements": 104, "bytes": 212}'
    # Every variant stays valid JSON, empty lists included.
    for opt in --full --no-tensors; do
        run inspect --json "$opt" "$tmp/good.gguf"
        expect_rc 0 "plumb inspect --json $opt"
        json_ok "$tmp/out"
    done
    make_fixture minimal "$tmp/minimal.gguf"
    run inspect --json "$tmp/minimal.gguf"
    expect_rc 0 "plumb inspect --json (no metadata, no tensors)"
    json_ok "$tmp/out"
    expect_in "$tmp/out" '"version": 2,'
    expect_in "$tmp/out" '"metadata": [],'
    expect_in "$tmp/out" '"tensors": [],'
    expect_in "$tmp/out" '"totals": {"tensors": 0, "elements": 0, "bytes": 0}'
    run inspect "$tmp/minimal.gguf"
    expect_rc 0 "plumb inspect (no metadata, no tensors)"
    expect_in "$tmp/out" "metadata: 0 key/value pairs"
    expect_re "$tmp/out" '^  total +0 +0 +0 +0 B +0\.0%$'
    ;;

cli_inspect_json_has_the_runtime)
    # A model plumb runs: the runtime object agrees with the file's own metadata and totals,
    # with the text output's runtime section, and its KV cache is the one its shape implies.
    "$plumb" mkmodel --preset tiny --type Q8_0 "$tmp/m.gguf" >/dev/null 2>"$tmp/mkerr" ||
        { fail "mkmodel failed"; cat "$tmp/mkerr" >&2; exit 1; }
    run inspect --json --no-tensors "$tmp/m.gguf"
    expect_rc 0 "plumb inspect --json (a runnable model)"
    expect_empty "$tmp/err"
    json_ok "$tmp/out"
    o=$tmp/out
    num() { sed -n "s/.*\"$1\": \([0-9][0-9]*\).*/\1/p" "$o" | head -n 1; }
    meta() { sed -n "s/.*{\"key\": \"$1\", \"type\": \"uint32\", \"value\": \([0-9]*\)}.*/\1/p" "$o"; }
    expect_in "$o" '"runtime": {"runnable": true, "arch": "llama", '
    arch=$(sed -n 's/.*"general.architecture", "type": "string", "value": "\([a-z0-9]*\)".*/\1/p' "$o")
    n_layer=$(num n_layer) n_embd=$(num n_embd) n_head=$(num n_head) n_head_kv=$(num n_head_kv)
    head_dim=$(num head_dim) n_ff=$(num n_ff) n_vocab=$(num n_vocab) ctx=$(num context)
    [ -n "$n_layer" ] && [ "$n_layer" = "$(meta "$arch.block_count")" ] ||
        fail "runtime n_layer '$n_layer' is not $arch.block_count '$(meta "$arch.block_count")'"
    [ -n "$n_embd" ] && [ "$n_embd" = "$(meta "$arch.embedding_length")" ] ||
        fail "runtime n_embd '$n_embd' is not $arch.embedding_length"
    n_tokens=$(sed -n 's/.*"tokenizer.ggml.tokens", "type": "array", "value": {"type": "string", "count": \([0-9]*\),.*/\1/p' "$o")
    [ -n "$n_vocab" ] && [ "$n_vocab" = "$n_tokens" ] ||
        fail "runtime n_vocab '$n_vocab' is not the count of tokenizer.ggml.tokens '$n_tokens'"
    total=$(sed -n 's/.*"totals": {"tensors": [0-9]*, "elements": \([0-9]*\), "bytes": \([0-9]*\)}.*/\1 \2/p' "$o")
    [ "$(num n_params) $(num weight_bytes)" = "$total" ] ||
        fail "runtime n_params/weight_bytes '$(num n_params) $(num weight_bytes)' are not the totals '$total'"
    # F16 K and V: 2 bytes x 2 x layers x context x KV heads x head_dim.
    expect_in "$o" '"kv_type": "F16"'
    expect_in "$o" '"chat_template": {"compiles": true, "bytes": 333}'
    want_kv=$((2 * 2 * n_layer * ctx * n_head_kv * head_dim))
    [ "$(num kv_bytes)" = "$want_kv" ] || fail "kv_bytes $(num kv_bytes), want $want_kv"
    run inspect --no-tensors "$tmp/m.gguf"
    expect_rc 0 "plumb inspect (a runnable model)"
    expect_in "$tmp/out" "runtime:"
    expect_in "$tmp/out" "  $arch: $n_layer layers, n_embd $n_embd, heads $n_head/$n_head_kv, head_dim $head_dim, n_ff $n_ff, vocab $n_vocab"
    expect_in "$tmp/out" "default session (context $ctx, F16 KV"
    # the model's chat template, as compiled at load
    expect_in "$tmp/out" "  chat template: 333 bytes of Jinja, compiled"
    # A file plumb does not run: the runtime says why, in the JSON as in the text.
    make_fixture good "$tmp/good.gguf"
    run inspect "$tmp/good.gguf"
    why=$(sed -n 's/^  not runnable: //p' "$tmp/out")
    [ -n "$why" ] || fail "text: no 'not runnable:' line"
    expect_no_enum "$tmp/out"
    run inspect --json "$tmp/good.gguf"
    expect_rc 0 "plumb inspect --json (a file plumb does not run)"
    json_ok "$tmp/out"
    expect_in "$tmp/out" '"runtime": {"runnable": false, "status": "PL_ERR_'
    expect_in "$tmp/out" "\"error\": \"$why\"}"
    ;;

cli_inspect_corrupt_file_exits_1)
    for kind in truncated bad-magic empty; do
        make_fixture "$kind" "$tmp/$kind.gguf"
        for json in "" --json; do
            run inspect $json "$tmp/$kind.gguf"
            expect_rc 1 "plumb inspect $json ($kind file)"
            expect_re "$tmp/err" '^plumb inspect: error: .+'
            expect_no_enum "$tmp/err"
            expect_empty "$tmp/out"
        done
    done
    run inspect "$tmp/does-not-exist.gguf"
    expect_rc 1 "plumb inspect (missing file)"
    expect_in "$tmp/err" "plumb inspect: error: "
    expect_in "$tmp/err" "does-not-exist.gguf"
    expect_no_enum "$tmp/err"
    run inspect "$tmp"
    expect_rc 1 "plumb inspect (a directory)"
    expect_in "$tmp/err" "plumb inspect: error: "
    expect_no_enum "$tmp/err"
    ;;

cli_inspect_write_error_exits_1)
    [ -w /dev/full ] || { echo "no /dev/full: skipped"; exit 77; }
    make_fixture good "$tmp/good.gguf"
    "$plumb" inspect "$tmp/good.gguf" >/dev/full 2>"$tmp/err"
    rc=$?
    expect_rc 1 "plumb inspect >/dev/full"
    expect_in "$tmp/err" "plumb inspect: error: cannot write the output"
    ;;

cli_kernels_reports_sets_and_fallbacks)
    run kernels
    expect_rc 0 "plumb kernels"
    expect_empty "$tmp/err"
    expect_in "$tmp/out" "kernel sets (best first):"
    expect_re "$tmp/out" '^  ref +supported'
    expect_re "$tmp/out" '^chosen: [a-z0-9_]+ '
    expect_re "$tmp/out" '^matmul '
    expect_re "$tmp/out" '^fallbacks to ref: [0-9]+$'
    run kernels --json
    expect_rc 0 "plumb kernels --json"
    json_ok "$tmp/out"
    expect_in "$tmp/out" '{"name": "ref", "supported": true, '
    expect_in "$tmp/out" '"fallbacks": ['
    run kernels --set ref
    expect_rc 0 "plumb kernels --set ref"
    expect_in "$tmp/out" "chosen: ref (by name"
    expect_re "$tmp/out" '^fallbacks to ref: 0$'
    PLUMB_KERNELS=ref "$plumb" kernels >"$tmp/out" 2>"$tmp/err"
    rc=$?
    expect_rc 0 "PLUMB_KERNELS=ref plumb kernels"
    expect_in "$tmp/out" "chosen: ref (by name"
    ;;

cli_kernels_option_names_itself)
    run kernels --kernels ref
    expect_rc 0 "plumb kernels --kernels ref"
    expect_in "$tmp/out" "chosen: ref (by name, --kernels)"
    run kernels --set ref
    expect_in "$tmp/out" "chosen: ref (by name, --set)"
    PLUMB_KERNELS=ref "$plumb" kernels >"$tmp/out" 2>"$tmp/err"
    expect_in "$tmp/out" "chosen: ref (by name, PLUMB_KERNELS)"
    ;;

cli_kernels_unknown_set_env_exits_1_option_exits_2)
    PLUMB_KERNELS=nosuchset "$plumb" kernels >"$tmp/out" 2>"$tmp/err"
    rc=$?
    expect_rc 1 "PLUMB_KERNELS=nosuchset plumb kernels"
    expect_in "$tmp/err" "plumb kernels: error: "
    expect_in "$tmp/err" "nosuchset"
    expect_no_enum "$tmp/err"
    # on the command line the same name is a bad value: exit 2
    run kernels --set nosuchset
    expect_rc 2 "plumb kernels --set nosuchset"
    expect_in "$tmp/err" "no kernel set has that name"
    expect_in "$tmp/err" "plumb kernels: error: "
    expect_no_enum "$tmp/err"
    ;;

json_check_rejects_invalid_json)
    # The checker the JSON tests rely on must itself say no to broken JSON.
    # printf %b: \\ is one backslash, \0NNN an octal byte.
    for good in '{}' '[]' '{"a": [1, -2.5e+3, true, false, null, "x\\u00e9\\n\\/"]}' \
        '"caf\0303\0251"' '0' ' [ 0.5 , -0 ] ' '"\0177"'; do
        printf '%b' "$good" | "$json_check" 2>/dev/null || fail "rejected valid: $good"
    done
    for badj in '' '{' '{"a":}' '[1,]' '{"a" 1}' '[01]' '[1.]' '[.5]' '["\0001"]' '["\\q"]' \
        '[nan]' '[Infinity]' '{"a":1}x' '["\0377"]' '["\0300\0200"]' '["\0355\0240\0200"]' \
        "['a']" '["\\u12"]' '["\\"]' '{1: 2}' \
        '["abc' '[1e]' '[-]' '{"a":1,}' '[tru]'; do
        if printf '%b' "$badj" | "$json_check" 2>/dev/null; then fail "accepted invalid: $badj"; fi
    done
    ;;

*)
    echo "cli_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

finish
