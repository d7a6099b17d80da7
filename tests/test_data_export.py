"""envsynth.data's SFT loss mask checked against TRL's Qwen3 training template.

TRL's `qwen3_training.jinja` (vendored in tests/fixtures, with its source and license on the first
line) marks assistant output with `{% generation %}`, and transformers turns that into a token mask
(`return_assistant_tokens_mask=True`). The same conversations go through `envsynth.data.tokenize_sft`
with the tiny local Qwen3 tokenizer, and the two are compared. The differences are intended, and
asserted exactly:

1. TRL's generation block ends after the `\\n` that follows `<|im_end|>`; envsynth stops at `<|im_end|>`
   (the model stops generating there, and verl's rollouts do not train on that newline). When every
   assistant turn has reasoning, the token ids are identical and TRL's mask is envsynth's mask plus
   exactly one token per assistant turn: the `\\n` token at `row.turn_ends[k]`.
2. TRL's training template always writes a think block, empty when the turn has no reasoning;
   `render_hermes` writes none. TRL's text is then envsynth's text with `<think>\\n\\n</think>\\n\\n`
   right after the header of each assistant turn without reasoning, and each supervised run of TRL is
   envsynth's (that block in front where inserted) plus the `\\n` of point 1.

Not covered, because the two renderers write them differently on purpose or the inputs cannot occur:
reasoning with leading or trailing spaces (TRL strips only newlines), content starting with newlines
(TRL strips them), and tool names that need JSON escaping (envsynth's tool names never do).
"""
import hashlib
from pathlib import Path
import pytest
from envsynth.data import ASSISTANT_HEADER, sft_text, tokenize_sft
from envsynth.schema import Tool, ToolCall, Trajectory, assistant, system, tool_message, user

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / 'tests' / 'fixtures' / 'trl_qwen3_training.jinja'
TEMPLATE_SHA256 = '1d944ff8f268b611abb296cdd24d0f51981eef1c8647ac321c3a0258f61eb6c9'   # of the file in the trl 1.16.0 wheel
EMPTY_THINK = '<think>\n\n</think>\n\n'

@pytest.fixture(scope='module')
def trl_template() -> str:
    header, body = TEMPLATE.read_text().split('\n', 1)
    assert 'trl 1.16.0' in header and 'Apache-2.0' in header
    assert hashlib.sha256(body.encode()).hexdigest() == TEMPLATE_SHA256, 'the vendored template was changed'
    assert '{%- generation %}' in body
    return body

@pytest.fixture(scope='module')
def tok(tmp_path_factory):
    from transformers import AutoTokenizer
    from envsynth.local_models import build_tiny_qwen3
    return AutoTokenizer.from_pretrained(build_tiny_qwen3(tmp_path_factory.mktemp('tiny') / 'tiny-qwen3'))

search = Tool.parse({'name': 'search_flights', 'description': 'Search flights to a city.',
                     'parameters': {'type': 'object', 'properties': {'city': {'type': 'string'}}, 'required': ['city']}})
book = Tool.parse({'name': 'book_flight', 'description': 'Book a flight.',
                   'parameters': {'type': 'object', 'properties': {'flight': {'type': 'string'}, 'seats': {'type': 'integer'}}}})

def conversations(think) -> dict[str, Trajectory]:
    "Test conversations; `think(k)` is the reasoning of the k-th assistant turn (None for none)."
    c = [ToolCall.make('search_flights', {'city': 'Lyon'}, index=0), ToolCall.make('search_flights', {'city': 'Nice'}, index=1)]
    b = ToolCall.make('book_flight', {'flight': 'AF12', 'seats': 2})
    u = ToolCall.make('search_flights', {'city': 'Zürich «été»'})
    return {
        'parallel_calls_two_user_turns': Trajectory(tools=[search, book], messages=[
            system('You book flights.'), user('Flights to Lyon or Nice?'), assistant(tool_calls=c, reasoning=think(0)),
            tool_message(c[0], '[]'), tool_message(c[1], '["AF12"]'),
            assistant('Only AF12, to Nice. Book it?', reasoning=think(1)), user('Yes, two seats.'),
            assistant('Booking now.', tool_calls=[b], reasoning=think(2)), tool_message(b, '{"ok": true}'),
            assistant('Booked AF12 for two.', reasoning=think(3))]),
        'no_system_prompt': Trajectory(tools=[search], messages=[
            user('Any flight to Zürich?'), assistant(tool_calls=[u], reasoning=think(0)), tool_message(u, '{"error": "none"}'),
            assistant('None, sorry: «été» is full.', reasoning=think(1))]),
        'no_tools': Trajectory(messages=[
            system('Be brief.'), user('Hi'), assistant('Hello.', reasoning=think(0)), user('Bye'), assistant('Bye.', reasoning=think(1))]),
        'ends_with_a_tool_result': Trajectory(tools=[search], messages=[
            user('Search Lyon.'), assistant(tool_calls=[c[0]], reasoning=think(0)), tool_message(c[0], '[]')]),
    }

