#!/usr/bin/env python3
"""render.py — the oracle of plumb's Jinja engine: renders every template of
conformance/jinja/templates/ with every conversation of conformance/jinja/conversations/ using
Python's jinja2 set up exactly as transformers sets it up (transformers/utils/chat_template_utils.py:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker,
loopcontrols]), its tojson, raise_exception and strftime_now) and writes the expected bytes
(expected/<template>/<conversation>.txt) or the expected error (.error) that test_jinja_corpus
compares plumb with. Not run by ctest: it regenerates the committed expectations.

usage: render.py [CORPUS_DIR]            regenerate expected/
       render.py --bench TEMPLATE N      µs per render of an N-message conversation (perf/)
"""
import json
import os
import sys
import time
from datetime import datetime, timezone

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

# strftime_now's clock: the same fixed instant the C test passes (pl_jinja_limits.now), in UTC
NOW = 1721000000  # 2024-07-14 23:33:20 UTC


class AssistantTracker(Extension):
    """transformers' {% generation %} tag: renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = self.call_method("_generation_support")
        return nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.fromtimestamp(NOW, timezone.utc).strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def context(corpus, tmpl, conv):
    """the render's variables: the conversation, then the template's special tokens"""
    with open(os.path.join(corpus, "conversations", conv + ".json"), encoding="utf-8") as f:
        ctx = json.load(f)
    tok = os.path.join(corpus, "templates", tmpl + ".json")
    if os.path.exists(tok):
        with open(tok, encoding="utf-8") as f:
            ctx.update(json.load(f))
    return ctx


def names(corpus, sub, ext):
    return sorted(f[: -len(ext)] for f in os.listdir(os.path.join(corpus, sub)) if f.endswith(ext))


def regenerate(corpus):
    env = make_env()
    n_ok = n_err = 0
    for tmpl in names(corpus, "templates", ".jinja"):
        with open(os.path.join(corpus, "templates", tmpl + ".jinja"), encoding="utf-8",
                  newline="") as f:
            src = f.read()
        out_dir = os.path.join(corpus, "expected", tmpl)
        os.makedirs(out_dir, exist_ok=True)
        for old in os.listdir(out_dir):
            os.remove(os.path.join(out_dir, old))
        try:
            compiled = env.from_string(src)
        except Exception as e:  # the template does not compile: every case expects an error
            compiled, compile_error = None, f"{type(e).__name__}: {e}"
        for conv in names(corpus, "conversations", ".json"):
            try:
                if compiled is None:
                    raise RuntimeError(compile_error)
                text = compiled.render(**context(corpus, tmpl, conv))
                with open(os.path.join(out_dir, conv + ".txt"), "w", encoding="utf-8",
                          newline="") as f:
                    f.write(text)
                n_ok += 1
            except Exception as e:
                with open(os.path.join(out_dir, conv + ".error"), "w", encoding="utf-8") as f:
                    f.write(f"{type(e).__name__}: {e}\n")
                n_err += 1
    print(f"render.py: jinja2 {jinja2.__version__}: {n_ok} renders, {n_err} errors")


def bench(corpus, tmpl, n_msgs):
    env = make_env()
    with open(os.path.join(corpus, "templates", tmpl + ".jinja"), encoding="utf-8",
              newline="") as f:
        compiled = env.from_string(f.read())
    ctx = context(corpus, tmpl, "13_long_100")
    reps = 200
    compiled.render(**ctx)
    t0 = time.perf_counter()
    for _ in range(reps):
        compiled.render(**ctx)
    dt = (time.perf_counter() - t0) / reps
    print(f"python jinja2 {jinja2.__version__}: {tmpl}: {dt * 1e6:.1f} us per render "
          f"({len(ctx['messages'])} messages, {reps} renders)")


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "..", "conformance", "jinja")
    if len(sys.argv) > 1 and sys.argv[1] == "--bench":
        bench(default, sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 100)
    else:
        regenerate(sys.argv[1] if len(sys.argv) > 1 else default)
