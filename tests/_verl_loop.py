"""What the verl-tier tests share: a tiny Qwen3 built here, a scripted stand-in for verl's server
manager, and `loop_on_row`, which builds the envsynth agent loop the way verl's AgentLoopWorker does
(YAML registry + hydra.utils.instantiate) and runs one RL row. Imported only under .venv-verl."""
import asyncio
from pathlib import Path

def build_tiny_model(folder: Path) -> Path:
    "A one-layer Qwen3 with a 600-token vocabulary trained on the bank oracle's text."
    from envsynth.env_library import load_curated
    from envsynth.formats import render_hermes
    from envsynth.rollout import rollout_env
    from envsynth.train.sft import build_tiny_qwen3_on
    oracle, = asyncio.run(rollout_env(load_curated('bank'), ['bank-lost-card']))
    return build_tiny_qwen3_on([render_hermes(oracle.messages, oracle.tools)] * 4, folder, vocab_size=600, layers=1)

class FakeServerManager:
    """verl's server_manager.generate, scripted: writes `texts` in turn, cut at `max_tokens` as
    vLLM's server cuts them; checks that each prompt extends the last context and records every
    call's sampling parameters. Past the end of `texts` it writes `then` (if given)."""
    def __init__(self, tokenizer, texts, then=None):
        self.tokenizer, self.texts, self.then, self.last = tokenizer, list(texts), then, None
        self.calls, self.params = [], []
    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput
        if self.last is not None: assert prompt_ids[:len(self.last)] == self.last, 'the context was re-rendered'
        text = self.texts[len(self.calls)] if len(self.calls) < len(self.texts) or self.then is None else self.then
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.convert_tokens_to_ids('<|im_end|>')]
        ids = ids[:sampling_params.get('max_tokens', len(ids))]
        self.calls.append(list(prompt_ids)); self.params.append(dict(sampling_params))
        self.last = list(prompt_ids) + ids
        return TokenOutput(token_ids=ids, log_probs=[-0.25] * len(ids))

def loop_on_row(model_dir, tmp_path, row: dict, texts, *, response_length=4096, env_root=None, sandbox=None,
                empty_think=False, preset='astra', then=None, **loop_kwargs):
    "Run the envsynth agent loop of `row['agent_name']` on `row` with scripted `texts`: (output, tokenizer, server)."
    import hydra
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from envsynth.train.rl import compose_verl_config, write_agent_loop_config
    cfg = compose_verl_config(preset, model=str(model_dir), agent_loop_config='x',
                              extra=[f'data.max_response_length={response_length}'])
    loops = write_agent_loop_config(Path(tmp_path) / 'loops.yaml', env_root, empty_think)
    entry = next(e for e in OmegaConf.load(loops) if e.name == row['agent_name'])
    tok = AutoTokenizer.from_pretrained(model_dir)
    server = FakeServerManager(tok, texts, then)
    async def main():
        loop = hydra.utils.instantiate(config=entry, trainer_config=DictConfigWrap(config=cfg), server_manager=server, tokenizer=tok,
                                       processor=None, hf_model_type='qwen3', dataset_cls=None, data_config=DictConfigWrap(cfg.data),
                                       tools=ToolListWrap([]), **({'sandbox': sandbox} if sandbox else {}), **loop_kwargs)
        return await loop.run({'temperature': 1.0}, raw_prompt=row['prompt'], extra_info=row['extra_info'],
                              reward_model=row['reward_model'], data_source=row['data_source'],
                              agent_name=row['agent_name'], index=0)
    return asyncio.run(main()), tok, server
