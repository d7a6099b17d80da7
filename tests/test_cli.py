"""The `envsynth` console script as a user runs it: every command registered through the `envsynth.commands`
entry points is listed (fast: no command module, no torch imported), nested names dispatch, exit statuses
and one-line errors follow one convention, and a package outside envsynth can add a command."""
import os, subprocess, sys, textwrap, time
from pathlib import Path
import pytest

ENVSYNTH = str(Path(sys.executable).parent / 'envsynth')
COMMANDS = ['serve-policy', 'serve-mcp', 'eval bfcl', 'eval tau2', 'eval venvs', 'train sft', 'slurm', 'agentscaler run']

def envsynth(*argv, env=None, timeout=120):
    return subprocess.run([ENVSYNTH, *argv], capture_output=True, text=True, timeout=timeout, env=env)

def test_help_lists_every_command_with_one_line_each():
    t0 = time.monotonic(); res = envsynth('--help'); elapsed = time.monotonic() - t0
    assert res.returncode == 0, res.stderr
    lines = {line.split('  ')[1].strip(): line for line in res.stdout.splitlines() if line.startswith('  ')}
    for name in COMMANDS:
        assert name in lines and len(lines[name].split(name, 1)[1].strip()) > 20, (name, res.stdout)
    assert elapsed < 10, f'`envsynth --help` took {elapsed:.1f} s'

def test_listing_imports_no_command_module_and_no_torch():
    probe = ('import sys; from envsynth.cli import main; assert main(["--help"]) == 0; '
             'print(sorted(m for m in sys.modules if m.startswith(("envsynth", "torch", "transformers"))))')
    res = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True, timeout=120)
    loaded = eval(res.stdout.strip().splitlines()[-1])
    import envsynth
    packages = {'envsynth'} | {f'envsynth.{p.name}' for p in Path(envsynth.__file__).parent.iterdir() if (p / '__init__.py').exists()}
    assert 'envsynth.cli' in loaded and not [m for m in loaded if m not in packages | {'envsynth.cli'}], loaded   # package __init__s only

def test_no_command_or_an_unknown_one_lists_the_known_ones():
    res = envsynth()
    assert res.returncode == 2 and 'eval bfcl' in res.stderr and res.stdout == ''
    res = envsynth('evaluate', '--run-dir', 'x')
    assert res.returncode == 2 and res.stderr.startswith("envsynth: error: unknown command 'evaluate'; the commands are: agentscaler run,")
    res = envsynth('eval', 'bfc')
    assert res.returncode == 2 and "the eval commands are: eval bfcl, eval tau2, eval venvs" in res.stderr
    res = envsynth('eval')
    assert res.returncode == 2 and "'eval' needs a subcommand" in res.stderr

def test_group_and_command_help():
    res = envsynth('eval', '--help')
    assert res.returncode == 0 and 'usage: envsynth eval <command>' in res.stdout and 'eval venvs' in res.stdout
    for argv, flag in [(['slurm', '--help'], '{submit,status}'), (['slurm', 'submit', '--help'], '--cpu-smoke'),
                       (['eval', 'tau2', '--help'], '--user-base-url'), (['serve-mcp', '--help'], '--sandbox-workers'),
                       (['serve-policy', '--help'], '--policy'), (['agentscaler', 'run', '--help'], '--shard'),
                       (['eval', 'venvs', '--help'], 'usage: envsynth eval venvs')]:
        res = envsynth(*argv)
        assert res.returncode == 0 and flag in res.stdout, (argv, res.stdout, res.stderr)

def test_version_and_python_dash_m():
    import envsynth as pkg
    assert envsynth('--version').stdout.strip() == f'envsynth {pkg.__version__}'
    res = subprocess.run([sys.executable, '-m', 'envsynth.cli', '--help'], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and 'serve-policy' in res.stdout

def test_failures_are_one_line_errors_with_a_non_zero_status(tmp_path):
    res = envsynth('eval', 'bfcl', '--run-dir', str(tmp_path))                   # SystemExit('...') from the command
    assert (res.returncode, res.stderr.strip()) == (2, 'envsynth eval bfcl: error: give exactly one of --base-url and --oracle')
    res = envsynth('agentscaler', 'run', '--run-dir', str(tmp_path), '--set', 'attempts')      # the shared recipe parser
    assert (res.returncode, res.stderr.strip()) == (2, "envsynth agentscaler run: error: --set 'attempts': expected FIELD=VALUE")
    res = envsynth('agentscaler', 'run', '--run-dir', str(tmp_path), '--stages', 'tasks,bogus')
    assert res.returncode == 2 and res.stderr.strip().startswith('envsynth agentscaler run: error: unknown stage bogus')
    res = envsynth('slurm', 'status', str(tmp_path))                            # the command prints its own error
    assert res.returncode == 2 and res.stderr.startswith('envsynth slurm: error: ')
    res = envsynth('serve-mcp', str(tmp_path / 'no_such_env'), '--trusted')
    assert res.returncode == 2 and res.stderr.startswith('envsynth serve-mcp: error: ')
    res = envsynth('slurm', 'submit', '--run-dir', str(tmp_path))                # argparse: usage and status 2
    assert res.returncode == 2 and 'the following arguments are required: --model' in res.stderr

PLUGIN = textwrap.dedent('''
    import json, sys
    def hello(argv):
        """Say hello (a command registered by a package outside envsynth).
        `envsynth demo hello NAME`"""
        if argv == ['--help']: print('usage: envsynth demo hello NAME'); return 0
        if len(argv) != 1: raise SystemExit(f'give one NAME, not {len(argv)}')
        if argv[0] == 'crash': raise RuntimeError('a bug in the command')
        if argv[0] == 'three': return 3
        print(f'hello {argv[0]}'); return [{'metric': 'greetings', 'value': 1}]    # result rows: a success
''')

@pytest.fixture
def plugin(tmp_path):
    "A distribution on PYTHONPATH (a .dist-info folder) that registers `envsynth demo hello`."
    (tmp_path / 'demo_plugin.py').write_text(PLUGIN)
    info = tmp_path / 'demo_plugin-0.1.dist-info'; info.mkdir()
    (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: demo-plugin\nVersion: 0.1\n')
    (info / 'entry_points.txt').write_text('[envsynth.commands]\ndemo.hello = demo_plugin:hello\n')
    return {**os.environ, 'PYTHONPATH': f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}, info

def test_a_package_outside_envsynth_adds_a_command(plugin):
    env, _ = plugin
    res = envsynth('--help', env=env)
    assert '  demo hello       Say hello (a command registered by a package outside envsynth).' in res.stdout, res.stdout
    assert (envsynth('demo', 'hello', 'Ada', env=env).returncode, envsynth('demo', 'hello', 'Ada', env=env).stdout) == (0, 'hello Ada\n')
    res = envsynth('demo', 'hello', env=env)
    assert (res.returncode, res.stderr) == (2, 'envsynth demo hello: error: give one NAME, not 0\n')
    assert envsynth('demo', 'hello', 'three', env=env).returncode == 3
    res = envsynth('demo', 'hello', 'crash', env=env)
    assert res.returncode == 1 and 'Traceback' in res.stderr
    assert res.stderr.strip().splitlines()[-1] == 'envsynth demo hello: error: RuntimeError: a bug in the command'

def test_a_command_registered_twice_is_an_error(plugin):
    env, info = plugin
    (info / 'entry_points.txt').write_text('[envsynth.commands]\nslurm = demo_plugin:hello\n')
    res = envsynth('--help', env=env)
    assert res.returncode == 2 and "command 'slurm' is registered twice" in res.stderr
