# Makefile — the front door. CMake does the building; this file names the jobs (`make help`).
#   make deps   missing Debian packages + wasm libs   make        configure + build (build/)
#   make test   deps + build + ctest                 make demo   the main job on a built-in model
#   make test-webgpu   the webgpu set in Chromium's software WebGPU (not in make test)
#   make fuzz   AFL++ campaigns                      make perf   paired A/B regression report
#   make perf-instr   instruction counts (callgrind), JSON + table
#   make perf-web   plumb wasm vs wllama in headless chromium (+ native, memory), perf/reports/
#   make wasm   the browser build (emscripten): build-wasm/web/ (web/README.md)
BUILD      ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=
# ctest runs twice as many tests as there are cores: a third of the suite waits (servers, npm,
# Chromium, the wasm build's links), and at -j 2 on a 2-core machine the suite took 305 s of
# wall against 246 s at -j 4, with every test passing (conformance/README.md).
CTEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))

# Debian packages the build and the tests need (clang + its sanitizer runtime for the
# CI sanitizer build; afl++ for `make fuzz`; gnuplot-nox draws the `make perf` plots; valgrind
# for `make perf-instr` and its perf-smoke test: callgrind counts instructions where the VM
# exposes no hardware counters; libmicrohttpd for `plumb serve`; curl and jq drive its curl
# test; chromium runs the chat page's browser tests, headless; libsimde-dev lets the native
# build compile the browser's wasm128 kernels and prove them in the conformance suite;
# emscripten (+ dpkg-dev for apt-get source) builds the browser engine: web/README.md, and
# tools/wasm/deps.sh adds the deb-src entry); clang-19 compiles the relaxed-SIMD kernel files
# (emscripten's clang-14 encodes relaxed SIMD with prototype opcodes that node and Chromium
# reject: web/README.md); libopenblas-serial-dev is the CBLAS under GSL in the conformance
# references (conformance/CMakeLists.txt: GSL's own libgslcblas is unoptimised loops); zip and unzip pack and open the seed corpora of the ClusterFuzzLite
# build (.clusterfuzzlite/build.sh, make fuzz-cflite); haproxy is the load balancer of
# serve/deploy/haproxy.cfg, which the serve_balance test runs as shipped in front of several
# `plumb serve` (its own process on loopback ports; the system service is not used). node and npm (the OpenAI SDK and puppeteer-core
# tests) are checked as commands, not packages: a node from elsewhere (e.g. NodeSource, which
# bundles npm) is kept; Debian's nodejs/npm otherwise.
DEPS = build-essential cmake pkg-config clang libclang-rt-14-dev \
       libcunit1-dev libgsl-dev afl++ libhwloc-dev libpcre2-dev \
       libutf8proc-dev libjansson-dev libmicrohttpd-dev gnuplot-nox valgrind curl jq \
       emscripten dpkg-dev libsimde-dev chromium clang-19 zip unzip haproxy \
       libopenblas-serial-dev

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help all build deps deps-pkgs deps-wasm test test-webgpu check demo fuzz perf perf-scaling perf-micro perf-baseline perf-history perf-instr perf-web perf-pretok clean format tsan wasm

all: build

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# deps: the packages, then the browser build's libraries from their Debian sources (once per
# machine: tools/wasm/deps.sh caches them in ~/.cache/plumb/wasm-deps). deps-pkgs: the packages.
deps: deps-pkgs
	JOBS=$(JOBS) nice tools/wasm/deps.sh