def trl_render(tok, template: str, traj: Trajectory) -> tuple[list[int], list[int]]:
    out = tok.apply_chat_template([m.to_openai() for m in traj.messages], tools=[t.to_openai() for t in traj.tools] or None,
                                  chat_template=template, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    return list(out['input_ids']), list(out['assistant_masks'])

def runs(tok, ids: list[int], mask: list[int]) -> list[str]:
    "The decoded runs of consecutive masked tokens."
    out, cur = [], []
    for i, m in zip(ids + [None], mask + [0]):
        if m: cur.append(i)
        elif cur: out.append(tok.decode(cur)); cur = []
    return out

WITH_REASONING = conversations(lambda k: f'Step {k}: think it over.')
WITHOUT_REASONING = conversations(lambda k: None)
MIXED = {n: t for n, t in conversations(lambda k: None if k % 2 else f'Step {k}.').items()    # turns with and without
         if len({bool(m.reasoning_content) for m in t.messages if m.role == 'assistant'}) == 2}

@pytest.mark.parametrize('name', sorted(WITH_REASONING))
def test_same_ids_and_mask_up_to_the_newline_after_im_end(name, tok, trl_template):
    traj = WITH_REASONING[name]
    row = tokenize_sft(traj, tok)
    ids, trl_mask = trl_render(tok, trl_template, traj)
    assert ids == row.input_ids
    ours = [int(l != -100) for l in row.labels]
    assert all(l == i for l, i, m in zip(row.labels, row.input_ids, ours) if m)
    newline = tok.convert_tokens_to_ids(tok.tokenize('\n'))
    expected = list(ours)
    for end in row.turn_ends:
        assert [ids[end]] == newline and ours[end] == 0       # the token after <|im_end|>: '\n', context for envsynth
        expected[end] = 1
    assert trl_mask == expected
    assert sum(trl_mask) - sum(ours) == len(row.turns) == sum(m.role == 'assistant' for m in traj.messages)

@pytest.mark.parametrize('name', sorted(WITHOUT_REASONING) + [f'mixed:{n}' for n in sorted(MIXED)])
def test_trl_adds_an_empty_think_block_to_turns_without_reasoning(name, tok, trl_template):
    traj = MIXED[name.removeprefix('mixed:')] if name.startswith('mixed:') else WITHOUT_REASONING[name]
    st, row = sft_text(traj), tokenize_sft(traj, tok)
    ids, trl_mask = trl_render(tok, trl_template, traj)
    inserted = {i: EMPTY_THINK if not traj.messages[i].reasoning_content else '' for i in st.turns}
    assert any(inserted.values())
    want_text, pos = '', 0
    for (a, _), i in zip(st.spans, st.turns):
        assert st.text[a - len(ASSISTANT_HEADER):a] == ASSISTANT_HEADER
        want_text += st.text[pos:a] + inserted[i]; pos = a
    want_text += st.text[pos:]
    assert tok.decode(ids) == want_text
    assert ids == tok(want_text, add_special_tokens=False)['input_ids']
    ours = runs(tok, row.input_ids, [int(l != -100) for l in row.labels])
    assert ours == [st.text[a:b] for a, b in st.spans]
    assert runs(tok, ids, trl_mask) == [inserted[i] + o + '\n' for i, o in zip(st.turns, ours)]

def test_the_reasoning_of_earlier_turns_is_kept_by_default(tok, trl_template):
    "With reasoning='all' (the default) every turn keeps its think block, as in TRL's training template."
    traj = WITH_REASONING['parallel_calls_two_user_turns']
    trl_text = tok.decode(trl_render(tok, trl_template, traj)[0])
    assert trl_text.count('<think>') == sft_text(traj).text.count('<think>') == 4
    late = sft_text(traj, reasoning='after_last_user')
    assert late.text.count('<think>') == 2 and late.context_only == [2, 5] and late.turns == [7, 9]
