"""Qwen3's non-thinking mode in `render_hermes(..., empty_think=True)`, token for token against
TRL's Qwen3 training template (vendored in tests/fixtures, with its source and license on the first
line).

TRL's training template writes a think block into every assistant turn (empty,
`<think>\\n\\n</think>\\n\\n`, when the turn has no reasoning) and, with `enable_thinking=False`,
ends the generation prompt with the same empty block. With `empty_think=True` envsynth renders the
same text and the same token ids, conversations and generation prompts alike; the token trace of an
RL episode (`TokenPolicy(empty_think=True)`) is that text too. The default rendering differs from
TRL's exactly where a turn has no reasoning, and agrees where every turn has reasoning.
"""
import asyncio, hashlib
from pathlib import Path
import pytest
from envsynth.formats import EMPTY_THINK, IM_END, parse_hermes, render_assistant_turn, render_hermes
from envsynth.schema import Tool, ToolCall, assistant, system, tool_message, user

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / 'tests' / 'fixtures' / 'trl_qwen3_training.jinja'
# of the file in the trl 1.16.0 wheel
TEMPLATE_SHA256 = '1d944ff8f268b611abb296cdd24d0f51981eef1c8647ac321c3a0258f61eb6c9'

@pytest.fixture(scope='module')
def trl_template() -> str:
    header, body = TEMPLATE.read_text().split('\n', 1)
    assert 'trl 1.16.0' in header and hashlib.sha256(body.encode()).hexdigest() == TEMPLATE_SHA256
    return body

@pytest.fixture(scope='module')
def tok(tmp_path_factory):
    from transformers import AutoTokenizer
    from envsynth.local_models import build_tiny_qwen3
    folder = build_tiny_qwen3(tmp_path_factory.mktemp('tiny') / 'tiny-qwen3')
    return AutoTokenizer.from_pretrained(folder)

search = Tool.parse({'name': 'search_flights', 'description': 'Search flights to a city.',
                     'parameters': {'type': 'object', 'properties': {'city': {'type': 'string'}},
                                    'required': ['city']}})
book = Tool.parse({'name': 'book_flight', 'description': 'Book a flight.',
                   'parameters': {'type': 'object', 'properties': {'flight': {'type': 'string'},
                                                                   'seats': {'type': 'integer'}}}})

def conversations(think) -> dict[str, tuple[list, list]]:
    "(messages, tools) by name; `think(k)` is the reasoning of the k-th assistant turn (or None)."
    c = [ToolCall.make('search_flights', {'city': 'Lyon'}, index=0),
         ToolCall.make('search_flights', {'city': 'Nice'}, index=1)]
    b = ToolCall.make('book_flight', {'flight': 'AF12', 'seats': 2})
    u = ToolCall.make('search_flights', {'city': 'Zürich «été»'})
    return {
        'parallel_calls_two_user_turns': ([
            system('You book flights.'), user('Flights to Lyon or Nice?'),
            assistant(tool_calls=c, reasoning=think(0)),
            tool_message(c[0], '[]'), tool_message(c[1], '["AF12"]'),
            assistant('Only AF12, to Nice. Book it?', reasoning=think(1)), user('Yes, two seats.'),
            assistant('Booking now.', tool_calls=[b], reasoning=think(2)),
            tool_message(b, '{"ok": true}'),
            assistant('Booked AF12 for two.', reasoning=think(3))], [search, book]),
        'no_system_prompt': ([
            user('Any flight to Zürich?'), assistant(tool_calls=[u], reasoning=think(0)),
            tool_message(u, '{"error": "none"}'),
            assistant('None, sorry: «été» is full.', reasoning=think(1))], [search]),
        'no_tools': ([system('Be brief.'), user('Hi'), assistant('Hello.', reasoning=think(0)),
                      user('Bye'), assistant('Bye.', reasoning=think(1))], []),
        'ends_with_a_tool_result': ([user('Search Lyon.'),
                                     assistant(tool_calls=[c[0]], reasoning=think(0)),
                                     tool_message(c[0], '[]')], [search]),
    }

KINDS = {'without': lambda k: None, 'mixed': lambda k: None if k % 2 else f'Step {k}.',
         'with': lambda k: f'Step {k}: think it over.'}
CASES = [(kind, name) for kind in KINDS for name in sorted(conversations(KINDS[kind]))]

