#!/usr/bin/env python3
"""differential.py — random templates rendered by jinja2 (set up as render.py sets it up) and by
plumb (build/conformance/jinja_render), compared byte for byte; both raising counts as agreeing.
Two generators: `expr` (nested expressions over literals, operators, filters, tests, methods)
and `ws` (text, tags and whitespace control: -, +, trim_blocks, lstrip_blocks, raw, comments).
Not a test: a search for disagreements, printed with the template. Results vary by seed;
printing a generator, reverse's iterator and `%` string formatting are known differences.

usage: differential.py expr|ws SEED COUNT [JINJA_RENDER]
"""
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import render as R  # noqa: E402

env = R.make_env()
lits=["0","1","-3","2.5","'ab'","'A b '","''","none","true","false","[1, 2]","['x', 'y']","{'a': 1}","(1, 'a')","x","3.0","1e3","'é中'","[[1], 2]","'a,b'"]
filters=["length","upper","lower","trim","string","list","first","last","join(',')","reverse","sort","unique","tojson","int","float","abs","round","default('d')","items","title","capitalize","wordcount","sum","min","max","tojson(indent=1)","e","count","indent(2)","replace('a','z')","select('odd')|list","map('upper')|list","batch(2)","dictsort"]
tests=["defined","none","string","number","iterable","mapping","odd","even","integer","float","sequence","boolean","true","false","lower","upper","callable"]
methods=[".strip()",".split()",".upper()",".startswith('a')",".replace('a','b')",".items()",".keys()",".get('a')",".lstrip('a')",".split(',')",".title()",".find('b')",".count('a')","[0]","[-1]","[1:]","[::-1]",".a"]
ops=["+","-","*","/","//","%","**","~","==","!=","<",">","<=",">=","in","not in","and","or"]
def expr(d=0):
    r=random.random()
    if d>2 or r<0.3: return random.choice(lits)
    if r<0.5: return f"({expr(d+1)} {random.choice(ops)} {expr(d+1)})"
    if r<0.7: return f"({expr(d+1)})|{random.choice(filters)}"
    if r<0.8: return f"({expr(d+1)} is {random.choice(['','not '])}{random.choice(tests)})"
    if r<0.9: return f"({expr(d+1)}){random.choice(methods)}"
    return f"({expr(d+1)} if {expr(d+1)} else {expr(d+1)})"
texts=["a","  ","\n","\n  ","x\n","\t"," y "," \n \n","z"]
def ctl(): return random.choice(["","-","+"]) if random.random()<0.5 else ""
def out(): return "{{"+random.choice(["","-"])+" "+random.choice(["1","'s'","i","loop.index","ns.v","m"])+" "+random.choice(["","-"])+"}}"
def block(d):
    r=random.random()
    body=lambda: "".join(piece(d+1) for _ in range(random.randint(0,3)))
    if r<0.25: return "{%"+ctl()+" if "+random.choice(["true","false","i","m"])+" "+ctl()+"%}"+body()+"{%"+ctl()+" else "+ctl()+"%}"+body()+"{%"+ctl()+" endif "+ctl()+"%}"
    if r<0.5: return "{%"+ctl()+" for i in [1, 2] "+ctl()+"%}"+body()+"{%"+ctl()+" endfor "+ctl()+"%}"
    if r<0.65: return "{%"+ctl()+" set ns.v = "+random.choice(["1","'q'","ns.v ~ 'r'"])+" "+ctl()+"%}"
    if r<0.75: return "{#"+ctl()+" c "+ctl()+"#}"
    if r<0.85: return "{%"+ctl()+" raw "+ctl()+"%}"+random.choice(texts)+"{{ x }}"+random.choice(texts)+"{%"+ctl()+" endraw "+ctl()+"%}"
    return "{%"+ctl()+" set m "+ctl()+"%}"+body()+"{%"+ctl()+" endset "+ctl()+"%}"
def piece(d):
    r=random.random()
    if d>3 or r<0.4: return random.choice(texts)
    if r<0.6: return out()
    return block(d)


def run(make, seed, n, binary):
    random.seed(seed)
    ctx = "/tmp/jinja_diff_ctx.json"
    tpl = "/tmp/jinja_diff.jinja"
    json.dump({}, open(ctx, "w"))
    same = both = bad = 0
    for _ in range(n):
        src = make()
        try:
            py, pe = env.from_string(src).render(), None
        except Exception as e:
            py, pe = None, f"{type(e).__name__}: {e}"
        with open(tpl, "w") as f:
            f.write(src)
        p = subprocess.run([binary, tpl, ctx], capture_output=True)
        out = p.stdout.decode("utf-8", "replace")
        if pe is None and p.returncode == 0 and out == py:
            same += 1
        elif pe is not None and p.returncode != 0:
            both += 1
        else:
            bad += 1
            print("MISMATCH", repr(src), "| jinja2:", repr(py) if pe is None else pe[:80],
                  "| plumb:", repr(out[:120]) if p.returncode == 0 else p.stderr.decode()[:120])
    print(f"same {same}, both raise {both}, mismatch {bad}")


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    binary = sys.argv[4] if len(sys.argv) > 4 else os.path.join(here, "..", "..", "build",
                                                                 "conformance", "jinja_render")
    mode, seed, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    make = (lambda: "{{ " + expr() + " }}") if mode == "expr" else (
        lambda: "{% set ns = namespace(v=0) %}{% set m = 'M' %}"
        + "".join(piece(0) for _ in range(random.randint(1, 6)))
        + random.choice(["", "\n", "\n\n"]))
    run(make, seed, n, binary)
