#!/usr/bin/env python3
"""Train plumb's small demo model (Llama architecture) and write its oracle
fixtures.  Runs on one CUDA GPU with PyTorch, transformers and tokenizers;
needs no network.  See tools/train/README.md for the exact command.

Stages (all outputs under --out):
  a) byte-level BPE tokenizer trained on train.txt  -> hf/tokenizer*.json
  b) LlamaForCausalLM trained on packed documents    -> loss.csv, train.log
  c) save_pretrained in bfloat16                     -> hf/
  d) outside oracle: reload hf/ in float32 on CPU (eager attention), logits of
     4 fixed prompts                                 -> fixtures/oracle_logits.bin
  e) tokenizer parity fixtures                       -> fixtures/tokenizer_parity.jsonl
  f) samples (temperature 0.8, fixed seed)           -> samples.txt
  meta.json: versions, config, parameter count, tokens, losses, timings.
"""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import argparse
import csv
import json
import math
import random
import struct
import sys
import time

import torch
import torch.nn.functional as F
import tokenizers
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, AutoTokenizer

EOT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

ORACLE_PROMPTS = [
    "Once upon a time, there was a little girl who lived with her mother near the river.",
    None,  # filled with a held-out sentence
    "On March 3, 1962, the firm paid $4.75 a share (12.5% more) to 1,280 holders.",
    "Notwithstanding extraordinary thermodynamic reconfigurations, the unsympathetic bureaucrats remained incomprehensibly stubborn.",
]
SAMPLE_PROMPTS = [
    "Once upon a time",
    "The president said that",
    "In the morning, the old man",
    "I think the movie",
    "The committee will",
]


def log(*a):
    print(*a, flush=True)


