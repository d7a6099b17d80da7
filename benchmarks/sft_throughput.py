"""SFT throughput: `envsynth.train.sft.train_sft` against a plain transformers `Trainer` on the same rows, same model.

Two steps, so the data is made where envsynth and the curated environments are, and the training runs where the GPU is:

    python benchmarks/sft_throughput.py prepare --out runs/sft_bench            # tokenizer + SFT rows (CPU, ~1 min)
    python benchmarks/sft_throughput.py run --data runs/sft_bench [--epochs 2]  # on the GPU (or CPU, tiny)

`prepare` makes oracle trajectories of every curated environment's tasks (envsynth.train.curated_data), trains a
byte-level BPE tokenizer on them (envsynth.train.sft.build_tiny_qwen3_on) and writes the SFT rows (assistant-only
labels). `run` builds a random Qwen3 of the size asked for from that tokenizer, then trains it once per variant:

- `plain Trainer fp32`: the baseline a user writes by hand: `Trainer` + `DataCollatorForSeq2Seq`, default fp32.
- `plain Trainer bf16`: the same with `bf16=True`, to separate the dtype from the rest.
- `envsynth train_sft`: the `tiny-gpu` preset (bf16, padded batches, cosine schedule, checkpoint policy).
- `envsynth train_sft packed`: the same with `packing=True` (rows flattened into one sequence, no padding).

Every variant sees the same rows (the curated rows repeated `--repeat` times), the same batch, epochs, learning rate and
seed. tokens/s counts real (non-pad) tokens: epochs x tokens in the rows / wall time of the whole call (load, train,
save final weights). The first variant is preceded by an untimed warm-up run (CUDA context, kernels).
"""
from __future__ import annotations
import argparse, json, os, sys, time
from pathlib import Path


def prepare(out: Path, vocab: int) -> None:
    from envsynth.train.curated_data import oracle_trajectories
    from envsynth.train.sft import build_tiny_qwen3_on, sft_rows
    from envsynth.data import sft_text
    from transformers import AutoTokenizer
    trajs = oracle_trajectories()
    tok_dir = out / 'tokenizer'
    build_tiny_qwen3_on([sft_text(t).text for t in trajs], tok_dir, vocab_size=vocab, hidden_size=64, layers=1)
    for f in tok_dir.glob('model*.safetensors'): f.unlink()          # only the tokenizer travels; `run` builds the model
    (tok_dir / 'config.json').unlink(missing_ok=True)
    rows = sft_rows(trajs, AutoTokenizer.from_pretrained(tok_dir))
    with open(out / 'rows.jsonl', 'w') as f:
        for r in rows: f.write(json.dumps(r) + '\n')
    print(f'{len(trajs)} trajectories -> {len(rows)} rows, {sum(len(r["input_ids"]) for r in rows):,} tokens -> {out}')


