"""Row-level copy-on-write in `envsynth.envs` against a naive reference: random sequences of read and write calls
must give the same outputs, end state and hashes as deep-copying every table a write tool declares and validating
the whole table after each write (what the runtime did before rows were copied one at a time)."""
import copy, random
import pytest
from pydantic import Field
from envsynth.envs import (EnvRuntime, exception_result, Row, StateError, ToolFailure, Toolkit, WriteView, combine_hashes,
                           read_tool, table_hash, validate_table, write_tool)

class Item(Row):
    name: str
    qty: int = Field(ge=0)
    price: float
    tags: list[str] = []
    rank: int | bool = 1          # `1` and `True` are equal in Python but hash differently

class Note(Row):
    item_id: str
    text: str

class Shop(Toolkit):
    tables = {'items': Item, 'notes': Note}

    @read_tool
    def total(self, min_qty: int) -> dict:
        """Total stock.

        Args:
            min_qty: only items with at least this many
        """
        return {'qty': sum(r['qty'] for r in self.db.items.values() if r['qty'] >= min_qty), 'n': len(self.db.items)}

    @write_tool('items')
    def restock(self, item_id: str, qty: int) -> int:
        """Add stock.

        Args:
            item_id: the item
            qty: how many
        """
        row = self.row('items', item_id)
        row['qty'] += qty
        return row['qty']

    @write_tool('items')
    def tag_cheap(self, below: float, tag: str) -> list[str]:
        """Tag every item cheaper than `below` (scans the table, changes a few rows).

        Args:
            below: the price limit
            tag: the tag
        """
        hit = []
        for k, r in self.db.items.items():
            if r['price'] < below and tag not in r['tags']: r['tags'].append(tag); hit.append(k)
        return hit

    @write_tool('items', 'notes')
    def add_item(self, item_id: str, price: float) -> str:
        """Add an item (or replace it) and note it.

        Args:
            item_id: the new item's id
            price: its price
        """
        self.db.items[item_id] = {'name': item_id.upper(), 'qty': 1, 'price': price}
        self.db.notes[self.next_id('notes', 'N')] = {'item_id': item_id, 'text': 'added'}
        return item_id

    @write_tool('items')
    def remove(self, item_id: str) -> bool:
        """Remove an item.

        Args:
            item_id: the item
        """
        if item_id not in self.db.items: raise ToolFailure(f'no item {item_id!r}')
        return self.db.items.pop(item_id)['qty'] >= 0

    @write_tool('items')
    def noop_scan(self, item_id: str) -> int:
        """Read rows through the write view and put back an equal row.

        Args:
            item_id: the item
        """
        row = self.db.items.get(item_id)
        if row is not None: self.db.items[item_id] = dict(row)
        return sum(1 for _ in self.db.items.values())

    @write_tool('items')
    def break_row(self, item_id: str, qty: int) -> None:
        """Set a quantity without checking it (negative values leave the state invalid).

        Args:
            item_id: the item
            qty: the new quantity
        """
        self.row('items', item_id)['qty'] = qty

    @write_tool('notes')
    def pop_last_note(self) -> str:
        """Remove the newest note.

        Args:
        """
        return self.db.notes.popitem()[0] if len(self.db.notes) else ''

    @write_tool('items', 'notes')
    def reprice_after_scan(self, item_id: str, price: float) -> int:
        """Read an item, scan the table (writing integral prices back as ints and swapping rank `1` and `True`:
        equal in Python, another JSON type), then change the item read before the scan, and rename the notes.

        Args:
            item_id: the item
            price: its new price
        """
        row = self.db.items.get(item_id)
        for r in self.db.items.values():
            if r['price'] == int(r['price']): r['price'] = int(r['price'])
            if r['rank'] == 1: r['rank'] = True if type(r['rank']) is int else 1
        if row is not None: row['price'] = price
        for k, note in self.db.notes.items(): note['text'] = note['text'] if k.endswith('1') else 'renamed'
        return sum(1 for r in self.db.items.values() if r['qty'] > 0)

    @write_tool('items')
    def drop_most_expensive(self, qty: int) -> str:
        """Scan for the most expensive item, set its quantity, then delete another row found in the scan.

        Args:
            qty: the quantity to set (negative values leave the state invalid)
        """
        ranked = sorted(self.db.items.items(), key=lambda kv: (-kv[1]['price'], kv[0]))
        if len(ranked) < 2: return ''
        ranked[0][1]['qty'] = qty
        del self.db.items[ranked[1][0]]
        return ranked[1][0]

class NaiveDatabase:
    "The reference: tables are the base dicts until a write tool declares them, then deep copies."
    def __init__(self, base): self.base, self.own = base, {}
    def __getitem__(self, t): return self.own.get(t, self.base[t])
    def __getattr__(self, t): return self[t]