def seed_all(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [ln.rstrip("\n") for ln in f if ln.strip()]


# ---------------------------------------------------------------- tokenizer
def train_tokenizer(train_path, vocab_size):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[EOT, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train([train_path], trainer)
    # <|endoftext|> doubles as BOS: every training document follows one.
    tok.post_processor = processors.TemplateProcessing(
        single=EOT + " $A",
        pair=EOT + " $A " + EOT + " $B:1",
        special_tokens=[(EOT, tok.token_to_id(EOT))],
    )
    assert tok.token_to_id(EOT) == 0 and tok.token_to_id(IM_START) == 1 and tok.token_to_id(IM_END) == 2
    return tok


def save_tokenizer(tok, hf_dir):
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=EOT,
        eos_token=EOT,
        pad_token=EOT,
        additional_special_tokens=[IM_START, IM_END],
        model_max_length=512,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHATML
    fast.save_pretrained(hf_dir)
    # Keep the chat template inside tokenizer_config.json (newer transformers
    # write chat_template.jinja instead) and state the BOS behaviour.
    cfg_path = os.path.join(hf_dir, "tokenizer_config.json")
    with open(cfg_path, encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["chat_template"] = CHATML
    cfg["add_bos_token"] = True
    cfg["add_eos_token"] = False
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    with open(cfg_path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")
    jinja = os.path.join(hf_dir, "chat_template.jinja")
    if os.path.exists(jinja):
        os.remove(jinja)


def encode_stream(tok, lines):
    enc = tok.encode_batch(lines, add_special_tokens=False)
    flat = []
    for e in enc:
        flat.append(0)
        flat.extend(e.ids)
    return torch.tensor(flat, dtype=torch.int64)


# ---------------------------------------------------------------- model
def add_residual_dropout(model, p):
    """Training-only dropout on each attention and MLP output (the residual
    branches).  Hooks are not part of the saved model."""
    handles = []
    if p <= 0:
        return handles
    for layer in model.model.layers:
        for mod in (layer.self_attn.o_proj, layer.mlp.down_proj):
            handles.append(mod.register_forward_hook(
                lambda m, i, o: F.dropout(o, p, m.training)))
    return handles


@torch.no_grad()
def eval_loss(model, stream, ctx, batch, device, max_windows=None, autocast=True):
    model.eval()
    n = (len(stream) - 1) // ctx
    if max_windows:
        n = min(n, max_windows)
    starts = torch.arange(n, device=device) * ctx
    ar = torch.arange(ctx + 1, device=device)
    tot, cnt = 0.0, 0
    for i in range(0, n, batch):
        w = stream[(starts[i:i + batch, None] + ar)]
        x, y = w[:, :-1], w[:, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1), reduction="sum")
        tot += loss.item()
        cnt += y.numel()
    model.train()
    return tot / cnt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data/corpus")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--inter", type=int, default=704)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64, help="sequences per step")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--epochs", type=float, default=11.0, help="passes over train.txt (sets the step count)")
    ap.add_argument("--steps", type=int, default=0, help="fixed step count (overrides --epochs and the time guard)")
    ap.add_argument("--train-seconds", type=float, default=270.0,
                    help="time guard: with --steps 0, cut the planned steps to fit (decided at step 60)")
    ap.add_argument("--log-every", type=int, default=20)
    ap.add_argument("--evals", type=int, default=32, help="held-out evaluations during training")
    ap.add_argument("--parity-lines", type=int, default=300)
    args = ap.parse_args()

    t_start = time.time()
    out = args.out
    hf_dir = os.path.join(out, "hf")
    fx_dir = os.path.join(out, "fixtures")
    os.makedirs(hf_dir, exist_ok=True)
    os.makedirs(fx_dir, exist_ok=True)
    meta = {"args": vars(args), "argv": sys.argv,
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "tokenizers": tokenizers.__version__, "python": sys.version.split()[0]}}
    assert torch.cuda.is_available(), "needs a CUDA GPU"
    dev = torch.device("cuda")
    meta["gpu"] = torch.cuda.get_device_name(0)
    log("versions", meta["versions"], "gpu", meta["gpu"])

    seed_all(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False

    # ---- (a) tokenizer
    train_path = os.path.join(args.data, "train.txt")
    held_path = os.path.join(args.data, "heldout.txt")
    t0 = time.time()
    tok = train_tokenizer(train_path, args.vocab)
    save_tokenizer(tok, hf_dir)
    V = tok.get_vocab_size()
    log(f"tokenizer: vocab {V}, trained in {time.time() - t0:.1f}s")
    hf_tok = AutoTokenizer.from_pretrained(hf_dir)
    chk = hf_tok("Hello world").input_ids
    assert chk[0] == 0, chk
    chat = hf_tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    log("reloaded tokenizer:", type(hf_tok).__name__, chk, repr(chat))
    meta["tokenizer"] = {"vocab": V, "seconds": round(time.time() - t0, 2), "chat_template_check": chat}

    train_lines = read_lines(train_path)
    held_lines = read_lines(held_path)
    t0 = time.time()
    train_stream = encode_stream(tok, train_lines)
    held_stream = encode_stream(tok, held_lines)
    n_bytes_train = sum(len(s.encode("utf-8")) for s in train_lines)
    log(f"tokens: train {len(train_stream)} held-out {len(held_stream)} "
        f"({n_bytes_train / len(train_stream):.2f} bytes/token) in {time.time() - t0:.1f}s")
    meta["data"] = {"train_lines": len(train_lines), "heldout_lines": len(held_lines),
                    "train_tokens": len(train_stream), "heldout_tokens": len(held_stream),
                    "train_bytes_per_token": n_bytes_train / len(train_stream)}
    train_stream = train_stream.to(dev)
    held_stream = held_stream.to(dev)

    # ---- (b) model + training
    config = LlamaConfig(
        vocab_size=V, hidden_size=args.hidden, intermediate_size=args.inter,
        num_hidden_layers=args.layers, num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads, max_position_embeddings=512,
        rope_theta=10000.0, rms_norm_eps=1e-5, hidden_act="silu",
        tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
        attention_dropout=0.0, initializer_range=0.02,
        bos_token_id=0, eos_token_id=0, pad_token_id=0,
    )
    seed_all(args.seed)
    model = LlamaForCausalLM(config).to(dev)
    model.generation_config.pad_token_id = 0
    n_params = sum(p.numel() for p in model.parameters())
    n_embed = model.model.embed_tokens.weight.numel() + model.lm_head.weight.numel()
    log(f"model: {n_params} parameters ({n_params - n_embed} without embeddings/lm_head)")
    meta["params"] = {"total": n_params, "non_embedding": n_params - n_embed}
    hooks = add_residual_dropout(model, args.dropout)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)

    ctx, B = args.ctx, args.batch
    windows_per_epoch = (len(train_stream) - ctx - 1) // ctx
    steps_per_epoch = windows_per_epoch // B
    planned = args.steps if args.steps > 0 else max(1, int(round(args.epochs * steps_per_epoch)))
    total_steps = planned
    log(f"plan: {steps_per_epoch} steps/epoch of {B}x{ctx} tokens, {planned} steps")

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        prog = min(1.0, (step - args.warmup) / max(1, total_steps - args.warmup))
        lo = args.lr * args.min_lr_frac
        return lo + 0.5 * (args.lr - lo) * (1 + math.cos(math.pi * prog))

    g = torch.Generator(device="cpu")
    g.manual_seed(args.seed)
    ar = torch.arange(ctx + 1, device=dev)

    def batches():
        epoch = 0
        while True:
            off = int(torch.randint(0, ctx, (1,), generator=g))
            n = (len(train_stream) - off - 1) // ctx
            starts = off + torch.randperm(n, generator=g) * ctx
            for i in range(0, n - B + 1, B):
                yield epoch, starts[i:i + B].to(dev)
            epoch += 1

    csv_path = os.path.join(out, "loss.csv")
    csv_f = open(csv_path, "w", newline="")
    cw = csv.writer(csv_f)
    cw.writerow(["step", "tokens", "epoch", "lr", "train_loss", "heldout_loss", "elapsed_s"])
    model.train()
    it = batches()
    loss_buf = []
    best = (float("inf"), -1, None)
    t_train = time.time()
    step = 0
    eval_every = None
    tokens_seen = 0
    last_hl = None
    while step < total_steps:
        epoch, st = next(it)
        w = train_stream[st[:, None] + ar]
        x, y = w[:, :-1], w[:, 1:]
        lr = lr_at(step)
        for grp in opt.param_groups:
            grp["lr"] = lr
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.float().reshape(-1, V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens_seen += y.numel()
        loss_buf.append(loss.detach())  # mean taken at log time: no sync per step
        if step == 20:
            torch.cuda.synchronize()
            t20 = time.time()
        if step == 60 and args.steps <= 0:
            torch.cuda.synchronize()
            per = (time.time() - t20) / 40
            fit = int(args.train_seconds / (per * 1.08))
            if fit < total_steps:
                log(f"time guard: {per * 1000:.1f} ms/step, cutting {total_steps} -> {fit} steps")
                total_steps = fit
            else:
                log(f"time guard: {per * 1000:.1f} ms/step, {total_steps} steps fit "
                    f"(~{per * total_steps:.0f}s)")
        if eval_every is None and step >= 60:
            eval_every = max(args.log_every, (total_steps // args.evals) // args.log_every * args.log_every)
        do_log = step % args.log_every == 0 or step == total_steps
        if do_log:
            tl = torch.stack(loss_buf).mean().item()
            loss_buf = []
            hl = ""
            if (eval_every and step % eval_every == 0) or step == total_steps:
                hl = eval_loss(model, held_stream, ctx, 256, dev)
                last_hl = hl
                if hl < best[0]:
                    best = (hl, step, {k: v.detach().clone() for k, v in model.state_dict().items()})
            el = time.time() - t_train
            cw.writerow([step, tokens_seen, epoch, f"{lr:.6g}", f"{tl:.5f}",
                         f"{hl:.5f}" if hl != "" else "", f"{el:.2f}"])
            csv_f.flush()
            if hl != "" or step % (args.log_every * 10) == 0:
                log(f"step {step}/{total_steps} ep {epoch} lr {lr:.2e} train {tl:.4f}"
                    + (f" heldout {hl:.4f}" if hl != "" else "")
                    + f" {tokens_seen / el:,.0f} tok/s {el:.0f}s")
    torch.cuda.synchronize()
    train_secs = time.time() - t_train
    csv_f.close()
    final_hl = last_hl
    chosen = "final"
    if best[1] != step and best[0] < final_hl:
        model.load_state_dict(best[2])
        chosen = f"best (step {best[1]})"
    log(f"trained {step} steps, {tokens_seen} tokens in {train_secs:.1f}s "
        f"({tokens_seen / train_secs:,.0f} tok/s); final held-out {final_hl:.4f}, "
        f"best {best[0]:.4f} at step {best[1]}; saving {chosen}")
    for h in hooks:
        h.remove()
    train_eval = eval_loss(model, train_stream, ctx, 256, dev, max_windows=len(held_stream) // ctx)
    meta["training"] = {"steps": step, "steps_planned": planned, "tokens": tokens_seen,
                        "epochs": tokens_seen / len(train_stream), "seconds": round(train_secs, 1),
                        "tokens_per_s": round(tokens_seen / train_secs),
                        "final_train_loss_logged": float(tl),
                        "train_loss_eval_no_dropout": train_eval,
                        "heldout_loss_final_step": final_hl,
                        "heldout_loss_best": best[0], "best_step": best[1], "saved": chosen}

    # ---- (c) save bf16
    model = model.to(torch.bfloat16)
    model.save_pretrained(hf_dir, safe_serialization=True)
    del model, best
    torch.cuda.empty_cache()
    log("saved", sorted(os.listdir(hf_dir)))

    # held-out loss of the saved checkpoint, weights upcast to float32
    m32 = LlamaForCausalLM.from_pretrained(hf_dir, torch_dtype=torch.float32).to(dev)
    hl32 = eval_loss(m32, held_stream, ctx, 128, dev, autocast=False)
    tr32 = eval_loss(m32, train_stream, ctx, 128, dev, max_windows=len(held_stream) // ctx, autocast=False)
    meta["saved_checkpoint"] = {"heldout_loss_f32": hl32, "heldout_ppl_f32": math.exp(hl32),
                                "train_loss_f32_first_windows": tr32, "ctx": ctx,
                                "note": "non-overlapping windows of ctx tokens, all positions scored"}
    log(f"saved checkpoint (bf16 weights, f32 math): held-out loss {hl32:.4f} ppl {math.exp(hl32):.2f}; "
        f"train(subset) {tr32:.4f}")
    del m32
    torch.cuda.empty_cache()

    # ---- (d) oracle on CPU, float32, eager attention
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    cpu = LlamaForCausalLM.from_pretrained(hf_dir, torch_dtype=torch.float32, attn_implementation="eager")
    cpu.eval()
    sdpa = LlamaForCausalLM.from_pretrained(hf_dir, torch_dtype=torch.float32, attn_implementation="sdpa")
    sdpa.eval()
    hf_tok = AutoTokenizer.from_pretrained(hf_dir)
    prompts = list(ORACLE_PROMPTS)
    for ln in held_lines:
        n = len(hf_tok(ln, add_special_tokens=False).input_ids)
        if 14 <= n <= 22:
            prompts[1] = ln
            break
    assert prompts[1] is not None
    records = []
    with open(os.path.join(fx_dir, "oracle_logits.bin"), "wb") as fb:
        fb.write(b"PLOR")
        fb.write(struct.pack("<III", 1, len(prompts), V))
        for p in prompts:
            ids = hf_tok(p).input_ids  # with the leading <|endoftext|> (BOS)
            with torch.no_grad():
                lg = cpu(input_ids=torch.tensor([ids])).logits[0].float().contiguous()
                lg2 = sdpa(input_ids=torch.tensor([ids])).logits[0].float()
            fb.write(struct.pack("<I", len(ids)))
            fb.write(struct.pack(f"<{len(ids)}i", *ids))
            flat = lg.reshape(-1).tolist()
            fb.write(struct.pack(f"<{len(flat)}f", *flat))
            top = torch.topk(lg, 5, dim=-1)
            records.append({"prompt": p, "ids": ids, "n_tokens": len(ids),
                            "argmax": lg.argmax(-1).tolist(),
                            "top5_ids_last": top.indices[-1].tolist(),
                            "top5_logits_last": [round(v, 5) for v in top.values[-1].tolist()],
                            "max_abs_diff_eager_vs_sdpa": float((lg - lg2).abs().max()),
                            "greedy_next_text": hf_tok.decode(lg.argmax(-1).tolist())})
            log(f"oracle: {len(ids)} tokens, eager-vs-sdpa max|d| {records[-1]['max_abs_diff_eager_vs_sdpa']:.2e}: {p!r}")
    with open(os.path.join(fx_dir, "oracle_prompts.json"), "w", encoding="utf-8") as f:
        json.dump({"format": "see README.md", "vocab": V, "dtype": "float32", "device": "cpu",
                   "attn_implementation": "eager", "torch_dtype_load": "float32 (bf16 weights upcast)",
                   "prompts": records}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    meta["oracle"] = [{k: r[k] for k in ("prompt", "n_tokens", "max_abs_diff_eager_vs_sdpa")} for r in records]

    # ---- (e) tokenizer parity
    rng = random.Random(args.seed)
    pick = sorted(rng.sample(range(len(held_lines)), min(args.parity_lines, len(held_lines))))
    cases = [("heldout", held_lines[i]) for i in pick]
    cases += [("hard", s) for s in hard_cases()]
    with open(os.path.join(fx_dir, "tokenizer_parity.jsonl"), "w", encoding="utf-8") as f:
        for kind, s in cases:
            e = tok.encode(s, add_special_tokens=False)
            if hf_tok(s, add_special_tokens=False).input_ids != e.ids:
                log(f"WARNING: PreTrainedTokenizerFast differs from Tokenizer on {s!r}")
            if tok.decode(e.ids, skip_special_tokens=False) != s:
                log(f"WARNING: decode does not round-trip {s!r}")
            f.write(json.dumps({"kind": kind, "text": s, "ids": e.ids, "tokens": e.tokens},
                               ensure_ascii=False) + "\n")
    meta["parity"] = {"heldout_lines": len(pick), "hard_cases": len(cases) - len(pick)}
    log(f"parity fixtures: {len(pick)} held-out lines + {len(cases) - len(pick)} hard cases")

    # ---- (f) samples
    with open(os.path.join(out, "samples.txt"), "w", encoding="utf-8") as f:
        f.write(f"# model {hf_dir}: float32 on CPU; sampled with temperature 0.8, top_k 0, top_p 1.0, "
                f"torch.manual_seed({args.seed}) before each prompt; max_new_tokens 80\n\n")
        for mode in ("sample", "greedy"):
            for p in SAMPLE_PROMPTS:
                enc = hf_tok(p, return_tensors="pt")
                torch.manual_seed(args.seed)
                kw = dict(do_sample=True, temperature=0.8, top_k=0, top_p=1.0) if mode == "sample" \
                    else dict(do_sample=False, repetition_penalty=1.0)
                with torch.no_grad():
                    outp = cpu.generate(**enc, max_new_tokens=80, eos_token_id=0, pad_token_id=0, **kw)
                text = hf_tok.decode(outp[0], skip_special_tokens=True)
                f.write(f"[{mode}] {text}\n\n")
                log(f"[{mode}] {text}")

    write_fixture_readme(fx_dir, V)
    meta["total_seconds"] = round(time.time() - t_start, 1)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2, ensure_ascii=False)
        f.write("\n")
    log(f"done in {meta['total_seconds']}s")


def hard_cases():
    return [
        "", " ", "  ", "\t", "\n", "\n\n", "\r\n",
        "caf\u00e9", "cafe\u0301",  # NFC / decomposed
        "na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m", "nai\u0308ve re\u0301sume\u0301 A\u030angstro\u0308m",
        "Stra\u00dfe \u00fcber \u00c9cole", "Strasse u\u0308ber E\u0301cole",
        "e\u0301\u0302\u0323 a\u0300\u0301\u0302\u0303\u0304 Z\u0324\u0354\u0367\u0311\u0313a\u0308\u0356\u032dl",
        "Hello  world", "Hello   world    !", "a\tb\t\tc", "line one\nline two\n\nline four",
        "   leading spaces", "trailing spaces   ", " \t mixed \n whitespace \t ",
        "x\u00a0y nbsp", "zero\u200bwidth\u200djoiner",
        "0", "42", "1234567890", "12345678901234567890", "3.14159 2,718,281 1e-9 0x1F",
        "In 1984, 1,000,000 people paid $9.99 (or 12%).", "Call 555-0123 at 10:30pm on 2024-05-14.",
        "I love pizza \U0001F355\U0001F355!", "\U0001F469\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466 family",
        "flags \U0001F1FA\U0001F1F8\U0001F1EF\U0001F1F5", "\u2764\ufe0f \U0001F44D\U0001F3FD \u263a",
        "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8", "\u4e2d\u6587\u5b57\u7b26\u6d4b\u8bd5\u3002",
        "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8", "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
        "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac", "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
        "don't I'm we'll they've it's she'd you're", "DON'T I'M WE'LL THEY'VE", "rock 'n' roll 'quoted'",
        "\u201csmart quotes\u201d \u2018single\u2019 \u00abguillemets\u00bb \u2014 dash \u2013 en\u2026",
        "!!!???... --- ((()))", "hello,world;foo:bar", "e-mail: someone@example.com http://x.org/a?b=c",
        "antidisestablishmentarianism supercalifragilisticexpialidocious",
        "def f(x):\n    return x ** 2\n", "    indented code\n\tand tab",
        "The quick brown fox jumps over the lazy dog.",
        "<|endoftext|>", "text <|endoftext|> more", "<|im_start|>user\nHi<|im_end|>\n",
    ]


def write_fixture_readme(fx_dir, V):
    txt = f"""# Oracle fixtures for plumb's demo model

Made by tools/train/train.py on the GPU machine; the model is the Hugging Face
directory `hf/` next to this folder (bf16 safetensors, vocab {V}).

## oracle_logits.bin — reference logits (little-endian)

    char[4]  magic "PLOR"
    u32      version (1)
    u32      n_prompts
    u32      vocab
    per prompt:
      u32    n_tokens
      i32    ids[n_tokens]                     token ids fed to the model
      f32    logits[n_tokens * vocab]          row-major: row t = logits after ids[0..t]

Produced by `LlamaForCausalLM.from_pretrained(hf, torch_dtype=torch.float32,
attn_implementation="eager")` on the CPU: the bf16 weights are upcast exactly
and all math is float32.  `ids` begin with `<|endoftext|>` (id 0), the BOS the
tokenizer adds (its post-processor; every training document followed one).
oracle_prompts.json has the prompt texts, ids, per-position argmax, the top-5
of the last position, and the eager-vs-sdpa max abs difference.

## tokenizer_parity.jsonl — tokenizer parity

One JSON object per line: `{{"kind": "heldout"|"hard", "text": ..., "ids": [...],
"tokens": [...]}}`.  `ids` = `Tokenizer.encode(text, add_special_tokens=False)`
with the trained tokenizer (hf/tokenizer.json): no BOS added, no normalizer.
Note the last hard cases contain special-token strings (`<|endoftext|>`,
`<|im_start|>`, `<|im_end|>`) in the text: the `tokenizers` library matches
them as special tokens (ids 0, 1, 2) even with add_special_tokens=False.
`tokens` are the byte-level token strings (GPT-2 byte-to-unicode mapping).
"""
    with open(os.path.join(fx_dir, "README.md"), "w") as f:
        f.write(txt)


if __name__ == "__main__":
    main()