deps-pkgs:
	@missing=""; for p in $(DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all present ($(DEPS))"; fi
	@tools/wasm/deps.sh --apt

# The wasm build's libraries alone (make deps builds them too; make wasm checks them).
deps-wasm: deps-pkgs
	JOBS=$(JOBS) nice tools/wasm/deps.sh

# The browser build: build-wasm/web/plumb-{simd-threads,simd,scalar}.{mjs,wasm} (+ .worker.js),
# with each SIMD tree's relaxed-SIMD module (simd-relaxed-threads, simd-relaxed), and
# plumb-engine.mjs. WASM_VARIANTS picks (scalar-threads too).
WASM_VARIANTS ?= simd-threads simd scalar
wasm:
	JOBS=$(JOBS) tools/wasm/build.sh $(WASM_VARIANTS)

# Every test but the webgpu set's (label webgpu: its WGSL kernels and forward pass in Chromium's
# software WebGPU, SwiftShader, with their planted faults: ~140 s of CPU, half of make test's
# budget; they touch none of the C engine): make test-webgpu runs those, and CI runs them as a
# phase of their own (conformance/README.md). CTEST_ARGS, when given, replaces the exclusion.
CTEST_SELECT = $(if $(CTEST_ARGS),$(CTEST_ARGS),-LE webgpu)
test: deps build
	cd $(BUILD) && ctest --output-on-failure -j $(CTEST_JOBS) $(CTEST_SELECT)

test-webgpu: deps build
	cd $(BUILD) && ctest --output-on-failure -j $(CTEST_JOBS) -L webgpu

# The edit loop (conformance/README.md, "The quick label"): a wrong kernel, a broken parser, a
# broken chat cache, in under a minute on 2 cores. Not a substitute for make test before a push.
check: build
	cd $(BUILD) && ctest --output-on-failure -j $(CTEST_JOBS) -L quick $(CTEST_ARGS)

# The demo model: 8 M parameters trained on English text (tools/train/README.md), converted
# from its Hugging Face checkpoint (models/plumb-en-8m-hf) with `plumb convert --type Q8_0`.
DEMO_MODEL = models/plumb-en-8m-Q8_0.gguf
# Then a scripted 4-turn `plumb chat` (the model was not trained on dialog: the replies are
# English-like text, the point is the timing), with the prefix cache (turn N+1 prefills only its new
# tokens) and with --no-cache (every turn prefills the whole conversation), side by side.
DEMO_CHAT_LINES = "Hello! Who are you?" "Tell me a story about a small cat." \
                  "What did the cat find in the garden?" "Thank you. Goodbye!"
DEMO_CHAT = $(BUILD)/tools/plumb chat -m $(DEMO_MODEL) --system "You are a helpful assistant." \
            -n 16 --ignore-eos --seed 42
# One line per turn of a --stats-json file: turn path reused prefilled ttft_ms.
DEMO_TURNS = sed -n 's/.*"turn": \([0-9]*\), "path": "\([a-z]*\)", "reused": \([0-9]*\), "prefilled": \([0-9]*\),.*"ttft_ms": \([0-9.]*\),.*/\1 \2 \3 \4 \5/p'
demo: deps-pkgs build
	$(BUILD)/tools/plumb run -m $(DEMO_MODEL) -p "Once upon a time" -n 64 --temp 0.7 --top-p 0.9 --seed 42
	@echo; echo "== plumb chat: 4 user lines piped in; the prefix cache keeps the conversation"
	printf '%s\n' $(DEMO_CHAT_LINES) | $(DEMO_CHAT) --stats-json $(BUILD)/demo-chat.json
	@echo; echo "== the same conversation with --no-cache: every turn starts over"
	printf '%s\n' $(DEMO_CHAT_LINES) | $(DEMO_CHAT) --no-cache --stats-json $(BUILD)/demo-chat-nocache.json
	@echo; echo "== per turn: with the cache | with --no-cache"
	@$(DEMO_TURNS) $(BUILD)/demo-chat.json >$(BUILD)/demo-chat.txt
	@$(DEMO_TURNS) $(BUILD)/demo-chat-nocache.json | paste -d' ' $(BUILD)/demo-chat.txt - | \
	  awk 'BEGIN { printf "%4s | %-5s %6s %9s %8s | %-5s %6s %9s %8s\n", "turn", "path", "reused", \
	    "prefilled", "ttft ms", "path", "reused", "prefilled", "ttft ms" } \
	    { printf "%4s | %-5s %6s %9s %8.2f | %-5s %6s %9s %8.2f\n", $$1, $$2, $$3, $$4, $$5, $$7, $$8, $$9, $$10 }'

# AFL++ campaigns (fuzz/README.md): FUZZ_SECONDS per harness, FUZZ_TARGETS to choose.
# The harnesses are the fuzz/fuzz_<name>.c files (a new one is also listed in fuzz/fuzz.cmake).
FUZZ_HARNESSES = $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_TARGETS  ?= $(FUZZ_HARNESSES)
FUZZ_SECONDS  ?= 600
FUZZ_ENV = FUZZ_HARNESSES="$(FUZZ_HARNESSES)" FUZZ_TARGETS="$(FUZZ_TARGETS)" FUZZ_SECONDS=$(FUZZ_SECONDS)
.PHONY: fuzz-replay fuzz-cmin fuzz-coverage
# The libFuzzer targets as ClusterFuzzLite builds them (.clusterfuzzlite/build.sh), each run over
# its seed corpus from the output directory alone; and two AFL++ instance groups through one
# FUZZ_SYNC_DIR (fuzz/README.md).
.PHONY: fuzz-cflite fuzz-sync-test
fuzz-cflite: deps-pkgs
	fuzz/cflite-check.sh
fuzz-sync-test: deps-pkgs
	fuzz/sync-test.sh
fuzz: deps-pkgs
	$(FUZZ_ENV) fuzz/campaign.sh all
fuzz-replay:
	$(FUZZ_ENV) fuzz/campaign.sh replay
fuzz-cmin:
	$(FUZZ_ENV) fuzz/campaign.sh cmin
fuzz-coverage:
	$(FUZZ_ENV) fuzz/coverage.sh

# The regression report (perf/README.md): the work tree (A) against BASE (B, default HEAD~1), both
# built in Release under build-perf/, `plumb bench` run interleaved A B / B A on the same cores;
# report in perf/reports/. perf/perf.sh exits 0 no regression, 1 REGRESSION, 2 could not measure
# (make turns any failure into 2: `git bisect run perf/perf.sh ab BASE=...` keeps the three apart).
PERF_VARS = $(foreach v,BASE SUITE PAIRS ROUNDS THRESHOLD THREADS CPUS LOAD_MAX REVS,$(if $($(v)),$(v)="$($(v))"))
perf:
	@dpkg-query -W -f='$${Status}' gnuplot-nox 2>/dev/null | grep -q "install ok installed" || \
	  command -v gnuplot >/dev/null || $(MAKE) deps-pkgs
	perf/perf.sh ab $(PERF_VARS) JOBS=$(JOBS)
# plumb against the peers at 1, 2, 4, ... threads up to the cores (% of roofline and of the int8
# peak per row; exit 1 when more threads are slower than fewer): perf/reports/scaling-*.md.
perf-scaling: build
	perf/scaling.sh run PLUMB=$(BUILD)/tools/plumb $(foreach v,THREADS FILES PP TG REPS PEERS ENGINES,$(if $($(v)),$(v)="$($(v))"))
# Absolute medians of the quick suite for this commit: perf/baselines/<cpu signature>.json.
perf-baseline:
	perf/perf.sh baseline $(PERF_VARS) JOBS=$(JOBS)
# tok/s per commit: make perf-history REVS="a b c" (round-robin, ROUNDS=3).
perf-history:
	perf/perf.sh history $(PERF_VARS) JOBS=$(JOBS)

# The micro-benchmarks (perf/NOTES.md says how to read them): tokenizer, pool, one run, chat.
PERF_MODEL = $(BUILD)/perf-qwen2-0.5b-q8_0.gguf
perf-micro: build
	$(BUILD)/perf/bench_tokenize 1 5
	$(BUILD)/perf/bench_pool 2 10000
	@test -f $(PERF_MODEL) || $(BUILD)/tools/plumb mkmodel $(PERF_MODEL) --preset qwen2-0.5b --type Q8_0
	$(BUILD)/tools/plumb run -m $(PERF_MODEL) --tokens $$(seq -s, 1 64) -n 33 --ignore-eos --temp 0 -v
	$(BUILD)/perf/bench_chat $(PERF_MODEL) -o $(BUILD)/perf-chat.json

# Tokenization MB/s per pre-tokenizer, plumb against HF tokenizers (npm, pinned) on the held-out
# mixed-script text, interleaved (perf/bench_pretok.sh; perf/NOTES.md, "Pre-tokenizers").
perf-pretok: build
	perf/bench_pretok.sh -b $(BUILD)

# plumb's wasm build (wasm128 and wasm128r) against wllama (npm @wllama/wllama, pinned) in one
# headless chromium, and native plumb (the best kernel set) on the same files, interleaved, greedy,
# one decode rule; each group under its own limit (GROUP_TIMEOUT_MS), every sample to a .jsonl as
# measured; the wasm memory of every row, and memory rows for a 1B Q8_0 and a 3B-shaped Q4_K_M;
# the chat page's TTFT per turn (perf/perf_web.sh; web/README.md, "Benchmark"; perf/NOTES.md,
# "Measured the same way (issue 52)"). Needs `make wasm` first.
perf-web: build
	perf/perf_web.sh -b $(BUILD)

# Instruction counts under callgrind (perf/perf_instr.sh; perf/NOTES.md, "Instruction counts"):
# per prefilled/decoded token on tiny and qwen2-0.5b, per kernel call on fixed shapes, ref and
# avx2 sets; writes $(BUILD)/perf-instr.json. Compare two: perf/perf_instr.sh compare A.json B.json
PERF_INSTR_ARGS ?=
perf-instr: deps-pkgs build
	perf/perf_instr.sh -b $(BUILD) $(PERF_INSTR_ARGS)

# ThreadSanitizer over what runs on several threads: sessions sharing one model (chat), the
# thread pool, and the HTTP server (connections, slots, streams). CI runs it after the ASan build.
tsan: deps-pkgs
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
	  -DPLUMB_SANITIZE=thread $(CMAKE_FLAGS)
	cmake --build build-tsan -j $(JOBS) --target test_chat_cache test_threads test_serve_http
	TSAN_OPTIONS=halt_on_error=1 PLUMB_TEST=thread build-tsan/conformance/test_chat_cache
	TSAN_OPTIONS=halt_on_error=1 build-tsan/conformance/test_threads
	TSAN_OPTIONS=halt_on_error=1 PLUMB_SERVE_TEST_MODEL=$(DEMO_MODEL) build-tsan/conformance/test_serve_http

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

# Every job, one line each (the ctest make_help_names_every_target fails when one is missing).
help:
	@echo 'make [target] [VAR=value ...]   variables: BUILD (build) BUILD_TYPE (Release) JOBS CMAKE_FLAGS CTEST_ARGS CTEST_JOBS'
	@echo 'build and test:'
	@echo '  all, build      configure + build into $$(BUILD) (the default target)'
	@echo '  deps            the missing Debian packages (sudo when not root), then deps-wasm'
	@echo '  deps-pkgs       only the missing Debian packages'
	@echo '  test            deps + build + ctest (CTEST_ARGS="-R regex" for a part)'
	@echo '  check           build + ctest -L quick: the edit loop, under a minute'
	@echo '  test-webgpu     deps + build + the webgpu set in Chromium'"'"'s software WebGPU (not in test)'
	@echo '  demo            the main job on the built-in 8M model: run, then a 4-turn chat'
	@echo '  tsan            ThreadSanitizer over chat sessions, the thread pool, the HTTP server'
	@echo '  format          clang-format every tracked .c and .h'
	@echo '  clean           remove $$(BUILD)'
	@echo 'the browser (web/README.md):'
	@echo '  wasm            the emscripten build into build-wasm/web/ (WASM_VARIANTS)'
	@echo '  deps-wasm       the wasm build'"'"'s libraries from their Debian sources (cached per machine)'
	@echo 'fuzzing (fuzz/README.md; FUZZ_HARNESSES, FUZZ_SECONDS):'
	@echo '  fuzz            AFL++ campaigns on every harness'
	@echo '  fuzz-replay     the replay drivers over the checked-in corpora'
	@echo '  fuzz-cmin       minimize the corpora'
	@echo '  fuzz-coverage   source coverage (clang) of each harness'"'"'s corpus, per file'
	@echo '  fuzz-cflite     the ClusterFuzzLite libFuzzer build over its seed corpora'
	@echo '  fuzz-sync-test  two AFL++ instance groups through one FUZZ_SYNC_DIR'
	@echo 'performance (perf/README.md, perf/NOTES.md):'
	@echo '  perf            paired A/B regression report, work tree vs BASE (HEAD~1)'
	@echo '  perf-baseline   absolute medians of the quick suite for this commit'
	@echo '  perf-history    tok/s per commit (REVS="a b c")'
	@echo '  perf-scaling    plumb vs the peers at 1, 2, 4, ... threads'
	@echo '  perf-micro      tokenizer, pool, one run and chat micro-benchmarks'
	@echo '  perf-pretok     tokenization MB/s per pre-tokenizer vs HF tokenizers'
	@echo '  perf-instr      instruction counts under callgrind'
	@echo '  perf-web        the wasm build vs wllama in headless Chromium (after make wasm)'
	@echo '  help            this list'

clean:
	rm -rf $(BUILD)