def trl(tok, template, messages, tools, **kwargs) -> str:
    return tok.apply_chat_template([m.to_openai() for m in messages],
                                   tools=[t.to_openai() for t in tools] or None,
                                   chat_template=template, tokenize=False, **kwargs)

def ids(tok, text: str) -> list[int]: return tok(text, add_special_tokens=False)['input_ids']

@pytest.mark.parametrize('kind,name', CASES)
def test_empty_think_is_trls_training_text_token_for_token(kind, name, tok, trl_template):
    messages, tools = conversations(KINDS[kind])[name]
    ours = render_hermes(messages, tools, empty_think=True)
    theirs = trl(tok, trl_template, messages, tools)
    assert ours == theirs
    trl_ids = tok.apply_chat_template([m.to_openai() for m in messages],
                                      tools=[t.to_openai() for t in tools] or None,
                                      chat_template=trl_template, tokenize=True, return_dict=True)
    assert ids(tok, ours) == list(trl_ids['input_ids'])
    n_quiet = sum(m.role == 'assistant' and not m.reasoning_content for m in messages)
    assert ours.count(EMPTY_THINK) == n_quiet
    plain = render_hermes(messages, tools)
    assert (plain == theirs) == (n_quiet == 0)      # differs exactly at turns without reasoning

@pytest.mark.parametrize('kind,name', CASES)
def test_generation_prompts_agree_in_non_thinking_mode(kind, name, tok, trl_template):
    "Wherever a turn is asked for, TRL's prompt (enable_thinking=False) is ours with empty_think."
    messages, tools = conversations(KINDS[kind])[name]
    for k, m in enumerate(messages):
        if m.role != 'assistant': continue
        ours = render_hermes(messages[:k], tools, add_generation_prompt=True, empty_think=True)
        assert ours == trl(tok, trl_template, messages[:k], tools, add_generation_prompt=True,
                           enable_thinking=False)
        assert ours.endswith('<|im_start|>assistant\n' + EMPTY_THINK)
        # prefix-preserving: the finished conversation extends the prompt by the turn's own text
        whole = render_hermes(messages[:k + 1], tools, empty_think=True)
        turn = render_assistant_turn(m, empty_think=True) + IM_END + '\n'
        if not m.reasoning_content: assert whole == ours + turn.removeprefix(EMPTY_THINK)
        else: assert whole == ours.removesuffix(EMPTY_THINK) + turn

@pytest.mark.parametrize('name', sorted(conversations(KINDS['mixed'])))
def test_empty_think_round_trips_through_the_parser(name):
    messages, tools = conversations(KINDS['mixed'])[name]
    text = render_hermes(messages, tools, empty_think=True)
    back, back_tools = parse_hermes(text)
    assert render_hermes(back, back_tools, empty_think=True) == text
    thoughts = lambda ms: [m.reasoning_content for m in ms if m.role == 'assistant']
    assert thoughts(back) == thoughts(messages)

def test_an_rl_episode_in_non_thinking_mode_is_trls_text(tok, trl_template):
    "The token trace of a TokenPolicy episode with empty_think is TRL's text of the episode."
    from envsynth.data import rl_row
    from envsynth.env_library import load_curated
    from envsynth.train.rl import TokenPolicy, run_row_episode
    bank = load_curated('bank'); task = bank.tasks['bank-lost-card']
    texts = [render_assistant_turn(assistant(tool_calls=[a.to_tool_call(i)]))
             for i, a in enumerate(task.gold_actions)] + ['Done.']
    turns = iter(texts)
    async def generate(prompt_ids, max_new_tokens):
        out = ids(tok, next(turns)) + [tok.convert_tokens_to_ids(IM_END)]
        return out, None
    policy = TokenPolicy(generate, tok, response_length=8192, empty_think=True)
    from envsynth.rewards import StateHashReward
    row = rl_row(task, bank.tools, data_source='tau2', system_prompt='You are a bank agent.', reward=StateHashReward())
    episode = asyncio.run(run_row_episode(row, policy, 'envsynth_astra'))
    assert episode.final_state_hash == task.gold_state_hash
    theirs = trl(tok, trl_template, episode.messages, episode.tools)
    assert policy.prompt_ids + policy.response_ids + ids(tok, '\n') == ids(tok, theirs)
    sampled = [t for t, m in zip(policy.response_ids, policy.response_mask) if m]
    sampled_text = tok.decode(sampled, skip_special_tokens=False)
    assert sampled_text == IM_END.join(texts) + IM_END      # the empty block is prompt, not sampled
    assert EMPTY_THINK not in sampled_text
