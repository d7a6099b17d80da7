"""envsynth.corpora's BFCL loader on the real wheel: function docs read out of the zip, never imported, all flagged."""
import subprocess, sys
import pytest
from envsynth.corpora import corpus_from_bfcl, download_bfcl_wheel, filter_corpus

@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    try: return download_bfcl_wheel(tmp_path_factory.mktemp('wheels'))
    except subprocess.CalledProcessError as e: pytest.skip(f'PyPI not reachable for the bfcl-eval wheel: {e}')

def test_bfcl_wheel_corpus(wheel):
    corpus = corpus_from_bfcl(wheel)
    assert len(corpus) > 1500 and all(t.benchmark == 'bfcl' and t.source == 'bfcl' for t in corpus)
    assert corpus.training_tools() == []                                    # can never reach training data unnoticed
    assert 'bfcl_eval' not in sys.modules                                   # read as a zip, not imported
    servers = corpus.servers()
    assert any('multi_turn' in s or 'gorilla_file_system' in s for s in servers), sorted(servers)[:10]
    kept = filter_corpus(corpus)
    assert all(t.benchmark == 'bfcl' for t in kept) and sum(kept.dropped.values()) > 0
