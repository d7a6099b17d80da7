__version__ = "0.0.1"

# jsonschema imports the optional `rfc3987_syntax` (installed here by Jupyter) at import time to check the "iri"
# formats, building its grammars: about 1.7 s on every process start (each CLI call, Slurm job and worker). envsynth
# validates tool schemas without format checks, so it is kept out unless something imported it already.
import sys as _sys
_sys.modules.setdefault('rfc3987_syntax', None)
del _sys