def build_model(tok_dir: Path, out: Path, hidden: int, layers: int, heads: int, seed: int = 0) -> Path:
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM
    tok = AutoTokenizer.from_pretrained(tok_dir)
    torch.manual_seed(seed)
    cfg = Qwen3Config(vocab_size=len(tok), hidden_size=hidden, intermediate_size=3 * hidden, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=max(1, heads // 2), head_dim=hidden // heads,
                      max_position_embeddings=8192, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                      tie_word_embeddings=True)
    m = Qwen3ForCausalLM(cfg)
    m.save_pretrained(out); tok.save_pretrained(out)
    return out


def plain_trainer(rows, model_dir: Path, out: Path, epochs: float, batch: int, lr: float, bf16: bool, seed: int) -> dict:
    "The baseline: what a user writes with transformers alone."
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer, TrainingArguments
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    args = TrainingArguments(output_dir=str(out), per_device_train_batch_size=batch, num_train_epochs=epochs, learning_rate=lr,
                             lr_scheduler_type='cosine', warmup_steps=0.05, bf16=bf16, save_strategy='no', logging_steps=5,
                             report_to='none', seed=seed, data_seed=seed, remove_unused_columns=False, disable_tqdm=True,
                             dataloader_num_workers=0)
    rows = [{k: r[k] for k in ('input_ids', 'labels', 'attention_mask')} for r in rows]    # the collator pads only these
    trainer = Trainer(model=model, args=args, train_dataset=rows,
                      data_collator=DataCollatorForSeq2Seq(tok, padding=True, label_pad_token_id=-100))
    trainer.train(); trainer.save_model(str(out / 'final'))
    losses = [h['loss'] for h in trainer.state.log_history if 'loss' in h]
    return {'steps': trainer.state.global_step, 'first_loss': losses[0] if losses else None, 'last_loss': losses[-1] if losses else None}


def envsynth_trainer(rows, model_dir: Path, out: Path, epochs: float, batch: int, lr: float, packing: bool, seed: int, bf16: bool) -> dict:
    from envsynth.train.sft import train_sft
    r = train_sft(rows, model_dir, out, 'tiny-gpu', epochs=epochs, batch_size=batch, per_device_batch=batch, learning_rate=lr,
                  packing=packing, save_steps=10**9, seed=seed, bf16=bf16, logging_steps=5)
    return {'steps': r.steps, 'first_loss': r.first_loss, 'last_loss': r.last_loss}


def run(data: Path, work: Path, hidden: int, layers: int, heads: int, epochs: float, batch: int, lr: float, repeat: int, seed: int,
        variants: list[str]) -> list[dict]:
    import shutil, torch
    cuda = torch.cuda.is_available()
    base = [json.loads(l) for l in (data / 'rows.jsonl').read_text().splitlines() if l.strip()]
    rows = [dict(r, id=f'{r["id"]}#{i}') for i in range(repeat) for r in base]
    tokens = sum(len(r['input_ids']) for r in rows)
    work.mkdir(parents=True, exist_ok=True)
    model_dir = build_model(data / 'tokenizer', work / 'model', hidden, layers, heads, seed)
    n_params = sum(p.numel() for p in __import__('transformers').AutoModelForCausalLM.from_pretrained(model_dir).parameters())
    device = torch.cuda.get_device_name(0) if cuda else f'CPU ({os.cpu_count()} cores)'
    print(f'device: {device}; model: Qwen3, {n_params / 1e6:.1f}M parameters (hidden {hidden}, {layers} layers); '
          f'{len(rows)} rows ({len(base)} x {repeat}), {tokens:,} tokens per epoch, longest {max(len(r["input_ids"]) for r in rows)}; '
          f'{epochs} epochs, batch {batch}, lr {lr}', flush=True)
    todo = {
        'plain Trainer fp32 (baseline)': lambda out: plain_trainer(rows, model_dir, out, epochs, batch, lr, False, seed),
        'plain Trainer bf16': lambda out: plain_trainer(rows, model_dir, out, epochs, batch, lr, cuda, seed),
        'envsynth train_sft': lambda out: envsynth_trainer(rows, model_dir, out, epochs, batch, lr, False, seed, cuda),
        'envsynth train_sft packed': lambda out: envsynth_trainer(rows, model_dir, out, epochs, batch, lr, True, seed, cuda),
    }
    todo = {k: v for k, v in todo.items() if not variants or any(s in k for s in variants)}
    warm = rows[: max(batch * 4, 1)]
    plain_trainer(warm, model_dir, work / 'warmup', 1, batch, lr, cuda, seed)          # untimed: CUDA context, kernels
    results = []
    for i, (name, fn) in enumerate(todo.items()):
        out = work / f'variant{i}'
        shutil.rmtree(out, ignore_errors=True)
        if cuda: torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter(); r = fn(out)
        if cuda: torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        r |= {'variant': name, 'wall_s': wall, 'tokens_per_s': epochs * tokens / wall,
              'peak_gpu_gib': torch.cuda.max_memory_allocated() / 2**30 if cuda else None}
        results.append(r); print(json.dumps(r), flush=True)
    base_tps = results[0]['tokens_per_s']
    print(f'\n| variant | steps | wall s | tokens/s | vs baseline | first loss | last loss | peak GPU GiB |\n|---|---:|---:|---:|---:|---:|---:|---:|')
    for r in results:
        mem = f"{r['peak_gpu_gib']:.1f}" if r['peak_gpu_gib'] is not None else '-'
        print(f"| {r['variant']} | {r['steps']} | {r['wall_s']:.1f} | {r['tokens_per_s']:,.0f} | {r['tokens_per_s'] / base_tps:.2f}x | "
              f"{r['first_loss']:.3f} | {r['last_loss']:.3f} | {mem} |")
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('prepare'); p.add_argument('--out', type=Path, required=True); p.add_argument('--vocab', type=int, default=8192)
    r = sub.add_parser('run')
    r.add_argument('--data', type=Path, required=True); r.add_argument('--work', type=Path, default=None)
    r.add_argument('--hidden', type=int, default=768); r.add_argument('--layers', type=int, default=12); r.add_argument('--heads', type=int, default=12)
    r.add_argument('--epochs', type=float, default=2); r.add_argument('--batch', type=int, default=16); r.add_argument('--lr', type=float, default=1e-3)
    r.add_argument('--repeat', type=int, default=8); r.add_argument('--seed', type=int, default=0)
    r.add_argument('--variants', default='', help='comma-separated substrings of variant names (default: all)')
    r.add_argument('--json', type=Path, default=None, help='also write the results here')
    a = ap.parse_args(argv)
    if a.cmd == 'prepare': prepare(a.out, a.vocab); return 0
    res = run(a.data, a.work or a.data / 'work', a.hidden, a.layers, a.heads, a.epochs, a.batch, a.lr, a.repeat, a.seed,
              [v for v in a.variants.split(',') if v])
    if a.json: a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