class NaiveRuntime:
    def __init__(self, seed): self.rt = EnvRuntime(Shop, seed)
    def open(self, seed=0):
        import datetime as dt
        from envsynth.envs import EpisodeClock
        self.db = NaiveDatabase(self.rt.seed)
        self.tk = Shop(self.db, EpisodeClock(self.rt.clock_start), random.Random(seed))
    def step(self, name, args):
        spec = self.rt.specs[name]
        for t in spec.writes:
            if t not in self.db.own: self.db.own[t] = copy.deepcopy(self.db.base[t])
        self.tk.clock.advance()
        try: out = {'output': self.rt._output(name, spec.method(self.tk, **args))['output']}
        except Exception as e: out = exception_result(name, e)
        for t in spec.writes:
            try: self.db.own[t] = validate_table(t, Shop.tables[t], self.db.own[t])
            except StateError as e: return {'error': {'type': 'internal_error', 'message': f'tool {name!r} left the state invalid: {e}'}}
        return out
    def state(self): return {t: self.db[t] for t in Shop.tables}

def seed_state(n: int, rng: random.Random) -> dict:
    items = {f'i{k:05d}': {'name': f'item {k}', 'qty': rng.randint(0, 5), 'price': rng.choice([1.0, 2.5, 9.99, 110.0, 0.1 + 0.2]),
                           'tags': ['x'] * (k % 2)} for k in range(n)}
    return {'items': items, 'notes': {f'N{k:05d}': {'item_id': f'i{k:05d}', 'text': 'seed'} for k in range(min(n, 5))}}

def random_call(rng: random.Random, ids: list[str]):
    k = rng.choice(ids + ['i99999', 'a0000', 'zzz'])
    return rng.choice([('total', {'min_qty': rng.randint(0, 3)}), ('restock', {'item_id': k, 'qty': rng.randint(0, 3)}),
                       ('tag_cheap', {'below': rng.choice([0.5, 3.0]), 'tag': rng.choice('ab')}),
                       ('add_item', {'item_id': k, 'price': rng.choice([1, 2.5, 110.0])}), ('remove', {'item_id': k}),
                       ('noop_scan', {'item_id': k}), ('break_row', {'item_id': k, 'qty': rng.choice([-1, 0, 4])}),
                       ('pop_last_note', {}), ('reprice_after_scan', {'item_id': k, 'price': rng.choice([2, 7.5])}),
                       ('drop_most_expensive', {'qty': rng.choice([-1, 3])})])

@pytest.mark.parametrize('rows,incremental,bulk_rows', [(40, 1000, 64), (40, 0, 0), (2500, 0, 64), (2500, 1000, 10**9)])
def test_random_calls_match_the_deep_copy_reference(rows, incremental, bulk_rows, monkeypatch):
    "`bulk_rows`: scans of tables this large copy all rows at once (0: every scan; 10**9: never, row by row)."
    monkeypatch.setattr(WriteView, 'bulk_rows', bulk_rows)
    rng = random.Random(rows + incremental)
    seed = seed_state(rows, rng)
    naive, rt = NaiveRuntime(seed), EnvRuntime(Shop, seed, incremental_hash_rows=incremental)
    seed_before = rt.seed_hashes(fresh=True)
    for episode in range(12):
        naive.open(); rt.open('a'); rt.open('other')
        ids = sorted(seed['items'])
        for _ in range(rng.randint(1, 25)):
            name, args = random_call(rng, ids)
            assert rt.step('a', name, args) == naive.step(name, args), (name, args)
            if rng.random() < 0.3: rt.step('other', *random_call(rng, ids))
            if rng.random() < 0.3:
                assert rt.table_hashes('a') == {t: table_hash(r) for t, r in naive.state().items()}
        assert rt.dump('a') == naive.state()
        assert rt.table_hashes('a') == rt.table_hashes('a', fresh=True) == {t: table_hash(r) for t, r in naive.state().items()}
        assert combine_hashes(rt.table_hashes('a')) == combine_hashes({t: table_hash(r) for t, r in naive.state().items()})
        rt.close('a'); rt.close('other')
    assert rt.seed_hashes(fresh=True) == seed_before == rt.seed_hashes()

def test_rows_read_but_not_changed_are_shared_again():
    rt = EnvRuntime(Shop, seed_state(30, random.Random(0)))
    rt.open('a')
    rt.step('a', 'noop_scan', {'item_id': 'i00003'})
    db = rt._get('a').toolkit.db
    assert db.changed['items'] == set() and all(db['items'][k] is rt.seed['items'][k] for k in rt.seed['items'])
    assert rt.table_hashes('a') == rt.seed_hashes()

def test_an_invalid_row_is_reported_again_until_fixed():
    rt = EnvRuntime(Shop, seed_state(10, random.Random(0)))
    rt.open('a')
    bad = rt.step('a', 'break_row', {'item_id': 'i00001', 'qty': -1})
    assert bad['error']['type'] == 'internal_error' and 'items/i00001/qty' in bad['error']['message']
    again = rt.step('a', 'restock', {'item_id': 'i00002', 'qty': 1})
    assert 'items/i00001/qty' in again['error']['message']
    assert rt.step('a', 'break_row', {'item_id': 'i00001', 'qty': 2}) == {'output': None}
    assert rt.step('a', 'restock', {'item_id': 'i00002', 'qty': 1})['output'] == rt.seed['items']['i00002']['qty'] + 2
