#!/usr/bin/env python3
"""gguf_random.py — writes a small llama-architecture GGUF with seeded random weights, the model
latscope's engine tests serve with llama-server (no model is downloadable on these machines).

Usage: gguf_random.py --gguf-py DIR OUT.gguf [--vocab N] [--embd N] [--layers N] [--ff N]
                      [--heads N] [--ctx N] [--seed N]
DIR is llama.cpp's gguf-py (in the engine's source tree): the format is written by llama.cpp's
own writer, not by hand. Needs Debian's python3-numpy and python3-yaml.

Two things make a random model usable as a server's model (docs/engine.md):
- the output projections (attn_output, ffn_down) are scaled by 1/sqrt(2L): with 0.02 everywhere
  the residual stream of a deep model blows up and the server emits nothing;
- tokens that are not plain text (<unk>, <s>, </s>, the <0xXX> byte tokens) can never be sampled:
  an empty piece is a request with no first token, and a lone byte of a UTF-8 sequence is held
  back by the server and merged into a later frame. Dimension 0 of the residual stream is a
  constant (the embeddings carry it, no layer writes it), so after the final RMS norm it is
  positive for every position, and those tokens' output rows carry a large negative weight
  there: a bias no hidden state can overcome. EOS can never be sampled, so every request runs
  to its max_tokens.
"""
import argparse
import math
import string
import sys

SPACE = "\u2581"  # SentencePiece's word boundary


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--gguf-py", required=True)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--embd", type=int, default=256)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--ff", type=int, default=512)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ctx", type=int, default=4096)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    if a.vocab < 300 or a.vocab > 4096:
        p.error(f"--vocab {a.vocab}: 300..4096 (259 special and byte tokens come first)")
    if a.embd % a.heads or a.embd < 16 or a.layers < 1 or a.ff < 16:
        p.error(f"--embd {a.embd} --heads {a.heads} --layers {a.layers} --ff {a.ff}: "
                "embd a multiple of heads, embd and ff >= 16, layers >= 1")
    return a


def vocabulary(n, token_type):
    """<unk>, <s>, </s>, 256 byte tokens, then text pieces (none empty), n in all."""
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [token_type.UNKNOWN, token_type.CONTROL, token_type.CONTROL]
    types += [token_type.BYTE] * 256
    first_text = len(toks)
    pieces = [SPACE] + [c for c in string.printable[:94]]  # every printable ASCII but space
    pieces += [SPACE + c for c in string.ascii_lowercase]
    pieces += [a + b for a in string.ascii_lowercase for b in string.ascii_lowercase]
    pieces += [SPACE + a + b for a in string.ascii_lowercase for b in string.ascii_lowercase]
    toks += pieces[: n - len(toks)]
    types += [token_type.NORMAL] * (len(toks) - first_text)
    # SentencePiece merges the pair with the highest score: longer pieces first.
    scores = [0.0] * first_text + [float(len(t)) - i * 1e-4 for i, t in enumerate(toks[first_text:])]
    return toks, types, scores, first_text


def weights(a, np, first_text):
    rng = np.random.default_rng(a.seed)
    d, ff, L, V = a.embd, a.ff, a.layers, a.vocab
    out_scale = 0.02 / math.sqrt(2 * L)

    def w(shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    t = {}
    emb = w((V, d))
    emb[:, 0] = 1.0  # the constant dimension (module docstring)
    t["token_embd.weight"] = emb
    for i in range(L):
        t[f"blk.{i}.attn_norm.weight"] = np.ones(d, np.float32)
        t[f"blk.{i}.attn_q.weight"] = w((d, d))
        t[f"blk.{i}.attn_k.weight"] = w((d, d))
        t[f"blk.{i}.attn_v.weight"] = w((d, d))
        wo = w((d, d), out_scale)
        wo[0, :] = 0.0  # no layer writes the constant dimension
        t[f"blk.{i}.attn_output.weight"] = wo
        t[f"blk.{i}.ffn_norm.weight"] = np.ones(d, np.float32)
        t[f"blk.{i}.ffn_gate.weight"] = w((ff, d))
        t[f"blk.{i}.ffn_up.weight"] = w((ff, d))
        down = w((d, ff), out_scale)
        down[0, :] = 0.0
        t[f"blk.{i}.ffn_down.weight"] = down
    t["output_norm.weight"] = np.ones(d, np.float32)
    out = w((V, d), 0.1)
    out[:, 0] = 0.0
    out[:first_text, 0] = -1000.0  # never sampled (module docstring)
    t["output.weight"] = out
    return t


def main(argv):
    a = parse_args(argv)
    sys.path.insert(0, a.gguf_py)
    import numpy as np
    import gguf

    toks, types, scores, first_text = vocabulary(a.vocab, gguf.TokenType)
    g = gguf.GGUFWriter(a.out, "llama")
    g.add_name(f"latscope-random-v{a.vocab}-d{a.embd}-l{a.layers}-s{a.seed}")
    g.add_context_length(a.ctx)
    g.add_embedding_length(a.embd)
    g.add_block_count(a.layers)
    g.add_feed_forward_length(a.ff)
    g.add_head_count(a.heads)
    g.add_head_count_kv(a.heads)
    g.add_rope_dimension_count(a.embd // a.heads)
    g.add_layer_norm_rms_eps(1e-5)
    g.add_file_type(gguf.LlamaFileType.ALL_F32)
    g.add_vocab_size(a.vocab)
    g.add_tokenizer_model("llama")
    g.add_token_list(toks)
    g.add_token_scores(scores)
    g.add_token_types(types)
    g.add_unk_token_id(0)
    g.add_bos_token_id(1)
    g.add_eos_token_id(2)
    g.add_add_bos_token(True)
    g.add_add_eos_token(False)
    for name, arr in weights(a, np, first_text).items():
        g.add_tensor(name, arr)
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
