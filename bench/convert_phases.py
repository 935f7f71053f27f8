"""Each phase of `maxarpa convert --binary` timed, with its own peak RSS, in one process.

Why a script run in a child: the peak of each phase is the process's high-water mark reset
between phases (Linux `/proc/self/clear_refs` 5), which must not include the bench's own
arrays. Each line printed is `name<TAB>seconds<TAB>peak MiB<TAB>CPU seconds` (the CPU
time is the figure to read on a loaded machine; older trees print the first three).

A file in key order, as lmplz writes them, takes the command's streamed path
(`maxarpa.streamed`, issue 34), whose steps report themselves: `parse` (each order's values
parked in the scratch file as its section ends), `walks` (prefix rows and last words, then
the keys, parked), `contexts` (the useful-context tables), `orders` (from the highest order
down, its rounded bounds, its members written and hashed) and `contexts written` (digest and
tables). Any other file takes the in-memory path as `maxarpa.load` and `write_binary` run it,
phase by phase: `parse`, `table` (not for a key-ordered file), `bounds` (rounded to float32,
as `load(rounded_bounds=True)`), `config`, `contexts` and `write`. `bench.bench_maxarpa
--convert --baseline-tree DIR` runs DIR's own copy of this script for the same table of the
other code.
"""

PHASES_SCRIPT = r"""
import sys, time
import numpy as np
from maxarpa.arpa import read_arpa
from maxarpa.binary_write import write_binary
from maxarpa.bound import compute_bounds
from maxarpa.cli import return_freed_memory
from maxarpa.config import DEFAULT_CONFIG
from maxarpa.contexts import attach, context_counts
from maxarpa.keyed import read_sorted_arpa
from maxarpa.model import Model
from maxarpa.rounded import compute_rounded_bounds
from maxarpa.specials import adds_words, apply_config
from maxarpa.table import build_trie

def peak_mib():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(status["VmHWM"].split()[0]) / 1024

def reset():
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")

return_freed_memory()
last = [time.perf_counter(), time.process_time()]
def phase(name):
    now, cpu = time.perf_counter(), time.process_time()
    print(f"{name}\t{now - last[0]:.3f}\t{peak_mib():.0f}\t{cpu - last[1]:.3f}", flush=True)
    reset()
    last[:] = [time.perf_counter(), time.process_time()]

path, out = sys.argv[1], sys.argv[2]
reset()
last[:] = [time.perf_counter(), time.process_time()]
from maxarpa.streamed import convert_streamed
if convert_streamed(path, out, DEFAULT_CONFIG, phase=phase):
    sys.exit(0)
reset()
last[:] = [time.perf_counter(), time.process_time()]
keyed = read_sorted_arpa(path)  # as maxarpa.load: keys straight from the parser
if keyed is None:
    data = read_arpa(path)
    phase("parse")
    vocab, trie = data.vocab, build_trie(data, path)
    del data
    phase("table")
else:
    vocab, trie = keyed
    phase("parse")
model = Model(vocab, trie, path)
if adds_words(model, DEFAULT_CONFIG):  # as maxarpa.load(rounded_bounds=True)
    compute_bounds(trie, model.eos_id)
else:
    compute_rounded_bounds(trie, model.eos_id)
phase("bounds")
model = apply_config(model, DEFAULT_CONFIG)
phase("config")
counts, keys = context_counts(model)
phase("contexts")
attach(model, np.repeat(np.arange(len(counts), dtype=np.int32), counts), keys)
write_binary(model, out, bounds_verified=True)
phase("write")
"""
